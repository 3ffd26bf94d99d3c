"""The prediction history: predicted whole-fit time against optimizer step, with the band, the naive
progress-bar estimate and the actual time; the time per step when the run's length is unknown."""
from __future__ import annotations

from typing import Any

from prenet_callbacks.html import view
from prenet_callbacks.html.charts.style import BLUE, DARK, FIT_COLORS, GREY, INCH, ORANGE, time_tick, time_ticks
from prenet_callbacks.html.plot import WIDTH, Axes, Chart, nice_ticks
from prenet_callbacks.html.view import number
from prenet_callbacks.units import format_duration, format_step_time

_BOX = (84.0, 34.0, WIDTH - 16, 3.8 * INCH - 44)


def history_chart(data: dict[str, Any]) -> Chart | None:
    """Predicted whole-fit time against optimizer step with its band, the naive progress-bar
    estimate and the actual time; for a run of unknown length, the time per step instead."""
    rows = view.history(data)
    if not rows:
        return None
    chart = Chart("history", 3.8 * INCH)
    total_steps = number((data.get("plan") or {}).get("total_steps"))
    right = max([total_steps or 0.0] + [r["at_step"] for r in rows]) * 1.03 or 1.0
    axes = _draw_totals(chart, rows, data, right) if view.has_totals(data) else _draw_rate(chart, rows, right)
    _mark_start(axes, data)
    axes.x_ticks(nice_ticks(0, right, 8), lambda step: f"{step:,.0f}")
    axes.x_label("optimizer step")
    axes.legend("lower right")
    return chart


def _top(rows: list[dict[str, Any]], data: dict[str, Any]) -> float:
    """The y axis' top: the bands' highs, the actual time and the work-done point, with room above."""
    tops = [view.band(t, r.get("low_s"), r.get("high_s"))[1] for r in rows
            if (t := number(r.get("predicted_total_s"))) is not None]
    actual = data.get("actual") or {}
    tops += [v for v in (number(actual.get("fit_s")), number(actual.get("predicted_for_done_work_s"))) if v]
    return max(tops or [1.0]) * 1.15


def _draw_totals(chart: Chart, rows: list[dict[str, Any]], data: dict[str, Any], right: float) -> Axes:
    top = _top(rows, data)
    axes = Axes(chart, _BOX, (0.0, right), (0.0, top))
    axes.frame()
    fits = sorted({row.get("fit") or 1 for row in rows})
    word = view.run_word(data)
    last_steps: list[float] = []
    for index, fit in enumerate(fits):
        points = [r for r in rows if (r.get("fit") or 1) == fit and number(r.get("predicted_total_s")) is not None]
        if not points:
            continue
        color = FIT_COLORS[index % len(FIT_COLORS)]
        steps = [r["at_step"] for r in points]
        totals = [r["predicted_total_s"] for r in points]
        bands = [view.band(t, r.get("low_s"), r.get("high_s")) for r, t in zip(points, totals)]
        name = f"predicted {word} time" if len(fits) == 1 else f"predicted {word} time, {word} {fit}"
        if len(points) > 1:
            axes.band(steps, [b[0] for b in bands], [b[1] for b in bands], color, label="band")
            axes.line(steps, totals, color, label=name)
            axes.markers(steps, totals, color, size=5)
        else:
            axes.error_bars(steps[0], totals[0], color, y_range=bands[0], cap=5)
            axes.markers(steps, totals, color, label=f"{name} (bar: band)")
        naive = [(r["at_step"], n) for r in points if (n := number(r.get("naive_total_s"))) is not None]
        if naive:
            axes.line([s for s, _ in naive], [n for _, n in naive], GREY, dash="5 3",
                      label="naive progress-bar estimate")
            axes.markers([s for s, _ in naive], [n for _, n in naive], GREY, size=3)
        last_steps = steps
    _draw_actual(axes, data, last_steps if len(fits) > 1 else [])
    clipped = [(r["at_step"], n) for r in rows if (n := number(r.get("naive_total_s"))) is not None and n > top]
    if clipped:
        step, value = clipped[0]
        axes.label(step, top, f"naive estimate at step {step:,}: {format_duration(value)} (off the chart)", dx=6,
                   dy=-12, color=GREY)
    axes.y_ticks(time_ticks(0, top), time_tick(format_duration))
    axes.y_label(f"whole-{word} time", offset=70)
    axes.title("Prediction history: is the estimate settling?")
    return axes


def _draw_actual(axes: Axes, data: dict[str, Any], last_fit_steps: list[float]) -> None:
    """The actual time as a line (over the last fit's steps only when there were several fits)."""
    actual = data.get("actual") or {}
    fit_s = number(actual.get("fit_s"))
    if fit_s is None:
        return
    ended = (data.get("run") or {}).get("ended") or {}
    reason = ended.get("reason") or actual.get("ended") or "completed"
    label = f"actual {format_duration(fit_s)}" + ("" if reason == "completed" else f" ({reason.replace('_', ' ')})")
    span = (min(last_fit_steps), max(last_fit_steps)) if last_fit_steps else (None, None)
    axes.hline(fit_s, DARK, start=span[0], end=span[1], dash="2 3", width=1.8, label=label)
    done = number(actual.get("predicted_for_done_work_s"))
    at_step = number(ended.get("at_step")) or number(actual.get("steps"))
    if done is not None and at_step is not None:
        axes.markers([at_step], [done], ORANGE, shape="s", size=7,
                     label=f"predicted for the work done: {format_duration(done)}")


def _draw_rate(chart: Chart, rows: list[dict[str, Any]], right: float) -> Axes:
    points = [(r["at_step"], t) for r in rows if (t := number(r.get("step_s"))) is not None]
    top = max([t for _, t in points] or [1.0]) * 1.25
    axes = Axes(chart, _BOX, (0.0, right), (0.0, top))
    axes.frame()
    if points:
        axes.line([s for s, _ in points], [t for _, t in points], BLUE, label="time per optimizer step")
        axes.markers([s for s, _ in points], [t for _, t in points], BLUE, size=5)
    axes.y_ticks(time_ticks(0, top), time_tick(format_step_time))
    axes.y_label("time per optimizer step", offset=70)
    axes.title("Run length unknown: no total, time per step instead")
    return axes


def _mark_start(axes: Axes, data: dict[str, Any]) -> None:
    run = data.get("run") or {}
    start_step = number(run.get("start_step"))
    if run.get("start") in ("resumed", "attached_late") and start_step:
        word = "resumed" if run["start"] == "resumed" else "attached"
        axes.vline(start_step, GREY, dash="6 2 1 2", label=f"{word} at step {start_step:,.0f}")
