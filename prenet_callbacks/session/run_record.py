"""A fit's start and end in the report: the ``run`` block and the ``actual`` block.

`PredictionSession.fit_start` and ``fit_end`` call these; the words and rules for how a run starts and
ends are `prenet_callbacks.session.lifecycle`'s.
"""
from __future__ import annotations

from typing import Any

from prenet_callbacks.forecast.eta import predicted_for_work
from prenet_callbacks.session.lifecycle import actual_block
from prenet_callbacks.forecast.plan import RunLimits, RunPlan
from prenet_callbacks.report import Report, now_iso
from prenet_callbacks.units import plural


def record_fit_start(report: Report, current: dict[str, Any] | None, *, framework: str | None, start: str,
                     limits: RunLimits | None, startup_s: float | None) -> None:
    """A fit begins: what it runs on (``current``), and the run block (a resumed run adds the earlier fits' wall time)."""
    if current:
        report.current.update(current)
    framework = framework or report.current.get("framework") or "lightning"
    report.current.setdefault("framework", framework)
    run = report.run
    if run.get("fits"):
        # a resumed run: the earlier fits' wall time belongs to the whole run every target row describes
        latest = report.latest_prediction or {}
        earlier = (report.actual or {}).get("fit_s") or latest.get("elapsed_s")
        if earlier is not None:
            run["earlier_s"] = round(float(run.get("earlier_s") or 0.0) + float(earlier), 4)
    run.update({"framework": framework, "start": start, "fits": int(run.get("fits") or 0) + 1,
                "limits": (limits or RunLimits()).to_dict(), "startup_s": startup_s, "ended": None})
    report.actual = None


def record_plan(report: Report, plan: RunPlan) -> None:
    """The run plan, and the step a resumed fit starts from."""
    report.plan = plan.to_dict()
    report.run["start_step"] = plan.start_step


def record_fit_end(report: Report, plan: RunPlan | None, *, elapsed: float, reason: str, detail: str | None,
                   done_steps: int, done_batches: int, first: dict[str, Any] | None,
                   breakdown: dict[str, float], steps_seen: int, first_prediction_step: int | None) -> None:
    """The fit is over: its actual time and how it ended.

    ``completed`` is checked against the plan: a run that stopped before the plan's last batch
    without a stated reason ended early. ``first`` is this fit's first prediction, judged on the
    work done when the run did not complete; ``first_prediction_step`` is where it was due, when the
    run ended (after ``steps_seen`` steps) before it was made.
    """
    if (reason == "completed" and plan is not None and plan.known_length
            and done_batches < plan.total_batches):
        reason = "stopped_early"
        detail = detail or f"ended after {done_steps:,} of {int(plan.total_steps):,} planned steps"
    done_work = None
    if first is not None and plan is not None and reason != "completed":
        done_work = predicted_for_work(first, plan, done_batches)
    report.actual = actual_block(fit_s=elapsed, steps=done_steps, batches=done_batches,
                                 reason=reason, first=first, predicted_for_done_s=done_work)
    report.actual["breakdown"] = breakdown
    report.run["ended"] = {"reason": reason, "detail": detail, "at": now_iso(),
                           "at_step": done_steps, "elapsed_s": round(elapsed, 4)}
    if first_prediction_step is not None:
        report.limitations.append(
            f"the run ended after {plural(steps_seen, 'optimizer step')}, before the first prediction "
            f"(it comes after {first_prediction_step}: warm-up, profiling and timed steps)")
