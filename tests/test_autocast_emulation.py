"""The autocast emulation against PyTorch's real autocast, op for op (CPU autocast runs here).

With `CPU_POLICY` the emulation on ``meta`` tensors must produce the op stream a real CPU autocast
step produces on CPU tensors: the same aten ops, in the same order, with the same input and output
dtypes, forward and backward, casts included. `CUDA_POLICY` is the same mechanism with CUDA's lists.
"""
from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from prenet_callbacks.projection.ops.autocast import CPU_POLICY, CUDA_POLICY, AutocastEmulation
from prenet_callbacks.projection.ops.capture import capture_step
from predictor_models.aten_ops import is_free_op


class _Stream(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple] = []
        self.forward_ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not is_free_op(func):
            ins = tuple(str(a.dtype) for a in args if isinstance(a, torch.Tensor))
            outs = tuple(str(o.dtype) for o in (out if isinstance(out, (tuple, list)) else [out])
                         if isinstance(o, torch.Tensor))
            self.ops.append((func.__name__, ins, outs))
        return out


class _Residual(nn.Module):
    """Embedding (fp32 stream), linears (autocast), an fp32 residual add that promotes, a norm."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 16)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 5)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        x = x + self.fc2(F.gelu(self.fc1(x)))
        x = x + self.fc2(torch.relu(self.fc1(self.norm(x))))   # fc1/fc2 reused: weights cast once
        return self.head(x).mean(1)


class _Conv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(F.adaptive_avg_pool2d(torch.relu(self.bn(self.conv(x))), 1).flatten(1))


def _real_stream(model: nn.Module, inputs: torch.Tensor, target: torch.Tensor, dtype: torch.dtype) -> _Stream:
    stream = _Stream()
    with stream:
        with torch.autocast("cpu", dtype=dtype):
            loss = F.cross_entropy(model(inputs), target)
        stream.forward_ops = len(stream.ops)
        loss.backward()
    return stream


def _emulated_stream(model: nn.Module, inputs: torch.Tensor, target: torch.Tensor, dtype: torch.dtype) -> _Stream:
    meta = {k: torch.empty_like(v, device="meta").requires_grad_(v.requires_grad)
            for k, v in {**dict(model.named_parameters()), **dict(model.named_buffers())}.items()}
    inputs, target = inputs.to("meta"), target.to("meta")
    stream = _Stream()
    with stream:
        with AutocastEmulation(dtype, CPU_POLICY):
            out = torch.func.functional_call(model, meta, (inputs,))
            loss = F.cross_entropy(out, target)
        stream.forward_ops = len(stream.ops)
        loss.backward()
    return stream


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", ["residual", "conv"])
def test_emulation_reproduces_a_real_cpu_autocast_step(case: str, dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    if case == "residual":
        model, inputs, target = _Residual(), torch.randint(0, 50, (4, 6)), torch.randint(0, 5, (4,))
    else:
        model, inputs, target = _Conv(), torch.randn(2, 3, 8, 8), torch.randint(0, 4, (2,))
    real = _real_stream(model, inputs, target, dtype)
    model.zero_grad(set_to_none=True)
    emulated = _emulated_stream(model, inputs, target, dtype)
    half = str(dtype)
    assert any(half in ins for _, ins, _ in real.ops), "the real step ran no half-precision op"
    # the forward in order; the backward as a multiset (the autograd engine may order independent
    # gradient accumulations differently when the graph's nodes were created in another order)
    assert emulated.ops[:emulated.forward_ops] == real.ops[:real.forward_ops]
    assert Counter(emulated.ops[emulated.forward_ops:]) == Counter(real.ops[real.forward_ops:])


def test_cuda_policy_keeps_norms_softmax_and_the_loss_in_fp32() -> None:
    """What differs from the CPU lists: layer norm, softmax, pow run in fp32 under CUDA autocast."""
    lin, norm = nn.Linear(8, 8, device="meta"), nn.LayerNorm(8, device="meta")
    x = torch.empty(4, 8, device="meta")
    with AutocastEmulation(torch.bfloat16, CUDA_POLICY) as mode:
        h = lin(x)
        assert h.dtype == torch.bfloat16
        assert norm(h).dtype == torch.float32
        assert torch.softmax(h, -1).dtype == torch.float32      # dtype=float32 passed, no cast op
        assert (h ** 3).dtype == torch.float32
        assert (h + x).dtype == torch.float32                   # promotion, not autocast
        assert F.gelu(h).dtype == torch.bfloat16                 # not listed: the input's dtype
        lin(x), lin(x)
    # x once per linear call (an activation: 3), the weight and bias once for the region (leaf cache: 2),
    # h to fp32 for the norm and for pow (2)
    assert mode.casts == 3 + 2 + 2


def test_mixed_capture_counts_weight_casts_and_the_half_ops() -> None:
    with torch.device("meta"):
        model = _Residual()
    ids = torch.zeros(4, 6, dtype=torch.long, device="meta")
    plain = capture_step(model, ids)
    mixed = capture_step(model, ids, autocast="bfloat16")
    assert mixed.autocast == "bfloat16" and plain.autocast is None
    names = [c.name for c in mixed.sequence["fwd"] if hasattr(c, "name")]
    assert names.count("aten::_to_copy") >= 6           # fc1, fc2, head weights and biases at least
    assert "aten::_to_copy" not in [c.name for c in plain.sequence["fwd"] if hasattr(c, "name")]
    with pytest.raises(ValueError, match="autocast must be"):
        capture_step(model, ids, autocast="fp8")
