"""A run's life in the report: how it started, what may end it, how it ended, and the closing line.

Shared by every integration through `PredictionSession.fit_start` / `fit_end`. The reasons a run
ends are the report's ``run.ended.reason``; the first prediction's error is judged only for runs
that completed: a run that stopped early is judged on the work it did.
"""
from __future__ import annotations

from typing import Any

from prenet_callbacks.outputs.report_view import run_word
from prenet_callbacks.units import format_duration

START_KINDS = ("fresh", "resumed", "attached_late")
END_REASONS = ("completed", "stopped_early", "time_limit", "interrupted", "failed")
_END_WORDS = {"stopped_early": "stopped early", "time_limit": "hit its time limit",
              "interrupted": "was interrupted", "failed": "failed"}


def check_start(start: str) -> str:
    if start not in START_KINDS:
        raise ValueError(f"start must be one of {START_KINDS}, got {start!r}")
    return start


def check_reason(reason: str) -> str:
    if reason not in END_REASONS:
        raise ValueError(f"reason must be one of {END_REASONS}, got {reason!r}")
    return reason


def actual_block(*, fit_s: float, steps: int, batches: int, reason: str, first: dict[str, Any] | None,
                 predicted_for_done_s: float | None) -> dict[str, Any]:
    """The report's ``actual``: measured time, and the first prediction judged on the right work."""
    block: dict[str, Any] = {"fit_s": round(fit_s, 4), "steps": steps, "batches": batches, "ended": reason,
                             "first_prediction": None, "first_prediction_error": None,
                             "predicted_for_done_work_s": None}
    if first and first.get("predicted_total_s"):
        block["first_prediction"] = {"at_step": first.get("at_step"),
                                     "predicted_total_s": first["predicted_total_s"]}
        # a time-limited prediction was made for the run that stops at its limit: judge it on that run,
        # with the figure the panel showed (its steps beside it), not on a recomputation for the steps done
        limited = reason == "time_limit" and bool(first.get("time_limited"))
        if limited:
            block["first_prediction"]["steps"] = first.get("steps")
        if (reason == "completed" or limited) and fit_s > 0:
            block["first_prediction_error"] = round(first["predicted_total_s"] / fit_s - 1, 4)
        elif predicted_for_done_s is not None:
            block["predicted_for_done_work_s"] = round(predicted_for_done_s, 4)
    return block


def _own_time_words(actual: dict[str, Any]) -> str:
    """``; PreNeT's own time 0.21 s (1.7%)``: what the tool cost the run it watched (`own_time`)."""
    own = actual.get("own_time") or {}
    if own.get("share") is None:
        return ""
    seconds = own["total_s"]
    took = f"{seconds:.2f} s" if seconds < 10 else format_duration(seconds)
    return f"; PreNeT's own time {took} ({own['share']:.1%})"


def end_line(report: Any, *, unit: str | None = None) -> str | None:
    """One line for the log when a run ends, e.g. ``took 78.5 s; predicted 82.0 s at step 26 (+4.5%)``.

    ``unit``: what the run is called; by default the panel's word for it (`report_view.run_word`).
    """
    actual, ended = report.actual, report.run.get("ended") or {}
    if not actual:
        return None
    if unit is None:
        unit = run_word(report)
    reason = actual.get("ended") or ended.get("reason") or "completed"
    took = format_duration(actual.get("fit_s"))
    first = actual.get("first_prediction") or {}
    detail = f" ({ended['detail']})" if ended.get("detail") else ""
    if reason == "completed":
        line = f"PreNeT: the {unit} took {took}"
        if first:
            error = actual.get("first_prediction_error")
            line += (f"; predicted {format_duration(first['predicted_total_s'])} at step {first['at_step']}"
                     + (f" ({error:+.1%})" if error is not None else ""))
        return line + _own_time_words(actual)
    total = (report.plan or {}).get("total_steps")
    of_total = f" of {total:,}" if total else ""
    line = f"PreNeT: the {unit} {_END_WORDS.get(reason, reason)}{detail} after {took}, at step {actual.get('steps')}{of_total}"
    error = actual.get("first_prediction_error")
    if first and error is not None:   # a time-limited prediction: the panel's own figure
        steps = f" and {first['steps']:,} steps" if first.get("steps") else ""
        return line + (f"; predicted {format_duration(first['predicted_total_s'])}{steps} at step {first['at_step']} "
                       f"({error:+.1%})")
    done = actual.get("predicted_for_done_work_s")
    if first and done and actual.get("fit_s"):
        line += (f"; for those steps the first prediction (step {first['at_step']}) said {format_duration(done)} "
                 f"({done / actual['fit_s'] - 1:+.1%})")
    return line
