"""Subnormal floats in the optimizer's state: the watch finds dead entries and their crossing steps, and the
prediction names the risk in a note without pricing it (a forecast the run cannot check stays a note)."""
from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook

from integrations.loop import Tracker
from prenet_callbacks.forecast.eta import RunMeasurements, predict_fit
from prenet_callbacks.forecast.plan import RunPlan
from prenet_callbacks.measure.subnormals import SubnormalNote, SubnormalWatch, flushes_subnormals

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
    watch = SubnormalWatch(optimizer)
    step(True)
    watch.snapshot(4)
    step(True)
    note = watch.note(5)
    assert note is not None and watch.done
    assert note.buffers == ["exp_avg", "exp_avg_sq"]
    assert note.entries == 2 * 4096 and note.dead_entries == 2 * 2048   # both moments of the dead half
    exp_avg = optimizer.state[param]["exp_avg"]
    # every dead entry's first moment is counted (exp_avg_sq's dead entries cross ~100x later)
    assert note.crossing_before(5000) == 2048
    last = max(s for s in note.crossing_steps if s < 5000)
    for n in range(6, int(last) + 80):
        step(True)
        count = subnormal_count(exp_avg[:2048])
        predicted = note.crossing_before(n + 1)
        assert abs(count - predicted) <= 2, f"step {n}: {count} subnormal, forecast {predicted}"
    # rounding stalls them there: all still subnormal, none of the live half
    assert subnormal_count(exp_avg[:2048]) == 2048
    assert subnormal_count(exp_avg[2048:]) == 0


def test_no_forecast_without_a_snapshot_one_step_back_or_when_every_entry_is_alive():
    param, optimizer, step = adamw_with_dead_half()
    watch = SubnormalWatch(optimizer)
    assert watch.note(4) is None and not watch.done   # no snapshot yet
    watch.snapshot(2)
    step(True)
    assert watch.note(4) is None and not watch.done   # the snapshot is not one step back
    watch.snapshot(3)
    step(False)
    assert watch.note(4) is None and watch.done       # every entry got a gradient: nothing to say, ever
    watch.snapshot(4)
    step(True)
    assert watch.note(5) is None                      # made once a fit: no sampling after the first


def test_gpu_or_fp64_state_is_not_watched():
    param = nn.Parameter(torch.randn(64, dtype=torch.float64))
    optimizer = torch.optim.SGD([param], lr=0.1, momentum=0.9)
    param.grad = torch.ones_like(param)
    optimizer.step()
    watch = SubnormalWatch(optimizer)
    watch.snapshot(1)
    param.grad.zero_()
    optimizer.step()
    assert watch.note(2) is None


def test_the_note_names_the_share_and_step_and_stays_quiet_when_too_few_cross_before_the_end():
    note = SubnormalNote(at_step=10, dead_entries=1500.0, entries=10_000.0, crossing_steps=[100.0, 200.0],
                         stride_weight=[1000.0, 500.0], buffers=["exp_avg"])
    assert note.crossing_before(150) == 1000.0 and note.crossing_before(300) == 1500.0
    described = note.describe(10, 300)
    assert "15% of the optimizer's exp_avg" in described and "from step 100" in described
    assert "does not include" in described and "torch.set_flush_denormal(True)" in described
    assert note.describe(10, 90) is None                       # nothing crosses before the run ends
    assert SubnormalNote(10, 10.0, 1e6, [100.0], [10.0], ["exp_avg"]).describe(10, 300) is None   # 0.001%
    assert note.to_dict(10, 150)["crossing_before_end"] == 1000


def test_predict_fit_names_the_risk_without_changing_the_total_or_the_band():
    plan = RunPlan(total_batches=1000, batches_per_epoch=1000, max_epochs=1)
    m = RunMeasurements()
    for _ in range(20):
        m.batch.add(0.01)
    note = SubnormalNote(at_step=20, dead_entries=5e5, entries=1e6, crossing_steps=[600.0], stride_weight=[5e5],
                         buffers=["exp_avg"])
    plain = predict_fit(plan, m, done_batches=20, done_steps=20, elapsed_s=0.2)
    noted = predict_fit(plan, m, done_batches=20, done_steps=20, elapsed_s=0.2, later_risk=note)
    assert (noted.predicted_total_s, noted.low_s, noted.high_s) == (plain.predicted_total_s, plain.low_s, plain.high_s)
    assert "subnormal floats" in noted.note and plain.note is None
    assert "later_slowdown_s" not in noted.of_which


def test_a_loop_whose_inputs_go_dark_gets_the_note_in_its_first_prediction_and_no_probe_runs(tmp_path, monkeypatch):
    # 64 input features carry signal for three steps and are zero afterwards: their weight columns get
    # no gradient, and AdamW's first moment of them decays into the subnormal range ~800 steps later
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    steps_of_other_optimizers = []
    # the watch only reads the run's optimizer: no throwaway optimizer steps (they would fire the user's hooks)
    handle = register_optimizer_step_pre_hook(
        lambda opt, args, kwargs: None if opt is optimizer else steps_of_other_optimizers.append(opt))
    tracker = Tracker(total_steps=1000, model=model, optimizer=optimizer, report_path=tmp_path / "r.json",
                      warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=100, targets=[],
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
    handle.remove()
    assert steps_of_other_optimizers == []
    assert "subnormal floats" in first["note"] and "torch.set_flush_denormal(True)" in first["note"]
    assert "later_slowdown_s" not in first["of_which"]
