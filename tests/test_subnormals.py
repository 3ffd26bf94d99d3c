"""Subnormal floats in the optimizer's state: the watch finds dead entries, forecasts their crossing, and
the prediction prices the slowdown before any step shows it."""
from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from integrations.loop import Tracker
from prenet_callbacks.eta import RunMeasurements, predict_fit
from prenet_callbacks.plan import RunPlan
from prenet_callbacks.subnormals import SubnormalForecast, SubnormalWatch, flushes_subnormals, probe_cost

TINY = torch.finfo(torch.float32).tiny


@pytest.fixture(autouse=True)
def keeps_subnormals():
    if flushes_subnormals():
        pytest.skip("this CPU thread flushes subnormals to zero already: there is nothing to forecast")


def subnormal_count(tensor: torch.Tensor) -> int:
    size = tensor.abs()
    return int(((size < TINY) & (size > 0)).sum())


def adamw_with_dead_half(steps_alive: int = 3):
    """A parameter whose first half gets a gradient for ``steps_alive`` steps and then exactly none."""
    torch.manual_seed(0)
    param = nn.Parameter(torch.randn(4096))
    optimizer = torch.optim.AdamW([param], lr=1e-3)

    def step(alive_only: bool) -> None:
        param.grad = (torch.rand(4096) + 1.0) * 1e-3   # never near zero: a live entry always moves
        if alive_only:
            param.grad[:2048] = 0.0
        optimizer.step()

    for _ in range(steps_alive):
        step(False)
    return param, optimizer, step


def test_dead_entries_turn_subnormal_at_the_forecast_step():
    param, optimizer, step = adamw_with_dead_half()
    watch = SubnormalWatch(optimizer, probe=lambda opt, name: 1e-8)
    step(True)
    watch.snapshot(4)
    step(True)
    forecast = watch.forecast(5)
    assert forecast is not None
    assert forecast.buffers == ["exp_avg", "exp_avg_sq"]
    exp_avg = optimizer.state[param]["exp_avg"]
    # every dead entry's first moment is counted (exp_avg_sq's dead entries cross ~100x later)
    crossing = [(s, e) for s, e, _ in forecast.crossings if s < 5000]
    assert sum(e for _, e in crossing) == 2048
    last = max(s for s, _ in crossing)
    bucket = 2048 / 128                       # crossings are kept as 128 quantiles, each at its mean step
    for n in range(6, last + 80):
        step(True)
        count = subnormal_count(exp_avg[:2048])
        predicted = sum(e for s, e in crossing if s <= n)
        assert abs(count - predicted) <= 2 * bucket, f"step {n}: {count} subnormal, forecast {predicted}"
    # rounding stalls them there: all still subnormal, none of the live half
    assert subnormal_count(exp_avg[:2048]) == 2048
    assert subnormal_count(exp_avg[2048:]) == 0


def test_no_forecast_without_a_snapshot_one_step_back_or_when_every_entry_is_alive():
    param, optimizer, step = adamw_with_dead_half()
    watch = SubnormalWatch(optimizer, probe=lambda opt, name: 1e-8)
    assert watch.forecast(4) is None            # no snapshot yet
    watch.snapshot(3)
    step(False)
    assert watch.forecast(4) is None            # every entry got a gradient
    watch.snapshot(2)
    step(True)
    assert watch.forecast(5) is None            # the snapshot is not one step back


def test_gpu_or_fp64_state_is_not_watched():
    param = nn.Parameter(torch.randn(64, dtype=torch.float64))
    optimizer = torch.optim.SGD([param], lr=0.1, momentum=0.9)
    param.grad = torch.ones_like(param)
    optimizer.step()
    watch = SubnormalWatch(optimizer, probe=lambda opt, name: 1e-8)
    watch.snapshot(1)
    param.grad.zero_()
    optimizer.step()
    assert watch.forecast(2) is None


def test_extra_seconds_count_each_crossing_from_its_step_to_the_end():
    forecast = SubnormalForecast(at_step=10, crossings=[(100, 1000.0, 1e-5), (200, 500.0, 5e-6)],
                                 subnormal_now=0.0, dead_entries=1500.0, buffers=["exp_avg"])
    assert forecast.extra_s(10, 300) == pytest.approx(200 * 1e-5 + 100 * 5e-6)
    assert forecast.extra_s(150, 300) == pytest.approx(150 * 1e-5 + 100 * 5e-6)
    assert forecast.extra_s(10, 150) == pytest.approx(50 * 1e-5)
    assert forecast.extra_s(10, 90) == 0.0
    described = forecast.describe(10, 300)
    assert "1,500 entries" in described and "from step 100" in described
    assert "torch.set_flush_denormal(True)" in described
    assert forecast.to_dict(10, 150)["crossing_before_end"] == 1000


def test_probe_prices_the_optimizers_own_buffer_and_declines_a_missing_one():
    param = nn.Parameter(torch.randn(8))
    rng = torch.get_rng_state()
    cost = probe_cost(torch.optim.AdamW([param], lr=1e-3), "exp_avg")
    assert torch.equal(torch.get_rng_state(), rng)   # the run's random stream is not the probe's
    assert cost is not None and 0.0 <= cost < 1e-6   # nanoseconds per entry, not microseconds
    assert probe_cost(torch.optim.SGD([param], lr=1e-3), "momentum_buffer") is None  # no momentum: no buffer


def test_predict_fit_adds_the_forecast_slowdown_to_training_and_the_band():
    plan = RunPlan(total_batches=1000, batches_per_epoch=1000, max_epochs=1)
    m = RunMeasurements()
    for _ in range(20):
        m.batch.add(0.01)
    forecast = SubnormalForecast(at_step=20, crossings=[(600, 5e5, 5e-3)], subnormal_now=0.0,
                                 dead_entries=5e5, buffers=["exp_avg"])
    plain = predict_fit(plan, m, done_batches=20, done_steps=20, elapsed_s=0.2)
    slowed = predict_fit(plan, m, done_batches=20, done_steps=20, elapsed_s=0.2, later_slowdown=forecast)
    assert slowed.predicted_total_s - plain.predicted_total_s == pytest.approx(400 * 5e-3)
    assert slowed.of_which["later_slowdown_s"] == pytest.approx(2.0)
    assert "subnormal floats" in slowed.note and plain.note is None
    assert (slowed.high_s - slowed.predicted_total_s) > (plain.high_s - plain.predicted_total_s)


def test_a_loop_whose_inputs_go_dark_gets_the_slowdown_in_its_first_prediction(tmp_path):
    # 64 input features carry signal for three steps and are zero afterwards: their weight columns get
    # no gradient, and AdamW's first moment of them decays into the subnormal range ~800 steps later
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tracker = Tracker(total_steps=1000, model=model, optimizer=optimizer, report_path=tmp_path / "r.json",
                      warmup_steps=1, profile_steps=1, timing_steps=3, log_every_n_steps=100, targets=[],
                      print_report=False)
    with tracker:
        for step in range(1000):
            x = torch.randn(8, 256)
            if step >= 3:
                x[:, :64] = 0.0
            model(x).pow(2).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
            tracker.step()
    first = json.loads((tmp_path / "r.json").read_text())["predictions"][0]
    dead = 256 * 64
    exp_avg = optimizer.state[model[0].weight]["exp_avg"]
    assert subnormal_count(exp_avg[:, :64]) == dead          # the forecast came true
    assert subnormal_count(exp_avg[:, 64:]) == 0
    watch = tracker.run.session.subnormal_watch
    cost = watch._cost["exp_avg"]
    # every dead entry slows the steps left after it crosses (between steps 600 and 950 here)
    assert dead * cost * 50 - 1e-3 <= first["of_which"]["later_slowdown_s"] <= dead * cost * 400 + 1e-3
