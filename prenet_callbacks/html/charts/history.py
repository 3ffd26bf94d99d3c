"""The prediction history: predicted whole-fit time against optimizer step, with the band, the naive
progress-bar estimate and the actual time; the time per step when the run's length is unknown."""
from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from prenet_callbacks.html import view
from prenet_callbacks.html.view import number
from prenet_callbacks.html.charts.style import BLUE, DARK, FIT_COLORS, GREY, ORANGE, Legend, new_figure, tidy, time_axis
from prenet_callbacks.units import format_duration, format_step_time


def history_chart(data: dict[str, Any]) -> Figure | None:
    """Predicted whole-fit time against optimizer step with its band, the naive progress-bar
    estimate and the actual time; for a run of unknown length, the time per step instead."""
    rows = view.history(data)
    if not rows:
        return None
    figure = new_figure(3.8)
    axis = figure.add_subplot()
    tidy(axis)
    if view.has_totals(data):
        _draw_totals(axis, rows, data)
    else:
        _draw_rate(axis, rows)
    _mark_start(axis, data)
    axis.set_xlabel("optimizer step")
    axis.legend(loc="best", fontsize=8, frameon=False)
    return figure


def _draw_totals(axis: Any, rows: list[dict[str, Any]], data: dict[str, Any]) -> None:
    fits = sorted({row.get("fit") or 1 for row in rows})
    once = Legend()
    tops: list[float] = []
    last_steps: list[float] = []
    for index, fit in enumerate(fits):
        points = [r for r in rows if (r.get("fit") or 1) == fit and number(r.get("predicted_total_s")) is not None]
        if not points:
            continue
        color = FIT_COLORS[index % len(FIT_COLORS)]
        steps = [r["at_step"] for r in points]
        totals = [r["predicted_total_s"] for r in points]
        bands = [view.band(t, r.get("low_s"), r.get("high_s")) for r, t in zip(points, totals)]
        lows, highs = [b[0] for b in bands], [b[1] for b in bands]
        word = view.run_word(data)
        name = f"predicted {word} time" if len(fits) == 1 else f"predicted {word} time, {word} {fit}"
        if len(points) > 1:
            axis.fill_between(steps, lows, highs, color=color, alpha=0.18, linewidth=0, label=once("band"))
            axis.plot(steps, totals, color=color, marker="o", markersize=3, label=name)
        else:
            axis.errorbar(steps, totals, yerr=[[totals[0] - lows[0]], [highs[0] - totals[0]]], color=color,
                          fmt="o", capsize=4, label=f"{name} (bar: band)")
        naive = [(r["at_step"], number(r.get("naive_total_s"))) for r in points]
        naive = [(s, n) for s, n in naive if n is not None]
        if naive:
            axis.plot(*zip(*naive), color=GREY, linestyle="--", marker=".", markersize=3,
                      label=once("naive progress-bar estimate"))
        tops += highs
        last_steps = steps
    _draw_actual(axis, data, last_steps if len(fits) > 1 else [], tops)
    top = max(tops) * 1.15 if tops else None
    axis.set_ylim(0, top)
    clipped = [(r["at_step"], n) for r in rows if top and (n := number(r.get("naive_total_s"))) is not None and n > top]
    if clipped:
        step, value = clipped[0]
        axis.annotate(f"naive estimate at step {step:,}: {format_duration(value)} (off the chart)", (step, top),
                      textcoords="offset points", xytext=(6, -12), fontsize=8, color=GREY)
    time_axis(axis.yaxis, format_duration, 0, top or 1.0)
    axis.set_ylabel(f"whole-{view.run_word(data)} time")
    total_steps = number((data.get("plan") or {}).get("total_steps"))
    right = max([total_steps or 0.0] + [r["at_step"] for r in rows])
    axis.set_xlim(0, right * 1.03 or 1)
    axis.set_title("Prediction history: is the estimate settling?", loc="left", fontsize=11)


def _draw_actual(axis: Any, data: dict[str, Any], last_fit_steps: list[float], tops: list[float]) -> None:
    """The actual time as a line (over the last fit's steps only when there were several fits)."""
    actual = data.get("actual") or {}
    fit_s = number(actual.get("fit_s"))
    if fit_s is None:
        return
    ended = (data.get("run") or {}).get("ended") or {}
    reason = ended.get("reason") or actual.get("ended") or "completed"
    label = f"actual {format_duration(fit_s)}" + ("" if reason == "completed" else f" ({reason.replace('_', ' ')})")
    if last_fit_steps:
        axis.hlines(fit_s, min(last_fit_steps), max(last_fit_steps), color=DARK, linestyle=":", linewidth=1.6,
                    label=label)
    else:
        axis.axhline(fit_s, color=DARK, linestyle=":", linewidth=1.6, label=label)
    tops.append(fit_s)
    done = number(actual.get("predicted_for_done_work_s"))
    at_step = number(ended.get("at_step")) or number(actual.get("steps"))
    if done is not None and at_step is not None:
        axis.plot([at_step], [done], marker="s", color=ORANGE, linestyle="none",
                  label=f"predicted for the work done: {format_duration(done)}")
        tops.append(done)


def _draw_rate(axis: Any, rows: list[dict[str, Any]]) -> None:
    points = [(r["at_step"], number(r.get("step_s"))) for r in rows]
    points = [(s, t) for s, t in points if t is not None]
    if points:
        axis.plot(*zip(*points), color=BLUE, marker="o", markersize=3, label="time per optimizer step")
    top = max([t for _, t in points] or [1.0]) * 1.25
    axis.set_ylim(0, top)
    time_axis(axis.yaxis, format_step_time, 0, top)
    axis.set_ylabel("time per optimizer step")
    axis.set_title("Run length unknown: no total, time per step instead", loc="left", fontsize=11)


def _mark_start(axis: Any, data: dict[str, Any]) -> None:
    run = data.get("run") or {}
    start_step = number(run.get("start_step"))
    if run.get("start") in ("resumed", "attached_late") and start_step:
        word = "resumed" if run["start"] == "resumed" else "attached"
        axis.axvline(start_step, color=GREY, linestyle="-.", linewidth=1, label=f"{word} at step {start_step:,.0f}")
