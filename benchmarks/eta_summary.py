"""Summaries of the ETA protocol's runs (`eta_protocol.py`): per workload, per framework and per split.

Every figure is over every run kept (repeats included, none dropped): the median and worst absolute error of
the first prediction, raw and at the run's pace (`pace.py`), and the spread (largest minus smallest signed
error); the band's coverage and, beside it, its median half-width and the median of each of its parts
(`band_parts`: relative half-widths that add in quadrature to the half-width). Errors are taken against two
ends: the report's (``first_error``: the time the report measured) and the user's (``wall_error``: from
``fit()``/``train()``/``Tracker(...)``/``attach()`` to the return of ``fit()``/``train()``/``close()``/
``finish()``).
"""
from __future__ import annotations

import statistics
from typing import Any

BAND_PARTS = ("pace_drift", "train_rate", "validation", "checkpoints", "epoch_boundaries", "allocator")


def save_figures(report: Any) -> dict[str, Any]:
    """What the first prediction assumed a checkpoint file costs and what the run's files cost: the files the plan
    holds (and per save), files measured (their mean), the model's state bytes (parameters and optimizer), the first
    prediction's per-file figure and checkpoint seconds, and the run's (``benchmarks/save_cost_choice.py`` reads
    them)."""
    first = report.first_prediction
    files = report.measured.get("checkpoint") or {}
    memory = report.measured.get("memory") or {}
    state = sum(float(memory.get(key) or 0.0) for key in ("params_bytes", "optimizer_bytes"))
    return {"planned_files": report.plan.get("checkpoint_saves"),
            "files_per_save": [c.get("files_per_save") for c in report.plan.get("checkpoints") or []],
            "checkpoint_files": files.get("files"), "checkpoint_file_s": files.get("mean_s"),
            "state_bytes": state or None,
            "first_checkpoint_file_s": (first.get("rates") or {}).get("checkpoint_file_s"),
            "first_checkpoints_s": first["breakdown"].get("checkpoints_s"),
            "checkpoints_actual_s": (report.actual.get("breakdown") or {}).get("checkpoints_s")}


def user_wall_figures(row: dict[str, Any]) -> dict[str, Any]:
    """The first prediction against the wall time the user sees, from the row a benchmark's builder wrote."""
    actual = row.get("actual_fit_s") or row["actual_s"]
    wall = row.get("trainer_fit_wall_s") or row["wall_s"]
    predicted = row["first_prediction_s"]
    low, high = row["first_band"]
    at_pace = actual * (1 + row["first_error_at_pace"]) if row.get("first_error_at_pace") is not None else None
    return {"user_wall_s": round(wall, 3), "report_actual_s": round(actual, 3),
            "end_outside_report_s": round(wall - actual, 3),
            "wall_error": round(predicted / wall - 1, 4),
            "wall_error_at_pace": round(at_pace / wall - 1, 4) if at_pace is not None else None,
            "wall_in_band": low <= wall <= high}


def _errors(rows: list[dict[str, Any]], key: str) -> dict[str, float | None]:
    values = [r[key] for r in rows if r.get(key) is not None]
    if not values:
        return {"median_abs": None, "worst_abs": None, "spread": None}
    return {"median_abs": round(statistics.median(abs(v) for v in values), 4),
            "worst_abs": round(max(abs(v) for v in values), 4),
            "spread": round(max(values) - min(values), 4),
            "median": round(statistics.median(values), 4)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One group of runs: errors raw and at pace against both ends, coverage, half-width and band parts."""
    if not rows:
        return {"runs": 0}
    parts = {name: [r["first_band_parts"][name] for r in rows if (r.get("first_band_parts") or {}).get(name) is not None]
             for name in BAND_PARTS}
    return {
        "runs": len(rows),
        "wall_error": _errors(rows, "wall_error"),
        "wall_error_at_pace": _errors(rows, "wall_error_at_pace"),
        "first_error": _errors(rows, "first_error"),
        "first_error_at_pace": _errors(rows, "first_error_at_pace"),
        "wall_in_band": sum(r["wall_in_band"] for r in rows),
        "wall_band_coverage": round(sum(r["wall_in_band"] for r in rows) / len(rows), 4),
        "actual_in_band": sum(r["actual_in_band"] for r in rows),
        "band_coverage": round(sum(r["actual_in_band"] for r in rows) / len(rows), 4),
        "median_band_half_width": round(statistics.median(r["first_band_half_width"] for r in rows), 4),
        "widest_band_half_width": round(max(r["first_band_half_width"] for r in rows), 4),
        "median_band_parts": {name: round(statistics.median(v), 4) if v else None for name, v in parts.items()},
        "median_pace": round(statistics.median(r["pace"] for r in rows if r.get("pace")), 4),
        "pace_range": [min(r["pace"] for r in rows if r.get("pace")), max(r["pace"] for r in rows if r.get("pace"))],
        "median_end_outside_report_s": round(statistics.median(r["end_outside_report_s"] for r in rows), 3),
    }


def by(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """`summarise` per value of ``key`` (``workload``, ``framework``, ``split``), in first-seen order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    return {name: summarise(group) for name, group in groups.items()}


def line(row: dict[str, Any]) -> str:
    """One run, for the console."""
    paced = f"{row['wall_error_at_pace']:+.1%}" if row.get("wall_error_at_pace") is not None else "n/a"
    return (f"[{row['split']} r{row['repeat']}] {row['framework']:9s} {row['workload']:40s} wall {row['user_wall_s']:6.1f}s "
            f"first@{row['first_prediction_at_fraction']:.1%} err {row['wall_error']:+.1%} at pace {paced} "
            f"(report end {row['first_error']:+.1%}) pace x{row.get('pace') or 0:.3f} "
            f"band +-{row['first_band_half_width']:.1%} in {row['wall_in_band']}")
