"""benchmarks/step_overhead.py places a run's overhead: the start, the steady steps, the end; the first pair apart."""
from __future__ import annotations

import pytest

from benchmarks.step_overhead import summarise


def _run(pair: int, with_prenet: bool, step_s: list[float], close_s: float, first: int | None = 5) -> dict:
    return {"pair": pair, "with_prenet": with_prenet, "step_s": step_s, "close_s": close_s,
            "fit_s": sum(step_s) + close_s, "first_prediction_at": first if with_prenet else None,
            "own_time": {"total_s": 0.02, "profiling_s": 0.005, "predictions_s": 0.01, "end_s": 0.002,
                         "per_batch_us": 30.0} if with_prenet else None}


def test_the_excess_is_placed_at_the_start_the_steady_steps_and_the_end() -> None:
    base = [0.01] * 100
    slow_start = [0.01 + (0.004 if i in (2, 4) else 0.0002) for i in range(100)]   # +4 ms at steps 3 and 5, else +0.2
    runs = [_run(0, False, base, 0.001), _run(0, True, [0.05] * 100, 0.5)]          # the first pair: one-off costs
    for pair in (1, 2, 3):
        noisy = [t * (1 + 0.001 * pair) for t in base]
        runs += [_run(pair, False, noisy, 0.001), _run(pair, True, [t * (1 + 0.001 * pair) for t in slow_start], 0.006)]
    summary = summarise(runs, head=10)
    assert summary["runs_per_side"] == 3 and summary["steps"] == 100
    assert summary["excess_ms"]["steps 1-10"] == pytest.approx(2 * 4.0 + 8 * 0.2, abs=0.1)
    assert summary["excess_ms"]["steps 11-100"] == pytest.approx(90 * 0.2, abs=0.1)
    assert summary["excess_ms"]["close"] == pytest.approx(5.0, abs=0.01)
    assert summary["steady_excess_per_step_us"] == pytest.approx(200.0, abs=1.0)
    assert summary["first_prediction_at_step"] == 5 and summary["excess_at_first_prediction_step_ms"] == pytest.approx(4.0, abs=0.1)
    assert summary["first_pair_fit_ratio"] == pytest.approx(5.5 / 1.001, rel=1e-3)   # kept apart, not in the medians
    assert summary["own_time_ms"]["total_s"] == 20.0 and summary["own_time_per_batch_us"] == 30.0
