"""FP8 training projections: torchao float8 tensorwise op stream, FP8 GEMM rates, refusal on non-FP8 GPUs."""
from __future__ import annotations

import json
import textwrap
from collections import Counter

import numpy as np
import pytest
import torch
from torch import nn

from predictor_models.hardware import lookup_hardware
from predictor_models.op_spec import OpSpec
from prenet_callbacks import estimate
from prenet_callbacks.cli import main
from prenet_callbacks.projection.ops.capture import capture_step
from prenet_callbacks.projection.ops.fp8 import backward_ops, forward_ops
from prenet_callbacks.projection.pricing.fp8_rates import rate_table, reference_device, speedups
from prenet_callbacks.projection.ops.precision import parse_precision
from tests.projection_fixtures import importable_models


class Mlp(nn.Module):
    """GEMM-heavy: three wide Linear layers."""

    def __init__(self, width: int = 2048, layers: int = 3) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def _meta_mlp(**kwargs) -> nn.Module:
    with torch.device("meta"):
        return Mlp(**kwargs)


def _names(items) -> Counter:
    return Counter(getattr(item, "name", None) or getattr(item, "op", "") for item in items)


def test_fp8_precision_is_only_for_estimates():
    fp8 = parse_precision("fp8", allow_fp8=True)
    assert fp8.fp8 and fp8.half == "bfloat16" and fp8.mixed and fp8.param_bytes == 4
    with pytest.raises(ValueError, match="unknown precision"):
        parse_precision("fp8")   # a measured run's precision is one of Lightning's names


def test_casts_and_three_fp8_gemms_per_linear():
    model = _meta_mlp(width=256, layers=3)
    x = torch.empty(512, 256, device="meta")
    capture = capture_step(model, x, autocast="bfloat16", fp8=True)
    assert capture.fp8_linears == 3
    fwd = [s for s in capture.sequence["fwd"] if isinstance(s, OpSpec)]
    bwd = [s for s in capture.sequence["bwd"] if isinstance(s, OpSpec)]
    per_fwd, per_bwd = _names(forward_ops(512, 256, 256)), _names(backward_ops(512, 256, 256))
    assert _names(fwd) == Counter({k: 3 * v for k, v in per_fwd.items()})
    assert _names(bwd) == Counter({k: 3 * v for k, v in per_bwd.items()})
    gemms = [s for s in fwd + bwd if s.name == "aten::_scaled_mm"]
    assert len(gemms) == 9 and all(s.dtype == "float8" for s in gemms)   # forward, grad_input, grad_weight
    assert sum(1 for s in fwd if s.name == "aten::abs") == 6             # amax of input and weight
    assert sum(1 for s in bwd if s.name == "aten::abs") == 3             # amax of grad_output
    assert sum(1 for s in bwd if s.name == "torchao::float8_transpose_copy") == 9
    # no bf16 GEMM is left for the Linears, and no bf16 copy of the weights is made
    recorded = capture.sequence["fwd"] + capture.sequence["bwd"]
    assert not any(getattr(c, "op", "").endswith(("mm", "addmm")) for c in recorded if not isinstance(c, OpSpec))


def test_compiled_casts_are_fused():
    eager, fused = forward_ops(64, 64, 64), forward_ops(64, 64, 64, fused=True)
    assert len(fused) == 7 and len(eager) > 2 * len(fused)
    assert sum(s.bytes_moved for s in fused) < sum(s.bytes_moved for s in eager) / 3


def test_linears_not_divisible_by_16_stay_bf16():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(256, 256), nn.Linear(256, 10))
    est = estimate(model, torch.empty(64, 256, device="meta"), targets=["H100"], precision="fp8")
    assert any("10x256" in note for note in est.notes)


def test_fp8_faster_than_bf16_on_h100_but_not_twice():
    model, x = _meta_mlp(width=4096, layers=4), torch.empty(16384, 4096, device="meta")
    kwargs = dict(targets=["H100"], optimizer="sgd", compile="default")
    bf16 = estimate(model, x, precision="bf16-mixed", **kwargs).row("H100")
    fp8 = estimate(model, x, precision="fp8", **kwargs).row("H100")
    assert fp8["precision"] == "fp8" and "FP8 training" in fp8["precision_note"]
    assert "OpenXLA" in fp8["precision_note"]
    speedup = bf16["step_s"] / fp8["step_s"]
    assert 1.1 < speedup < 2.0


def test_fp8_refused_on_a100_with_the_fix():
    model = _meta_mlp(width=256)
    with pytest.raises(ValueError, match=r"A100.*FP8 needs a Hopper/Ada/Blackwell/MI300 GPU; choose e\.g\. H100 or "
                                         r"use bf16-mixed"):
        estimate(model, torch.empty(64, 256, device="meta"), targets=["H100", "A100"], precision="fp8")
    est = estimate(model, torch.empty(64, 256, device="meta"), targets=None, precision="fp8")
    assert {r["name"] for r in est.rows} == {"L4", "H100-SXM5"}
    assert any("left out" in note and "T4" in note for note in est.notes)
    with pytest.raises(ValueError, match="FP8 needs"):
        est.row("V100")


def test_rate_table_and_fallback():
    table = rate_table()
    assert set(table["tflops"]) == {"H100-SXM5", "B200"} and "Apache" in table["source"]["licence"]
    big = OpSpec("gemm", "float8", 2 * 4096**3, 2 * 4096**2, 2 * 4096**2, {"b": 1, "m": 4096, "n": 4096, "k": 4096})
    small = OpSpec("gemm", "float8", 2 * 256**3, 2 * 256**2, 2 * 256**2, {"b": 1, "m": 256, "n": 256, "k": 256})
    h100 = lookup_hardware("H100")
    r = speedups([big, small], h100)
    assert r[0] == pytest.approx(2.0, rel=0.01)   # capped at the FP8/BF16 peak ratio
    assert r[1] < 1.0                              # a tiny GEMM gains nothing from fp8
    l40s = lookup_hardware("L40S")
    assert reference_device(l40s) == "H100-SXM5" and reference_device(lookup_hardware("B200")) == "B200"
    assert np.all(speedups([big, small], l40s) <= l40s.fp8_tflops / l40s.bf16_tflops + 1e-9)


def test_cli_accepts_precision_fp8(tmp_path, monkeypatch, capsys):
    models = importable_models(tmp_path, monkeypatch, textwrap.dedent("""
        from torch import nn
        def mlp():
            return nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 512))
    """), "fp8_cli_models_for_test")
    assert main(["estimate", f"{models}:mlp", "-i", "1024,512", "-t", "H100", "--precision", "fp8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["precision"] == "fp8" and data["targets"][0]["precision"] == "fp8"
    assert main(["estimate", f"{models}:mlp", "-i", "1024,512", "-t", "A100", "--precision", "fp8"]) == 2
    assert "FP8 needs" in capsys.readouterr().err



def test_a_library_wrapper_of_f_linear_does_not_hide_the_linears(monkeypatch):
    """DeepSpeed's ZeRO-3 init swaps F.linear for its own wrapper; the FP8 capture still sees each Linear."""
    import torch.nn.functional as F

    def wrapper(input, weight, bias=None):   # noqa: A002 - F.linear's names
        out = input.matmul(weight.t())
        return out + bias if bias is not None else out

    monkeypatch.setattr(F, "linear", wrapper)
    capture = capture_step(_meta_mlp(width=256, layers=2), torch.empty(64, 256, device="meta"), autocast="bfloat16",
                           fp8=True)
    assert capture.fp8_linears == 2 and F.linear is wrapper   # restored after the capture
