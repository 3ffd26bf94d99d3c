"""Where the time goes: the whole fit's predicted parts beside one measured optimizer step."""
from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from prenet_callbacks.html import view
from prenet_callbacks.html.view import number
from prenet_callbacks.html.charts.style import DARK, PART_COLORS, new_figure, tidy, time_axis
from prenet_callbacks.units import format_duration, format_percent, format_step_time


def breakdown_chart(data: dict[str, Any]) -> Figure | None:
    """The whole fit's predicted parts (training with its data loading, validation, checkpoints,
    setup) beside one measured optimizer step's phases."""
    prediction = view.latest_prediction(data)
    parts, of_which = view.breakdown(prediction)
    phases = view.step_phases(data)
    if not parts and not phases:
        return None
    panels = [p for p in (parts and "fit", phases and "step") if p]
    figure = new_figure(0.42 * max(len(parts), len(phases)) + 1.4)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for axis, panel in zip(axes, panels):
        tidy(axis)
        axis.grid(axis="y", visible=False)
        if panel == "fit":
            total = number((prediction or {}).get("predicted_total_s")) or sum(s for _, s in parts)
            _bars(axis, parts, total, format_duration)
            for label, seconds in of_which:
                row = next((i for i, (name, _) in enumerate(parts) if name == "training steps"), None)
                if row is not None:
                    axis.barh(row, seconds, height=0.6, color="white", alpha=0.55, hatch="///", edgecolor=DARK,
                              linewidth=0, label=f"of which {label}: {format_duration(seconds)}")
            if of_which:
                axis.legend(loc="lower right", fontsize=8, frameon=False)
            step = (prediction or {}).get("at_step")
            when = f" (predicted at step {step:,})" if isinstance(step, int) else ""
            axis.set_title(f"Whole {view.run_word(data)}: {format_duration(total)}{when}", loc="left", fontsize=11)
        else:
            step_total = number(((data.get("measured") or {}).get("step_phases") or {}).get("total_s"))
            step_total = step_total or sum(s for _, s in phases)
            _bars(axis, phases, step_total, format_step_time)
            axis.set_title(f"One optimizer step (measured): {format_step_time(step_total)}", loc="left", fontsize=11)
    return figure


def _bars(axis: Any, rows: list[tuple[str, float]], total: float, fmt: Any) -> None:
    labels = [label for label, _ in rows]
    values = [seconds for _, seconds in rows]
    axis.barh(range(len(rows)), values, height=0.6, color=[PART_COLORS[i % len(PART_COLORS)] for i in range(len(rows))])
    axis.set_yticks(range(len(rows)), labels)
    axis.invert_yaxis()
    right = max(values) if values else 1.0
    for row, seconds in enumerate(values):
        axis.text(seconds + right * 0.02, row, f"{fmt(seconds)}  {format_percent(seconds / total if total else None)}",
                  va="center", fontsize=8)
    axis.set_xlim(0, right * 1.35 or 1)
    time_axis(axis.xaxis, fmt, 0, right * 1.35 or 1, most=5)
