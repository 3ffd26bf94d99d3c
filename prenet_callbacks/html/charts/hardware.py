"""Other hardware as time against cost: bands, the time/cost front, recommendations, memory fit."""
from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from prenet_callbacks.html import view
from prenet_callbacks.html.charts.style import (BLUE, DARK, GREY, ORANGE, RED, Legend, log_scale, new_figure,
                                                tidy, time_axis, usd_tick)
from prenet_callbacks.units import format_duration, format_step_time


def hardware_chart(data: dict[str, Any]) -> Figure | None:
    """Other hardware as time against cost: each target with its band, the time/cost front, the
    recommended choices and the targets that do not fit in memory; unpriced ones on a strip below."""
    points, whole_run = view.hardware_points(data)
    if not points:
        return None
    priced = [p for p in points if p.cost is not None]
    unpriced = [p for p in points if p.cost is None]
    if priced and unpriced:
        figure = new_figure(4.9)
        main, strip = figure.subplots(2, 1, sharex=True, height_ratios=[5, 1])
    else:
        figure = new_figure(4.4 if priced else 1.8)
        main, strip = (figure.add_subplot(), None) if priced else (None, figure.add_subplot())
    times = [p.low for p in points] + [p.high for p in points]
    time_fmt = format_duration if whole_run else format_step_time
    if main is not None:
        _priced(main, priced, whole_run)
    if strip is not None:
        _unpriced(strip, unpriced)
    bottom = strip if strip is not None else main
    log = max(times) / min(times) > 8
    time_axis(bottom.xaxis, time_fmt, min(times) / (2 if log else 1), max(times) * (2 if log else 1), log=log)
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
    tidy(axis)
    once = Legend()
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
        log_scale(axis.yaxis, FuncFormatter(usd_tick), max(costs) / min(costs))
    else:
        axis.yaxis.set_major_formatter(FuncFormatter(usd_tick))
    axis.set_ylabel("predicted cost (USD)" if whole_run else "USD per 1,000 steps")
    axis.legend(loc="upper right", fontsize=8, frameon=False)


def _unpriced(axis: Any, points: list[view.HardwarePoint]) -> None:
    tidy(axis)
    for index, point in enumerate(points):
        marker, color = _marker(point)
        axis.errorbar([point.time], [0], xerr=[[point.time - point.low], [point.high - point.time]], fmt=marker,
                      color=color, capsize=2)
        text = point.label + (" (current)" if point.current else "") + (": does not fit" if point.fits is False else "")
        axis.annotate(text, (point.time, 0), textcoords="offset points", xytext=(7, 4 if index % 2 == 0 else -10),
                      fontsize=8)
    axis.set_yticks([0], ["no price"])
    axis.set_ylim(-1, 1)
    axis.grid(axis="y", visible=False)
