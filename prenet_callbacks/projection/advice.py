"""The recommendation from the projected rows: fastest, cheapest, best time-for-money, or stay.

`recommend` returns ``{text, fastest, cheapest, best_value, stay}`` (prenet-report/2): the line people
read, and the chosen targets' labels ("8x H100-SXM5", "2x8 H100-SXM5") for machines.

A target is *clearly* faster only when it wins by more than its band and by at least `MIN_GAIN`
(projections carry tens of percent of error; a 5 % win is noise). Best time-for-money minimises
cost x time among priced targets that fit, i.e. it favours targets that are both quick and cheap.
"""
from __future__ import annotations

from typing import Any

from prenet_callbacks.units import format_duration, format_step_time, format_usd

MIN_GAIN = 0.15


def row_label(row: dict[str, Any]) -> str:
    """A row's target label: its ``label``, else "<devices>x <name>"."""
    if row.get("label"):
        return str(row["label"])
    n = row.get("devices", 1) or 1
    return f"{n}x {row['name']}" if n > 1 else str(row["name"])


def _time(row: dict[str, Any]) -> float | None:
    """Time for the whole job: total when known, else the step time per measured step's work."""
    if row.get("total_s") is not None:
        return row["total_s"]
    return row.get("work_s", row.get("step_s"))


def _time_text(row: dict[str, Any]) -> str:
    """The whole run's time, or per step when the run's length is unknown (``estimate`` without steps)."""
    if row.get("total_s") is not None:
        return format_duration(row["total_s"])
    return f"{format_step_time(row.get('work_s', row.get('step_s')))} per step"


def recommend(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``{text, fastest, cheapest, best_value, stay}``, or None when there is nothing to compare."""
    line, picks = _recommend(rows)
    if line is None:
        return None
    return {"text": line, **picks}


def _recommend(rows: list[dict[str, Any]]) -> tuple[str | None, dict[str, Any]]:
    none = {"fastest": None, "cheapest": None, "best_value": None, "stay": False}
    current = next((r for r in rows if r.get("current")), None)
    options = [r for r in rows if not r.get("current") and r.get("fits_memory") is not False and _time(r)]
    if not options:
        misfits = [r for r in rows if r.get("fits_memory") is False and r.get("max_batch")]
        if misfits:
            best = max(misfits, key=lambda r: (r["max_batch"], -(_time(r) or 0)))
            lead = f"stay on {row_label(current)}: " if current is not None else ""
            return (f"{lead}no target fits at batch {best.get('batch_per_device')} per device; the largest batch "
                    f"that fits is {best['max_batch']} on {row_label(best)}"), {**none, "stay": current is not None}
        if current is not None and len(rows) > 1:
            return f"stay on {row_label(current)}: no other target fits in memory", {**none, "stay": True}
        return None, none
    fastest = min(options, key=_time)
    priced = [r for r in options if r.get("total_usd") is not None]
    cheapest = min(priced, key=lambda r: r["total_usd"]) if priced else None
    value = min(priced, key=lambda r: r["total_usd"] * _time(r)) if priced else None
    if current is not None and _time(current):
        base = _time(current)
        band = fastest.get("relative_error") or 0.0
        gain = base / _time(fastest) - 1.0
        cheaper = (cheapest is not None and current.get("total_usd") is not None
                   and cheapest["total_usd"] < current["total_usd"] * (1 - MIN_GAIN))
        if gain < max(MIN_GAIN, band) and not cheaper:
            return (f"stay on {row_label(current)}: no target is clearly faster (best: {row_label(fastest)}, "
                    f"{_time_text(fastest)} vs {_time_text(current)})"), {**none, "stay": True}
    parts = [f"fastest {row_label(fastest)} ({_time_text(fastest)}"
             + (f", {format_usd(fastest['total_usd'])}" if fastest.get("total_usd") is not None else "") + ")"]
    if cheapest is not None:
        parts.append(f"cheapest {row_label(cheapest)} ({format_usd(cheapest['total_usd'])}, "
                     f"{_time_text(cheapest)})")
    if value is not None and value is not cheapest and value is not fastest:
        parts.append(f"best time-for-money {row_label(value)} ({_time_text(value)}, "
                     f"{format_usd(value['total_usd'])})")
    elif value is not None:
        parts.append(f"best time-for-money {row_label(value)}")
    picks = {"fastest": row_label(fastest), "cheapest": row_label(cheapest) if cheapest is not None else None,
             "best_value": row_label(value) if value is not None else None, "stay": False}
    return "; ".join(parts), picks
