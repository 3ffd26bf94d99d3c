"""Read a ``prenet-report/1`` file as ``prenet-report/2``: renamed fields, integer counts, a run block.

/1 reports never recorded how a run ended, whether it was limited, or which targets the
recommendation named; the upgrade fills what can be read off the file and leaves the rest null.
"""
from __future__ import annotations

import copy
from typing import Any

from prenet_callbacks.forecast.plan import integer_counts
from prenet_callbacks.report_parts import label_for

# /1 target keys -> /2 keys
_TARGET_KEYS = {
    "step_seconds": "step_s", "low_seconds": "step_low_s", "high_seconds": "step_high_s",
    "total_seconds": "total_s", "total_low_seconds": "total_low_s", "total_high_seconds": "total_high_s",
    "work_seconds": "work_s", "comm_seconds": "comm_s", "comm_exposed_seconds": "comm_exposed_s",
    "phases": "phases_s", "memory_gb": "memory_gib", "memory_capacity_gb": "memory_capacity_gib",
}
_BREAKDOWN_KEYS = ("setup", "train", "validation", "checkpoints", "epoch_boundaries")


def target_label(row: dict[str, Any]) -> str:
    """``8x H100-SXM5`` for a multi-device row, the plain name otherwise."""
    return label_for(row.get("name", "?"), row.get("devices"))


def upgrade_target(row: dict[str, Any]) -> dict[str, Any]:
    out = {_TARGET_KEYS.get(k, k): v for k, v in row.items()}
    out.setdefault("label", target_label(out))
    out.setdefault("nodes", 1)
    out.setdefault("batch_convention", "per_device")
    notes = out.get("notes") or []
    out.setdefault("host_bound", any("host-bound" in str(n) for n in notes))
    if isinstance(out.get("steps"), float):
        out["steps"] = int(round(out["steps"]))
    return out


def upgrade_prediction(entry: dict[str, Any], total_steps: int | None) -> dict[str, Any]:
    out = dict(entry)
    breakdown = entry.get("breakdown") or {}
    out["breakdown"] = {f"{k}_s": breakdown[k] for k in _BREAKDOWN_KEYS if k in breakdown}
    out["of_which"] = {"data_loading_s": breakdown["data_loading"]} if "data_loading" in breakdown else {}
    note = entry.get("note") or ""
    out.setdefault("time_limited", "max_time" in note)
    out.setdefault("steps", total_steps if entry.get("predicted_total_s") is not None else None)
    out.setdefault("naive_total_s", None)
    out.setdefault("validation_source", None)
    return out


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """The /2 form of a parsed /1 report (the input is not modified)."""
    data = copy.deepcopy(data)
    plan = integer_counts(data.get("plan") or {})
    total_steps = plan.get("total_steps")
    predictions = [upgrade_prediction(p, total_steps) for p in data.get("predictions") or []]
    actual = data.get("actual")
    current = data.get("current") or {}
    run = {
        "framework": current.get("framework"),
        "start": "resumed" if plan.get("start_step") else "fresh",
        "start_step": plan.get("start_step") or 0,
        "fits": int(data.pop("fits", 1) or 1),
        "limits": {"max_steps": None, "max_epochs": plan.get("max_epochs"), "max_time_s": plan.get("max_time_s"),
                   "early_stopping": False},
        "startup_s": None,
        "ended": None,
    }
    if actual:
        done = actual.get("steps")
        reason = "completed" if total_steps is None or done is None or done >= total_steps else "stopped_early"
        run["ended"] = {"reason": reason, "detail": "read from a prenet-report/1 file", "at": None,
                        "at_step": done, "elapsed_s": actual.get("fit_s")}
        first = next((p for p in predictions if p.get("predicted_total_s") is not None), None)
        actual = {"fit_s": actual.get("fit_s"), "steps": done, "batches": actual.get("batches"), "ended": reason,
                  "first_prediction": ({"at_step": first.get("at_step"), "predicted_total_s": first["predicted_total_s"]}
                                       if first else None),
                  "first_prediction_error": actual.get("first_prediction_error") if reason == "completed" else None,
                  "predicted_for_done_work_s": None, **{k: v for k, v in actual.items() if k not in (
                      "fit_s", "steps", "batches", "first_prediction_error")}}
    text = data.pop("recommendation", None)
    recommendation = None
    if isinstance(text, str):
        recommendation = {"text": text, "fastest": None, "cheapest": None, "best_value": None,
                          "stay": text.startswith("stay")}
    projection = data.pop("projection", None) or {}
    if projection:
        projection.setdefault("batch_convention", "per_device")
        projection.setdefault("work", {"steps": total_steps, "done_steps": plan.get("start_step") or 0})
    data.update({
        "schema": "prenet-report/2",   # the shape it has now (`Report.from_dict` stamps the current schema)
        "updated": data.get("created"),
        "run": run,
        "plan": plan,
        "predictions": predictions,
        "targets": [upgrade_target(t) for t in data.get("targets") or []],
        "recommendation": recommendation,
        "projection": projection,
        "actual": actual,
    })
    return data


def adopt_projection_rows(report: Any) -> None:
    """Bring rows and recommendation written by a /1-era projection into the /2 fields (idempotent)."""
    report.targets = [upgrade_target(t) for t in report.targets]
    text = report.extra.pop("recommendation", None)
    if isinstance(text, str):
        report.recommendation = {"text": text, "fastest": None, "cheapest": None, "best_value": None,
                                 "stay": text.startswith("stay")}
    elif isinstance(text, dict):
        report.recommendation = text
    projection = report.extra.pop("projection", None)
    if isinstance(projection, dict):
        report.projection = projection
