"""SDPA is projected as the kernel each target runs (flash / memory-efficient / math), not as the
fallback that ran on meta or on the CPU."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from predictor_models.hardware import lookup_hardware
from prenet_callbacks import estimate
from prenet_callbacks.projection.ops.attention import SdpaShape, math_ops, saved_bytes, sdpa_backend
from prenet_callbacks.projection.ops.capture import capture_step
from tests.projection_fixtures import ScaledBound


class _Attention(nn.Module):
    def __init__(self, d: int = 256, heads: int = 4, layers: int = 2, dropout: float = 0.1, mask: bool = False):
        super().__init__()
        self.heads, self.dropout, self.mask = heads, dropout, mask
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(layers))
        self.out = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))

    def forward(self, x):
        b, s, d = x.shape
        for qkv, out in zip(self.qkv, self.out):
            q, k, v = qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            mask = torch.zeros(s, s, device=x.device, dtype=x.dtype) if self.mask else None
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.dropout,
                                               is_causal=not self.mask)
            x = x + out(y.transpose(1, 2).reshape(b, s, d))
        return x


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_capture_records_one_fused_op_per_call_and_no_fallback(device):
    with torch.device(device):
        model = _Attention(d=32, heads=2)
        x = torch.randn(2, 16, 32)
    capture = capture_step(model, x)
    names = [getattr(item, "name", "") for phase in ("fwd", "bwd") for item in capture.sequence[phase]]
    assert names.count("aten::_flash_attention_forward") == 2 and names.count("aten::_flash_attention_backward") == 2
    assert not any("softmax" in n or n == "aten::bmm" for n in names)
    if device == "cpu":
        assert model.qkv[0].weight.grad is None   # the model is left as it was


@pytest.mark.parametrize("gpu,dtype,mask,expected", [
    ("A100-SXM4-80GB", "bfloat16", False, "flash"),
    ("A100-SXM4-80GB", "bfloat16", True, "efficient"),
    ("A100-SXM4-80GB", "float32", False, "efficient"),
    ("H100-SXM5", "float16", False, "flash"),
    ("T4", "float16", False, "efficient"),
    ("T4", "bfloat16", False, "math"),
    ("V100-SXM2-16GB", "bfloat16", False, "math"),
    ("MI300X", "bfloat16", False, "flash"),
    ("MI100", "bfloat16", False, "math"),
])
def test_backend_per_target(gpu, dtype, mask, expected):
    shape = SdpaShape(8, 12, 1024, 1024, 64, 64, 12, causal=True, mask=mask)
    assert sdpa_backend(lookup_hardware(gpu), dtype, shape) == expected


def test_math_path_materialises_scores_and_keeps_them_for_backward():
    shape = SdpaShape(8, 12, 1024, 1024, 64, 64, 12, causal=True, dropout=0.1)
    fwd = math_ops(shape, "bfloat16", backward=False)
    assert sum(1 for spec, _ in fwd if spec.op_class == "gemm") == 2
    assert any(spec.op_class == "norm" for spec, _ in fwd)
    scores = 8 * 12 * 1024 * 1024
    assert saved_bytes(shape, "bfloat16", "math") == pytest.approx(scores * 2 + scores + scores * 2)
    assert saved_bytes(shape, "bfloat16", "flash") == pytest.approx(8 * 12 * 1024 * 4)


def test_estimate_assumes_flash_on_a100_and_math_on_t4_bf16_with_more_memory():
    with torch.device("meta"):
        model = _Attention(d=512, heads=8, layers=4)
    est = estimate(model, torch.empty(8, 1024, 512, device="meta"), targets=["A100", "T4"], precision="bf16-mixed",
                   predictor=ScaledBound())
    a100, t4 = est.row("A100"), est.row("T4")
    assert a100["assumed"]["attention"] == "flash" and t4["assumed"]["attention"] == "math"
    assert t4["memory_gib"] > a100["memory_gib"]          # the math path keeps score matrices
    fp16 = estimate(model, torch.empty(8, 1024, 512, device="meta"), targets=["T4"], precision="16-mixed",
                    predictor=ScaledBound()).row("T4")
    assert fp16["assumed"]["attention"] == "efficient" and fp16["step_s"] < t4["step_s"]


def test_an_attention_mask_moves_the_a100_to_the_memory_efficient_kernel():
    with torch.device("meta"):
        model = _Attention(d=512, heads=8, layers=4, mask=True)
    x = torch.empty(8, 2048, 512, device="meta")
    masked = estimate(model, x, targets=["A100"], precision="bf16-mixed", predictor=ScaledBound()).row("A100")
    assert masked["assumed"]["attention"] == "efficient"
