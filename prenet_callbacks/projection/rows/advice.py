"""The recommendation from the projected rows: fastest, cheapest, best time-for-money, or stay.

`recommend` returns ``{text, fastest, cheapest, best_value, stay}`` (prenet-report/2): the line people
read, and the chosen targets' labels ("8x H100-SXM5", "2x8 H100-SXM5") for machines.

The rule (docs/projection.md, "Recommendation"):
- rows are compared like with like: by whole-run totals when every row has one (a time-limited run's
  rows all cover the same steps and one-off costs), else by the time per unit of the measured run's work;
- a target slower than the current device is never named (not as fastest, cheapest or best value);
- every figure in the text is the row's own figure in the table's unit (a total as the table shows it,
  or the row's step time "per step of N GPUs");
- a target is *clearly* faster only when it wins by more than its band (the row's ``step_high_s``) and by
  at least `MIN_GAIN` (a 5 % win is noise); otherwise, unless a target is `MIN_GAIN` cheaper, "stay".
Best time-for-money minimises cost x time among priced targets that fit.
"""
from __future__ import annotations

from typing import Any

from prenet_callbacks.report_parts import TargetRow
from prenet_callbacks.units import format_duration, format_step_time, format_usd

MIN_GAIN = 0.15


def row_label(row: TargetRow) -> str:
    """A row's target label: its ``label``, else "<devices>x <name>"."""
    return str(row.display_label)


def _time_key(rows: list[TargetRow]) -> str:
    """Compare like with like: whole-run totals when every row has one, else the time per unit of the
    measured run's work (``work_s``: a step of N GPUs does N steps' work)."""
    return "total_s" if rows and all(r.total_s is not None for r in rows) else "work_s"


def _time(row: TargetRow, key: str) -> float | None:
    if key == "total_s":
        return row.total_s
    return row.work_s if row.work_s is not None else row.step_s


def _time_text(row: TargetRow, key: str) -> str:
    """The row's own figure, as the table shows it: the whole run's time, or its step time per step."""
    if key == "total_s":
        return format_duration(row.total_s)
    devices = row.devices or 1
    return f"{format_step_time(row.step_s)} per step" + (f" of {devices} GPUs" if devices > 1 else "")


def recommend(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``{text, fastest, cheapest, best_value, stay}`` from the report's target rows, or None when there is
    nothing to compare."""
    line, picks = _recommend([TargetRow.from_dict(row) for row in rows])
    if line is None:
        return None
    return {"text": line, **picks}


def _recommend(rows: list[TargetRow]) -> tuple[str | None, dict[str, Any]]:
    none = {"fastest": None, "cheapest": None, "best_value": None, "stay": False}
    current = next((r for r in rows if r.current), None)
    fitting = [r for r in rows if not r.current and r.fits_memory is not False]
    key = _time_key(([current] if current is not None else []) + fitting)
    options = [r for r in fitting if _time(r, key)]
    base = _time(current, key) if current is not None else None
    if base:
        # the rule: never name a target that is slower than the current device
        options = [r for r in options if _time(r, key) <= base]
    if not options:
        misfits = [r for r in rows if r.fits_memory is False and r.max_batch]
        if misfits and not fitting:
            best = max(misfits, key=lambda r: (r.max_batch, -(_time(r, key) or 0)))
            lead = f"stay on {row_label(current)}: " if current is not None else ""
            return (f"{lead}no target fits at batch {best.batch_per_device} per device; the largest batch "
                    f"that fits is {best.max_batch} on {row_label(best)}"), {**none, "stay": current is not None}
        if current is not None and len(rows) > 1:
            reason = "no other target fits in memory" if not fitting else "no target is faster"
            return f"stay on {row_label(current)}: {reason}", {**none, "stay": True}
        return None, none
    fastest = min(options, key=lambda r: _time(r, key))
    priced = [r for r in options if r.total_usd is not None]
    cheapest = min(priced, key=lambda r: r.total_usd) if priced else None
    value = min(priced, key=lambda r: r.total_usd * _time(r, key)) if priced else None
    if base:
        band = _band(fastest)
        gain = base / _time(fastest, key) - 1.0
        cheaper = (cheapest is not None and current.total_usd is not None
                   and cheapest.total_usd < current.total_usd * (1 - MIN_GAIN))
        if gain < max(MIN_GAIN, band) and not cheaper:
            return (f"stay on {row_label(current)}: no target is clearly faster (best: {row_label(fastest)}, "
                    f"{_time_text(fastest, key)} vs {_time_text(current, key)})"), {**none, "stay": True}
    parts = [f"fastest {row_label(fastest)} ({_time_text(fastest, key)}"
             + (f", {format_usd(fastest.total_usd)}" if fastest.total_usd is not None else "") + ")"]
    if cheapest is not None:
        parts.append(f"cheapest {row_label(cheapest)} ({format_usd(cheapest.total_usd)}, "
                     f"{_time_text(cheapest, key)})")
    if value is not None and value is not cheapest and value is not fastest:
        parts.append(f"best time-for-money {row_label(value)} ({_time_text(value, key)}, "
                     f"{format_usd(value.total_usd)})")
    elif value is not None:
        parts.append(f"best time-for-money {row_label(value)}")
    picks = {"fastest": row_label(fastest), "cheapest": row_label(cheapest) if cheapest is not None else None,
             "best_value": row_label(value) if value is not None else None, "stay": False}
    return "; ".join(parts), picks


def _band(row: TargetRow) -> float:
    """The row's band as a fraction above its step: the widened band where the row has one."""
    step, high = row.step_s, row.step_high_s
    if step and high:
        return max(0.0, high / step - 1.0)
    return row.relative_error or 0.0
