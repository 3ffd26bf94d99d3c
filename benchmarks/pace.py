"""A prediction redone at the pace the machine kept over the run: what it got wrong besides the machine.

On a shared CPU a neighbour can slow (or stop slowing) every later step: no prediction made at 1-5% of a
run can know that. The *pace* is the run's mean clean batch over the one the prediction expected for the
rest of the run (its measured batch, plus any slowdown it forecast, such as subnormal floats, spread over
the remaining batches); the prediction's remaining time scaled by it is the total it would have given on
a machine that kept its speed.
"""
from __future__ import annotations

from typing import Any


def total_at_pace(prediction: dict[str, Any], measured: dict[str, Any],
                  total_batches: float | None = None) -> tuple[float, float]:
    """``(seconds, pace)``: the prediction's total with its remaining time scaled by the run's pace.

    ``total_batches`` (the plan's) spreads a forecast slowdown over the batches left; without it a
    forecast slowdown is ignored.
    """
    batch_s = measured.get("batch_run_mean_s") or measured["batch_s"]
    expected = (prediction.get("rates") or {}).get("batch_s") or prediction["step_s"]
    slowdown_s = (prediction.get("of_which") or {}).get("later_slowdown_s") or 0.0
    left = (total_batches or 0) - (prediction.get("at_batch") or 0)
    if slowdown_s and left > 0:
        expected += slowdown_s / left
    pace = batch_s / expected
    return prediction["elapsed_s"] + (prediction["predicted_total_s"] - prediction["elapsed_s"]) * pace, pace
