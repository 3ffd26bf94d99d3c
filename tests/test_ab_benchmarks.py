"""The A/B benchmarks' shared rotation (`benchmarks.quiet_steps_ab.three_way`) and what `lightning_batch_cost`
derives from it: each way first, middle and last in turn, medians of what every run of a way holds, and the
per-batch excess of PreNeT placed beside its own time. Fake fits, no training."""
from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import lightning_batch_cost
from benchmarks.quiet_steps_ab import three_way


def test_three_way_rotates_the_order_and_takes_medians_of_what_every_run_holds(tmp_path):
    calls = []

    def fit(mode: str, out: Path) -> dict:
        calls.append(mode)
        return {"mode": mode, "median_step_us": {"a": 10.0, "b": 20.0, "c": 30.0}[mode] + len(calls),
                "own_per_batch_us": 5.0 if mode == "a" else None}

    result = three_way(fit, 3, tmp_path, modes=("a", "b", "c"))
    assert calls == ["c", "a", "b", "c", "c", "b", "a", "b", "a", "c"]     # a warm-up of the last way, then rotated
    assert [r["mode"] for r in result["runs"]] == calls[1:]
    assert result["summary"]["a"] == {"median_step_us": 10.0 + 7, "own_per_batch_us": 5.0}   # calls 2, 7, 9
    assert result["summary"]["c"] == {"median_step_us": 30.0 + 5}   # calls 4, 5, 10; None is not a figure


def test_lightning_batch_cost_places_the_excess_beside_the_own_time(tmp_path, monkeypatch):
    steps = {"none": [1000.0, 1010.0, 990.0], "empty": [1015.0, 1030.0, 1000.0], "prenet": [1060.0, 1070.0, 1050.0]}

    def fake_fit(mode: str, out: Path) -> dict:
        fake_fit.seen[mode] = fake_fit.seen.get(mode, -1) + 1
        step = steps[mode][max(0, fake_fit.seen[mode] - (1 if mode == "none" else 0))]
        return {"mode": mode, "median_step_us": step, "own_per_batch_us": 30.0 if mode == "prenet" else None,
                "fit_s": 1.0}

    fake_fit.seen = {}
    monkeypatch.setattr(lightning_batch_cost, "tiny_fit", fake_fit)
    out = tmp_path / "cost.json"
    assert lightning_batch_cost.main(["--rounds", "3", "--out", str(tmp_path / "runs"), "--json", str(out)]) == 0
    import json

    excess = json.loads(out.read_text())["excess_us"]
    assert excess["prenet"] == pytest.approx(1060.0 - 1000.0) and excess["empty"] == pytest.approx(1015.0 - 1000.0)
    assert excess["prenet_beyond_a_callback_and_own_time"] == pytest.approx(1060.0 - 1015.0 - 30.0)
    assert excess["prenet_within_rounds"] == pytest.approx(60.0) and excess["empty_within_rounds"] == pytest.approx(15.0)


def test_phase_period_ab_builds_samplers_without_the_period_only_inside_its_every_way():
    from benchmarks.phase_period_ab import sampler_without_period
    from prenet_callbacks.measure.phase_sampling import EVERY, PERIOD_S, PhaseSampler

    with sampler_without_period(True):
        sampler = PhaseSampler()
        sampler.start_when(True, step_s=PERIOD_S / 100)
        assert (sampler.every, sampler.period_s) == (EVERY, None)
    with sampler_without_period(False):
        assert PhaseSampler().period_s == PERIOD_S
    with pytest.raises(RuntimeError), sampler_without_period(True):
        raise RuntimeError("a failing run")
    sampler = PhaseSampler()                      # restored after a failure too
    sampler.start_when(True, step_s=PERIOD_S / 100)
    assert sampler.every > EVERY
