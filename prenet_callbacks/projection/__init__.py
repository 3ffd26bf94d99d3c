"""Cross-hardware projection: how long and how much a measured (or estimated) run takes elsewhere.

    from prenet_callbacks.projection import project_report
    project_report(report, ["A100", "8x H100"])   # fills report.targets and the recommendation

See ``docs/projection.md`` for the method, the assumptions and the measured accuracy.
"""
from __future__ import annotations

from typing import Any, Sequence

from prenet_callbacks.projection.advice import recommend
from prenet_callbacks.projection.cost import run_cost
from prenet_callbacks.projection.from_report import run_shape_from_report, workload_from_report
from prenet_callbacks.projection.precision import Precision, parse_precision
from prenet_callbacks.projection.predictor_source import resolve_predictor
from prenet_callbacks.projection.project import RunShape, project_targets
from prenet_callbacks.projection.targets import DEFAULT_TARGETS, resolve_targets
from prenet_callbacks.projection.workload import Unit, Workload

__all__ = ["DEFAULT_TARGETS", "Precision", "RunShape", "Unit", "Workload", "parse_precision", "project_report",
           "project_targets", "recommend", "resolve_targets"]


def project_report(report, targets: Sequence[str] | None = None, *, predictor=None) -> list[dict[str, Any]]:
    """Fill ``report.targets`` (current device first) and ``report.extra["recommendation"]``.

    ``targets=None`` projects onto `DEFAULT_TARGETS`, ``[]`` onto nothing (the table is cleared).
    Unknown names raise `UnknownHardwareError` (a ValueError naming the closest catalog entries).
    Returns the rows.
    """
    chosen = resolve_targets(targets)
    if targets is not None and not chosen:
        report.targets = []
        report.recommendation = None
        return []
    workload = workload_from_report(report)
    shape = run_shape_from_report(report, workload)
    predictor, predictor_note = resolve_predictor(predictor)
    current = _current_row(report, workload)
    current_key = (current["devices"], current["name"]) if current else None
    chosen = [t for t in chosen if (t.count, t.accelerator.name) != current_key]
    notes = list(workload.notes)
    if predictor_note:
        notes.append(predictor_note)
    if not workload.units or not any(u.ops for u in workload.units):
        rows = []
        notes.append("no per-layer profile in this report (profile_layers=False?): other hardware not projected")
    else:
        total = current.get("total_seconds") if current else None
        rows = project_targets(workload, chosen, predictor, shape, current_total_s=total)
    report.targets = ([current] if current else []) + rows
    line = recommend(report.targets)
    if line:
        report.extra["recommendation"] = line
    else:
        report.extra.pop("recommendation", None)
    report.extra["projection"] = {
        "work": {"steps": shape.steps and int(round(shape.steps)),
                 "done_steps": int((report.run or {}).get("start_step") or 0)},
        "notes": notes,
        "assumptions": ("data-parallel targets keep the per-device batch; the same data takes "
                        "world/N times the optimizer steps"),
        "precision": workload.precision.label(),
        "predictor": (getattr(predictor, "metadata", {}) or {}).get("version"),
    }
    from prenet_callbacks.report_upgrade import adopt_projection_rows

    adopt_projection_rows(report)  # until the rows are built with prenet-report/2 names
    return report.targets


def _done_before_s(report, workload: Workload) -> float:
    """Wall time of the steps that ran before this fit (resume) or attach: measured when the
    report holds the earlier fits' time, else those steps at the measured step time."""
    run = report.run or {}
    done = int(run.get("start_step") or 0)
    if not done:
        return 0.0
    if run.get("earlier_s") is not None:
        return float(run["earlier_s"])
    return done * (workload.measured_step_s or 0.0)


def _current_row(report, workload: Workload) -> dict[str, Any] | None:
    current = report.current or {}
    if not current:
        return None
    prediction = report.latest_prediction or {}
    anchor = workload.anchor
    name = anchor.name if anchor is not None else (current.get("name") or current.get("device") or "current")
    devices = int(current.get("devices") or 1)
    total = prediction.get("predicted_total_s")
    done_s = _done_before_s(report, workload)
    if total is not None and done_s:
        total += done_s  # the whole run, like every target row: the part that ran before this fit too
    cost = run_cost(anchor, devices, total) if anchor is not None else None
    step = workload.measured_step_s
    return {
        "name": name, "devices": devices, "step_seconds": step,
        "low_seconds": step, "high_seconds": step,
        "total_seconds": total,
        "total_low_seconds": prediction.get("low_s") and prediction["low_s"] + done_s,
        "total_high_seconds": prediction.get("high_s") and prediction["high_s"] + done_s,
        "work_seconds": step, "speedup": 1.0,
        "usd_per_gpu_hour": cost.usd_per_gpu_hour if cost else None,
        "usd_per_hour": cost.usd_per_hour if cost else None,
        "total_usd": round(cost.total_usd, 2) if cost and cost.total_usd is not None else None,
        "price_date": cost.price_date if cost else None,
        "fits_memory": True, "max_batch": None, "batch_per_device": workload.batch_size,
        "method": "measured", "current": True, "precision": workload.precision.name,
        "precision_note": None, "notes": [],
    }
