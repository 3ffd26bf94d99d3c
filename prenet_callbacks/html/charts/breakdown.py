"""Where the time goes: the whole fit's predicted parts beside one measured optimizer step."""
from __future__ import annotations

from typing import Any, Callable

from prenet_callbacks.html import view
from prenet_callbacks.html.charts.style import DARK, INCH, PART_COLORS, time_tick, time_ticks
from prenet_callbacks.html.plot import WIDTH, Axes, Chart, text_width
from prenet_callbacks.html.view import number
from prenet_callbacks.units import format_duration, format_percent, format_step_time


def breakdown_chart(data: dict[str, Any]) -> Chart | None:
    """The whole fit's predicted parts (training with its data loading, validation, checkpoints,
    setup) beside one measured optimizer step's phases."""
    prediction = view.latest_prediction(data)
    parts, of_which = view.breakdown(prediction)
    phases = view.step_phases(data)
    if not parts and not phases:
        return None
    panels = [(rows, kind) for rows, kind in ((parts, "fit"), (phases, "step")) if rows]
    rows_most = max(len(parts), len(phases))
    chart = Chart("breakdown", (0.42 * rows_most + 1.4) * INCH)
    share = (WIDTH - 20) / len(panels)
    for index, (rows, kind) in enumerate(panels):
        left = index * share + 10 + max(text_width(label, 10) for label, _ in rows) + 10
        box = (left, 36.0, (index + 1) * share - 10, chart.height - 28)
        if kind == "fit":
            total = number((prediction or {}).get("predicted_total_s")) or sum(s for _, s in parts)
            axes = _bars(chart, box, rows, rows_most, total, format_duration)
            training = next((i for i, (name, _) in enumerate(parts) if name == "training steps"), None)
            if training is not None:
                for label, seconds in of_which:
                    axes.bars([training], [seconds], DARK, hatch=True,
                              label=f"of which {label}: {format_duration(seconds)}")
                axes.legend("lower right", size=9)
            step = (prediction or {}).get("at_step")
            when = f" (predicted at step {step:,})" if isinstance(step, int) else ""
            axes.title(f"Whole {view.run_word(data)}: {format_duration(total)}{when}")
        else:
            step_total = number(((data.get("measured") or {}).get("step_phases") or {}).get("total_s"))
            step_total = step_total or sum(s for _, s in phases)
            axes = _bars(chart, box, rows, rows_most, step_total, format_step_time)
            axes.title(f"One optimizer step (measured): {format_step_time(step_total)}")
    return chart


def _bars(chart: Chart, box: tuple[float, float, float, float], rows: list[tuple[str, float]], rows_most: int,
          total: float, fmt: Callable[[float], str]) -> Axes:
    values = [seconds for _, seconds in rows]
    right = (max(values) if values else 1.0) * 1.35 or 1.0
    axes = Axes(chart, box, (0.0, right), (rows_most - 0.5, -0.5))   # first row on top
    axes.frame(grid_y=False)
    axes.x_ticks(time_ticks(0, right, most=5), time_tick(fmt))
    axes.bars(range(len(rows)), values, PART_COLORS)
    axes.row_labels([label for label, _ in rows])
    for row, seconds in enumerate(values):
        axes.label(seconds, row, f"{fmt(seconds)}  {format_percent(seconds / total if total else None)}", dx=4)
    return axes
