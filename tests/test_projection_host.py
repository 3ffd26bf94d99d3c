"""The eager host model: overlap of kernel issue with the GPU, host-bound rows and what would help,
compile / CUDA graphs as options, and a CPU run's own Python time carried to a GPU."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from prenet_callbacks import estimate
from prenet_callbacks.projection import project_report
from prenet_callbacks.projection.pricing.host import (
    ExecutionOptions,
    calibrate_host_scale,
    measure_host_costs,
    simulate,
    simulate_band,
)
from tests.projection_fixtures import ScaledBound, make_report


def test_simulate_is_the_slower_side_and_order_matters():
    kernels = np.array([100.0, 1.0])
    tiny_then_big = simulate(np.array([1e-3, 1e-5]), np.array([[1e-4], [1e-3]]), kernels)[0]
    big_then_tiny = simulate(np.array([1e-5, 1e-3]), np.array([[1e-3], [1e-4]]), kernels[::-1])[0]
    # tiny kernels first hold the big one back (1 ms + 1 ms); a big kernel first hides their issue (~1.1 ms)
    assert tiny_then_big == pytest.approx(2e-3, rel=0.05)
    assert big_then_tiny == pytest.approx(1.1e-3, rel=0.1)
    host_bound = simulate(np.full(10, 1e-3), np.full((10, 1), 1e-6), np.full(10, 10.0))[0]
    assert host_bound == pytest.approx(10e-3, rel=0.01)


def test_a_band_simulated_at_once_is_each_edge_simulated_alone():
    rng = np.random.default_rng(0)
    units, targets = 40, 5
    host = rng.uniform(1e-6, 1e-4, (units, targets))
    device = rng.uniform(1e-7, 3e-4, (units, targets)) * (rng.random((units, targets)) < 0.8)
    kernels = rng.integers(0, 20, (units, targets)).astype(float)
    host_band = np.array([1.0, 0.8, 1.25])
    device_band = rng.uniform(0.5, 1.5, (targets, 3))
    at_once = simulate_band(host, device, kernels, host_band, device_band)
    for e, a in enumerate(host_band):
        alone = simulate(host * a, device * device_band[:, e], kernels)
        np.testing.assert_allclose(at_once[:, e], alone, rtol=1e-12)
    # unit factors: the as-is step exactly, and a unit whose kernels are issued late shows in it
    np.testing.assert_array_equal(simulate_band(host, device, kernels, np.ones(1), np.ones((targets, 1)))[:, 0],
                                  simulate(host, device, kernels))
    assert simulate_band(np.zeros((0, 2)), np.zeros((0, 2)), np.zeros(0), host_band, np.ones((2, 3))).shape == (2, 3)


def test_calibration_reproduces_the_measured_step():
    host, device, kernels = np.full(20, 2e-4), np.full(20, 3e-4), np.full(20, 5.0)
    target = float(simulate(host * 2.5, device[:, None], kernels)[0])
    scale = calibrate_host_scale(host, device, kernels, target)
    assert float(simulate(host * scale, device[:, None], kernels)[0]) == pytest.approx(target, rel=1e-3)
    assert calibrate_host_scale(host, device, kernels, float(device.sum()) * 0.5) == 1.0   # GPU-bound


def _small_mlp():
    with torch.device("meta"):
        return nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.ReLU()) for _ in range(40)])


def test_small_batch_on_a_fast_gpu_is_host_bound_and_says_what_helps():
    est = estimate(_small_mlp(), torch.empty(4, 64, device="meta"), targets=["H100"], predictor=ScaledBound())
    row = est.row("H100")
    assert row["host_bound"] and row["phases_s"]["host"] > 0.5 * row["step_s"]
    note = next(n for n in row["notes"] if n.startswith("host-bound"))
    assert "CUDA graphs" in note and "larger per-device batch" in note and "more slowly than the GPU" in note
    graphs = estimate(_small_mlp(), torch.empty(4, 64, device="meta"), targets=["H100"], predictor=ScaledBound(),
                      compile="reduce-overhead").row("H100")
    assert graphs["step_s"] < row["step_s"] / 2 and graphs["assumed"]["cuda_graphs"]
    assert graphs["assumed"]["compile"] == "reduce-overhead" and not graphs["host_bound"]


def test_a_large_batch_is_not_host_bound():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096))
    row = estimate(model, torch.empty(8192, 4096, device="meta"), targets=["T4"], predictor=ScaledBound()).row("T4")
    assert not row["host_bound"] and row["phases_s"]["host"] < 0.05 * row["step_s"]


def test_bad_execution_options_name_the_value():
    with pytest.raises(ValueError, match="compile.*'fast'"):
        ExecutionOptions("fast")
    with pytest.raises(ValueError, match="cuda_graphs"):
        ExecutionOptions(cuda_graphs="yes")


def test_cpu_run_keeps_its_own_python_time_on_a_gpu():
    report = make_report(device="cpu")
    report.measured["step_phases"]["other_s"] = 0.0
    report.predictions[-1]["step_s"] = 0.5           # 0.5 s per step, of which the ops took ~0.04 s
    rows = project_report(report, ["H100"], predictor=ScaledBound())
    h100 = rows[1]
    assert h100["step_s"] > 0.4 and h100["host_bound"]
    assert h100["assumed"]["host"].startswith("this run's own Python")


def test_measured_host_costs_are_per_op_seconds():
    costs = measure_host_costs(repeats=3)
    assert all(0 < costs[k] < 0.01 for k in ("fwd_op_s", "bwd_op_s", "aten_op_s", "opt_step_s"))
    assert costs["fwd_ops"] > 5 and costs["bwd_ops"] > 5
