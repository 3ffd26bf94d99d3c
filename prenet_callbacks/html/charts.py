"""The page's charts, drawn with matplotlib (the ``html`` extra): each function takes a report dict
and returns a `matplotlib.figure.Figure`, or None when the report has nothing to draw.

Figures are built with the object API (no pyplot, no global state), so drawing is safe inside a
training process and leaves the user's own plots alone.
"""
from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from prenet_callbacks.html import view
from prenet_callbacks.html.view import number
from prenet_callbacks.units import format_count, format_duration, format_percent, format_step_time, format_usd

WIDTH_IN = 9.5
BLUE, ORANGE, GREEN, RED, GREY, DARK = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#8c8c8c", "#333333"
FIT_COLORS = (BLUE, "#9467bd", "#17becf", "#bcbd22")
PART_COLORS = (GREY, BLUE, ORANGE, GREEN, "#9467bd")
TOP_LAYERS = 12


def _figure(height_in: float) -> Figure:
    figure = Figure(figsize=(WIDTH_IN, height_in), layout="constrained")
    figure.set_facecolor("white")
    return figure


def _tidy(axis: Any) -> None:
    axis.spines[["top", "right"]].set_visible(False)
    axis.grid(True, color="#e6e6e6", linewidth=0.8)
    axis.set_axisbelow(True)


class _Legend:
    """Legend labels that appear once however many artists share them."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, text: str) -> str:
        if text in self.seen:
            return "_nolegend_"
        self.seen.add(text)
        return text


def _time_tick(fmt: Any) -> FuncFormatter:
    return FuncFormatter(lambda value, _: "0" if value == 0 else fmt(value))


def _usd_tick(value: float, _position: Any = None) -> str:
    if value <= 0:
        return "$0"
    return f"${value:.2g}" if value < 1 else format_usd(value)


# -- prediction history ---------------------------------------------------------------------------
def history_chart(data: dict[str, Any]) -> Figure | None:
    """Predicted whole-fit time against optimizer step with its band, the naive progress-bar
    estimate and the actual time; for a run of unknown length, the time per step instead."""
    rows = view.history(data)
    if not rows:
        return None
    figure = _figure(3.8)
    axis = figure.add_subplot()
    _tidy(axis)
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
    once = _Legend()
    tops: list[float] = []
    last_steps: list[float] = []
    for index, fit in enumerate(fits):
        points = [r for r in rows if (r.get("fit") or 1) == fit and number(r.get("predicted_total_s")) is not None]
        if not points:
            continue
        color = FIT_COLORS[index % len(FIT_COLORS)]
        steps = [r["at_step"] for r in points]
        totals = [r["predicted_total_s"] for r in points]
        lows = [number(r.get("low_s")) or t for r, t in zip(points, totals)]
        highs = [number(r.get("high_s")) or t for r, t in zip(points, totals)]
        name = "predicted fit time" if len(fits) == 1 else f"predicted fit time, fit {fit}"
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
    axis.yaxis.set_major_formatter(_time_tick(format_duration))
    axis.set_ylabel("whole-fit time")
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
    axis.set_ylim(0, max([t for _, t in points] or [1.0]) * 1.25)
    axis.yaxis.set_major_formatter(_time_tick(format_step_time))
    axis.set_ylabel("time per optimizer step")
    axis.set_title("Run length unknown: no whole-fit total, time per step instead", loc="left", fontsize=11)


def _mark_start(axis: Any, data: dict[str, Any]) -> None:
    run = data.get("run") or {}
    start_step = number(run.get("start_step"))
    if run.get("start") in ("resumed", "attached_late") and start_step:
        word = "resumed" if run["start"] == "resumed" else "attached"
        axis.axvline(start_step, color=GREY, linestyle="-.", linewidth=1, label=f"{word} at step {start_step:,.0f}")


# -- where the time goes ----------------------------------------------------------------------------
def breakdown_chart(data: dict[str, Any]) -> Figure | None:
    """The whole fit's predicted parts (training with its data loading, validation, checkpoints,
    setup) beside one measured optimizer step's phases."""
    prediction = view.latest_prediction(data)
    parts, of_which = view.breakdown(prediction)
    phases = view.step_phases(data)
    if not parts and not phases:
        return None
    panels = [p for p in (parts and "fit", phases and "step") if p]
    figure = _figure(0.42 * max(len(parts), len(phases)) + 1.4)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for axis, panel in zip(axes, panels):
        _tidy(axis)
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
            axis.set_title(f"Whole fit: {format_duration(total)}"
                           + (f" (predicted at step {step:,})" if isinstance(step, int) else ""), loc="left", fontsize=11)
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
    axis.xaxis.set_major_locator(MaxNLocator(nbins=5))
    axis.xaxis.set_major_formatter(_time_tick(fmt))


# -- layers -----------------------------------------------------------------------------------------
def layers_chart(data: dict[str, Any]) -> Figure | None:
    """The slowest layers (forward + backward per optimizer step, with FLOPs and FLOP/byte), beside
    their achieved FLOP/s against arithmetic intensity under the current device's roofline."""
    rows = view.layers(data)[:TOP_LAYERS]
    if not rows:
        return None
    figure = _figure(0.3 * len(rows) + 1.9)
    bars, roofline = figure.subplots(1, 2, width_ratios=[1.5, 1])
    _layer_bars(bars, rows)
    _roofline(roofline, rows, data)
    return figure


def _layer_bars(axis: Any, rows: list[view.Layer]) -> None:
    _tidy(axis)
    axis.grid(axis="y", visible=False)
    y = range(len(rows))
    forward = [layer.forward_s for layer in rows]
    axis.barh(y, forward, height=0.65, color=BLUE, label="forward")
    axis.barh(y, [layer.backward_s for layer in rows], left=forward, height=0.65, color=ORANGE, label="backward")
    axis.set_yticks(list(y), [f"{i + 1}. {layer.name} ({layer.module_type})" for i, layer in enumerate(rows)],
                    fontsize=8)
    axis.invert_yaxis()
    right = max(layer.seconds for layer in rows)
    for row, layer in enumerate(rows):
        intensity = "—" if layer.intensity is None else f"{layer.intensity:.1f}"
        axis.text(layer.seconds + right * 0.02, row, f"{format_count(layer.flops)}FLOP, {intensity} FLOP/B",
                  va="center", fontsize=7, color=DARK)
    axis.set_xlim(0, right * 1.6)
    axis.xaxis.set_major_locator(MaxNLocator(nbins=4))
    axis.xaxis.set_major_formatter(_time_tick(format_step_time))
    axis.set_xlabel("time per optimizer step")
    axis.legend(loc="lower right", fontsize=8, frameon=False)
    axis.set_title("Slowest layers (measured)", loc="left", fontsize=11)


def _roofline(axis: Any, rows: list[view.Layer], data: dict[str, Any]) -> None:
    _tidy(axis)
    points = [(i + 1, layer.intensity, layer.achieved_flops_s) for i, layer in enumerate(rows)
              if layer.intensity and layer.achieved_flops_s]
    roof, why = view.roof(data)
    if points:
        axis.scatter([p[1] for p in points], [p[2] for p in points], s=22, color=BLUE, zorder=3, label="layer")
        for rank, x, y in points:
            axis.annotate(str(rank), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
        axis.set_xscale("log")
        axis.set_yscale("log")
        xs = [p[1] for p in points]
        low, high = min(xs) / 3, max(xs) * 3
        if roof is not None:
            ridge = roof.peak_flops_s / roof.bandwidth_bytes_s
            low, high = min(low, ridge / 10), max(high, ridge * 10)
            grid = [low * (high / low) ** (k / 60) for k in range(61)]
            axis.plot(grid, [min(roof.peak_flops_s, roof.bandwidth_bytes_s * x) for x in grid], color=RED,
                      linewidth=1.4, label=f"roof: {format_count(roof.peak_flops_s)}FLOP/s, "
                                           f"{roof.bandwidth_bytes_s / 1e9:,.0f} GB/s")
        axis.set_xlim(low, high)
        axis.legend(loc="lower right", fontsize=7, frameon=False)
    else:
        axis.text(0.5, 0.5, "no FLOP counts for these layers", ha="center", va="center", transform=axis.transAxes)
    axis.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{format_count(v)}FLOP/s"))
    axis.set_xlabel("arithmetic intensity (FLOP per byte)")
    if roof:
        axis.set_title(f"Roofline on {roof.device}", loc="left", fontsize=11)
    else:
        axis.set_title(f"Achieved FLOP/s\n{why}", loc="left", fontsize=8)


# -- other hardware -------------------------------------------------------------------------------------
def hardware_chart(data: dict[str, Any]) -> Figure | None:
    """Other hardware as time against cost: each target with its band, the time/cost front, the
    recommended choices and the targets that do not fit in memory; unpriced ones on a strip below."""
    points, whole_run = view.hardware_points(data)
    if not points:
        return None
    priced = [p for p in points if p.cost is not None]
    unpriced = [p for p in points if p.cost is None]
    if priced and unpriced:
        figure = _figure(4.9)
        main, strip = figure.subplots(2, 1, sharex=True, height_ratios=[5, 1])
    else:
        figure = _figure(4.4 if priced else 1.8)
        main, strip = (figure.add_subplot(), None) if priced else (None, figure.add_subplot())
    times = [p.low for p in points] + [p.high for p in points]
    time_fmt = format_duration if whole_run else format_step_time
    if main is not None:
        _priced(main, priced, whole_run)
    if strip is not None:
        _unpriced(strip, unpriced)
    bottom = strip if strip is not None else main
    if max(times) / min(times) > 8:
        bottom.set_xscale("log")
    bottom.xaxis.set_major_formatter(_time_tick(time_fmt))
    bottom.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    bottom.set_xlabel("predicted whole-run time" if whole_run else "predicted time per optimizer step")
    top = main if main is not None else strip
    top.set_title("Other hardware: time against cost" + ("" if whole_run else " (run length unknown: per step)"),
                  loc="left", fontsize=11)
    return figure


def _marker(point: view.HardwarePoint) -> tuple[str, str]:
    if point.fits is False:
        return "X", RED
    if point.current:
        return "D", DARK
    return "o", BLUE if point.front else GREY


def _priced(axis: Any, points: list[view.HardwarePoint], whole_run: bool) -> None:
    _tidy(axis)
    once = _Legend()
    for point in points:
        marker, color = _marker(point)
        legend = ("does not fit in memory" if point.fits is False else "current device" if point.current
                  else "on the time/cost front" if point.front else "other target")
        axis.errorbar([point.time], [point.cost], xerr=[[point.time - point.low], [point.high - point.time]],
                      yerr=[[point.cost - point.cost_low], [point.cost_high - point.cost]], fmt=marker, color=color,
                      markersize=7 if marker != "X" else 9, ecolor=color, elinewidth=1, capsize=2, alpha=0.9,
                      label=once(legend))
        if point.roles:
            axis.scatter([point.time], [point.cost], s=260, facecolors="none", edgecolors=ORANGE, linewidths=2,
                         zorder=4, label=once("recommended"))
        text = point.label + (f" ({', '.join(point.roles)})" if point.roles else "")
        text += ": does not fit" if point.fits is False else ""
        axis.annotate(text, (point.time, point.cost), textcoords="offset points", xytext=(7, 5), fontsize=8,
                      fontweight="bold" if point.roles else "normal", color=RED if point.fits is False else DARK)
    front = sorted((p for p in points if p.front), key=lambda p: p.time)
    if len(front) > 1:
        axis.plot([p.time for p in front], [p.cost for p in front], color=BLUE, linestyle="--", linewidth=1,
                  label="time/cost front")
    costs = [p.cost_low for p in points] + [p.cost_high for p in points]
    if min(costs) > 0 and max(costs) / min(costs) > 8:
        axis.set_yscale("log")
        axis.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    axis.yaxis.set_major_formatter(FuncFormatter(_usd_tick))
    axis.set_ylabel("predicted cost (USD)" if whole_run else "USD per 1,000 steps")
    axis.legend(loc="upper right", fontsize=8, frameon=False)


def _unpriced(axis: Any, points: list[view.HardwarePoint]) -> None:
    _tidy(axis)
    for index, point in enumerate(points):
        marker, color = _marker(point)
        axis.errorbar([point.time], [0], xerr=[[point.time - point.low], [point.high - point.time]], fmt=marker,
                      color=color, capsize=2)
        axis.annotate(point.label + (" (current)" if point.current else "") + (": does not fit" if point.fits is False else ""),
                      (point.time, 0), textcoords="offset points", xytext=(7, 4 if index % 2 == 0 else -10), fontsize=8)
    axis.set_yticks([0], ["no price"])
    axis.set_ylim(-1, 1)
    axis.grid(axis="y", visible=False)
