"""`estimate()` on meta models: no real memory, precision, data-parallel, memory fit, bad input."""
from __future__ import annotations


import pytest
import torch
from torch import nn

from predictor_models.hardware import UnknownHardwareError
from prenet_callbacks import estimate
from prenet_callbacks.projection.ops.capture import CaptureError
from tests.projection_fixtures import ScaledBound


def _mlp(width: int = 1024) -> nn.Module:
    return nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))


class _Conv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.body(x), 1))


class _DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        return y[y > 0].sum() + y.sum()   # boolean mask: output shape depends on the values


@pytest.fixture(scope="module")
def predictor():
    return ScaledBound()


def test_meta_model_needs_no_real_memory(predictor):
    # how fast it runs is benchmarks/projection_speed.py's job, not a test's: here, that nothing is materialised
    with torch.device("meta"):
        model = _Conv()
    big = torch.empty(4096, 3, 224, 224, device="meta")   # 2.5 GB if it were real
    est = estimate(model, big, targets=["A100", "H100-SXM5"], predictor=predictor, steps=100)
    assert all(p.device.type == "meta" and p.grad is None for p in model.parameters())
    assert 0 < est.step_seconds("H100-SXM5") < est.step_seconds("A100")
    assert est.total_seconds("H100-SXM5") == pytest.approx(100 * est.step_seconds("H100-SXM5"), rel=1e-3)


def test_real_model_with_meta_input_is_left_untouched(predictor):
    model = _mlp(256)
    before = model[0].weight.detach().clone()
    est = estimate(model, torch.empty(64, 256, device="meta"), targets=["L4"], predictor=predictor)
    assert est.step_seconds("L4") > 0 and model[0].weight.device.type == "cpu" and model[0].weight.grad is None
    assert torch.equal(model[0].weight, before)


def test_precision_speeds_up_on_tensor_cores(predictor):
    with torch.device("meta"):
        model = _mlp(2048)
    x = torch.empty(4096, 2048, device="meta")
    fp32 = estimate(model, x, targets=["A100"], precision="32-true", float32_matmul_precision="highest",
                    predictor=predictor).step_seconds("A100")
    tf32 = estimate(model, x, targets=["A100"], precision="32-true", float32_matmul_precision="high",
                    predictor=predictor).step_seconds("A100")
    bf16 = estimate(model, x, targets=["A100"], precision="bf16-mixed", predictor=predictor).step_seconds("A100")
    assert bf16 < tf32 < fp32


def test_step_seconds_of_a_target_not_in_the_list_and_bf16_note(predictor):
    with torch.device("meta"):
        model = _mlp(512)
    est = estimate(model, torch.empty(128, 512, device="meta"), targets=["H100"], precision="bf16-mixed",
                   predictor=predictor)
    assert est.step_seconds("V100-SXM2-16GB") > est.step_seconds("H100")
    assert "BF16" in est.row("V100-SXM2-16GB")["precision_note"]
    data = est.to_dict()
    assert data["precision"] == "bf16-mixed" and data["targets"][0]["name"] == "H100-SXM5"
    assert "H100-SXM5" in est.table()


def test_multi_gpu_target_and_memory_fit(predictor):
    with torch.device("meta"):
        model = _mlp(4096)
    est = estimate(model, torch.empty(131072, 4096, device="meta"), targets=["T4", "8x A100-SXM4-80GB"],
                   predictor=predictor, steps=1000)
    t4, node = est.row("T4"), est.row("8x A100-SXM4-80GB")
    assert t4["fits_memory"] is False and t4["max_batch"] < 131072
    assert node["devices"] == 8 and node["comm_s"] > 0 and node["steps"] == pytest.approx(125)


def test_unknown_target_fails_before_capture():
    with pytest.raises(UnknownHardwareError, match="closest"):
        estimate(_mlp(8), torch.empty(2, 8, device="meta"), targets=["H1OO0"])


def test_data_dependent_model_gets_a_clear_message(predictor):
    with pytest.raises(CaptureError, match="meta.*real"):
        estimate(_DataDependent(), torch.empty(4, 8, device="meta"), targets=["L4"], predictor=predictor)
    # ... and the suggested fallback works: a real model and a small real input
    est = estimate(_DataDependent(), torch.randn(4, 8), targets=["L4"], predictor=predictor)
    assert est.step_seconds("L4") > 0


def test_bad_arguments():
    with pytest.raises(ValueError, match="precision"):
        estimate(_mlp(8), torch.empty(2, 8, device="meta"), targets=["L4"], precision="fp12")
    with pytest.raises(ValueError, match="optimizer"):
        estimate(_mlp(8), torch.empty(2, 8, device="meta"), targets=["L4"], optimizer="lion9")


def test_short_precision_names_loss_by_sum_and_fp64_are_stated_and_priced():
    from torch import nn as _nn

    with torch.device("meta"):   # shapes are all estimate needs: nothing computes
        model = _nn.Sequential(_nn.Linear(2048, 2048), _nn.ReLU(), _nn.Linear(2048, 2048))
        x = torch.randn(4096, 2048)
    fp32 = estimate(model, x, targets=["A100"], precision="32-true", float32_matmul_precision="highest")
    short = estimate(model, x, targets=["A100"], precision="bf16")
    fp64 = estimate(model, x, targets=["A100"], precision="64")
    assert any("'bf16' read as 'bf16-mixed'" in n for n in short.notes)
    assert not any("read as" in n for n in fp32.notes)
    assert any("sum of the output" in n for n in fp32.notes)
    with_loss = estimate(model, x, targets=["A100"], loss_fn=lambda out: out.pow(2).mean())
    assert not any("sum of the output" in n for n in with_loss.notes)
    # fp64 moves twice the bytes at the FP64 rate: never cheaper than fp32
    assert fp64.workload.precision.name == "64-true"
    assert fp64.step_seconds("A100") > 1.2 * fp32.step_seconds("A100")
    assert {spec.dtype for spec, _ in fp64.workload.ops()} == {"float64"}
