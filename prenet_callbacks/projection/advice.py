"""One plain recommendation line from the projected rows: fastest, cheapest, best time-for-money, or stay.

A target is *clearly* faster only when it wins by more than its band and by at least `MIN_GAIN`
(projections carry tens of percent of error; a 5 % win is noise). Best time-for-money minimises
cost x time among priced targets that fit, i.e. it favours targets that are both quick and cheap.
"""
from __future__ import annotations

from typing import Any

from prenet_callbacks.units import format_duration, format_step_time, format_usd

MIN_GAIN = 0.15


def _label(row: dict[str, Any]) -> str:
    n = row.get("devices", 1) or 1
    return f"{n}x {row['name']}" if n > 1 else str(row["name"])


def _time(row: dict[str, Any]) -> float | None:
    """Time for the whole job: total when known, else the per-sample step time (same work)."""
    if row.get("total_seconds") is not None:
        return row["total_seconds"]
    return row.get("work_seconds")


def _time_text(row: dict[str, Any]) -> str:
    """The whole run's time, or per step when the run's length is unknown (``estimate`` without steps)."""
    if row.get("total_seconds") is not None:
        return format_duration(row["total_seconds"])
    return f"{format_step_time(row.get('work_seconds'))} per step"


def recommend(rows: list[dict[str, Any]]) -> str | None:
    """The recommendation line, or None when there is nothing to compare."""
    current = next((r for r in rows if r.get("current")), None)
    options = [r for r in rows if not r.get("current") and r.get("fits_memory") is not False and _time(r)]
    if not options:
        misfits = [r for r in rows if r.get("fits_memory") is False and r.get("max_batch")]
        if misfits:
            best = max(misfits, key=lambda r: (r["max_batch"], -(_time(r) or 0)))
            lead = f"stay on {_label(current)}: " if current is not None else ""
            return (f"{lead}no target fits at batch {best.get('batch_per_device')} per device; the largest batch "
                    f"that fits is {best['max_batch']} on {_label(best)}")
        if current is not None and len(rows) > 1:
            return f"stay on {_label(current)}: no other target fits in memory"
        return None
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
            return (f"stay on {_label(current)}: no target is clearly faster (best: {_label(fastest)}, "
                    f"{_time_text(fastest)} vs {_time_text(current)})")
    parts = [f"fastest {_label(fastest)} ({_time_text(fastest)}"
             + (f", {format_usd(fastest['total_usd'])}" if fastest.get("total_usd") is not None else "") + ")"]
    if cheapest is not None:
        parts.append(f"cheapest {_label(cheapest)} ({format_usd(cheapest['total_usd'])}, "
                     f"{_time_text(cheapest)})")
    if value is not None and value is not cheapest and value is not fastest:
        parts.append(f"best time-for-money {_label(value)} ({_time_text(value)}, "
                     f"{format_usd(value['total_usd'])})")
    elif value is not None:
        parts.append(f"best time-for-money {_label(value)}")
    return "; ".join(parts)
