"""A prediction redone at the pace the machine kept over the run: what it got wrong besides the machine.

On a shared CPU a neighbour can slow (or stop slowing) every later step: no prediction made at 1-5% of a
run can know that. The *pace* is the run's mean clean batch over the one the prediction used; the
prediction's remaining time scaled by it is the total it would have given on a machine that kept its speed.
"""
from __future__ import annotations

from typing import Any


def total_at_pace(prediction: dict[str, Any], measured: dict[str, Any]) -> tuple[float, float]:
    """``(seconds, pace)``: the prediction's total with its remaining time scaled by the run's pace."""
    batch_s = measured.get("batch_run_mean_s") or measured["batch_s"]
    pace = batch_s / ((prediction.get("rates") or {}).get("batch_s") or prediction["step_s"])
    return prediction["elapsed_s"] + (prediction["predicted_total_s"] - prediction["elapsed_s"]) * pace, pace
