"""Other hardware as time against cost: bands, the time/cost front, recommendations, memory fit."""
from __future__ import annotations

from typing import Any

from prenet_callbacks.html import view
from prenet_callbacks.html.charts.style import (BLUE, DARK, GREY, INCH, ORANGE, RED, time_tick, time_ticks, usd_tick,
                                                value_ticks)
from prenet_callbacks.html.plot import WIDTH, Axes, Chart
from prenet_callbacks.units import format_duration, format_step_time

_LEFT, _RIGHT, _TOP, _STRIP = 84.0, WIDTH - 16, 34.0, 54.0
_LABEL_ROOM = 0.3   # share of the time axis kept free right of the slowest target for its label


def hardware_chart(data: dict[str, Any]) -> Chart | None:
    """Other hardware as time against cost: each target with its band, the time/cost front, the
    recommended choices and the targets that do not fit in memory; unpriced ones on a strip below."""
    points, whole_run = view.hardware_points(data)
    if not points:
        return None
    priced = [p for p in points if p.cost is not None]
    unpriced = [p for p in points if p.cost is None]
    chart = Chart("hardware", (4.9 if priced and unpriced else 4.4 if priced else 1.8) * INCH)
    times = [p.low for p in points] + [p.high for p in points]
    log = max(times) / min(times) > 8
    if log:
        low, high = min(times) / 1.5, max(times) * 1.5
        x_range = (low, high * (high / low) ** _LABEL_ROOM)
    else:
        pad = (max(times) - min(times)) * 0.08 or max(times) * 0.1
        x_range = (max(min(times) - pad, 0.0), max(times) + pad + (max(times) - min(times) + pad) * _LABEL_ROOM)
    bottom = chart.height - 44
    strip = None
    if unpriced:
        strip = Axes(chart, (_LEFT, bottom - (_STRIP if priced else bottom - _TOP), _RIGHT, bottom), x_range,
                     (-1.0, 1.0), x_log=log)
        _unpriced(strip, unpriced)
        bottom -= _STRIP + 14
    main = Axes(chart, (_LEFT, _TOP, _RIGHT, bottom), x_range, _cost_range(priced), x_log=log,
                y_log=_cost_log(priced)) if priced else None
    if main is not None:
        _priced(main, priced, whole_run)
    time_fmt = format_duration if whole_run else format_step_time
    ticks = time_ticks(min(times) / (2 if log else 1), max(times) * (2 if log else 1), log=log)
    for axes in (main, strip):
        if axes is not None:
            axes.x_ticks(ticks, time_tick(time_fmt), labels=axes is (strip or main))
    (strip or main).x_label("predicted whole-run time" if whole_run else "predicted time per optimizer step")
    (main or strip).title("Other hardware: time against cost" + ("" if whole_run else " (run length unknown: per step)"))
    return chart


def _cost_log(points: list[view.HardwarePoint]) -> bool:
    costs = [p.cost_low for p in points] + [p.cost_high for p in points]
    return min(costs) > 0 and max(costs) / min(costs) > 8


def _cost_range(points: list[view.HardwarePoint]) -> tuple[float, float]:
    costs = [p.cost_low for p in points] + [p.cost_high for p in points]
    if not costs:
        return 0.0, 1.0
    if _cost_log(points):
        return min(costs) / 1.4, max(costs) * 1.4
    pad = (max(costs) - min(costs)) * 0.1 or max(costs) * 0.1 or 1.0
    return max(min(costs) - pad, 0.0), max(costs) + pad


def _marker(point: view.HardwarePoint) -> tuple[str, str]:
    if point.fits is False:
        return "X", RED
    if point.current:
        return "D", DARK
    return "o", BLUE if point.front else GREY


def _priced(axes: Axes, points: list[view.HardwarePoint], whole_run: bool) -> None:
    axes.frame()
    axes.y_ticks(value_ticks(axes.y.low, axes.y.high, log=axes.y.log), usd_tick)
    front = sorted((p for p in points if p.front), key=lambda p: p.time)
    if len(front) > 1:
        axes.line([p.time for p in front], [p.cost for p in front], BLUE, width=1, dash="5 3", label="time/cost front")
    for point in points:
        shape, color = _marker(point)
        legend = ("does not fit in memory" if point.fits is False else "current device" if point.current
                  else "on the time/cost front" if point.front else "other target")
        axes.error_bars(point.time, point.cost, color, x_range=(point.low, point.high),
                        y_range=(point.cost_low, point.cost_high), cap=2)
        axes.markers([point.time], [point.cost], color, shape=shape, size=9 if shape == "X" else 7, label=legend)
        if point.roles:
            axes.markers([point.time], [point.cost], ORANGE, shape="ring", size=18, label="recommended")
        text = point.label + (f" ({', '.join(point.roles)})" if point.roles else "")
        text += ": does not fit" if point.fits is False else ""
        axes.label(point.time, point.cost, text, dx=9, dy=7, bold=bool(point.roles),
                   color=RED if point.fits is False else DARK)
    axes.y_label("predicted cost (USD)" if whole_run else "USD per 1,000 steps", offset=70)
    axes.legend("upper right")


def _unpriced(axes: Axes, points: list[view.HardwarePoint]) -> None:
    axes.frame(grid_y=False)
    for index, point in enumerate(points):
        shape, color = _marker(point)
        axes.error_bars(point.time, 0.0, color, x_range=(point.low, point.high), cap=2)
        axes.markers([point.time], [0.0], color, shape=shape)
        text = point.label + (" (current)" if point.current else "") + (": does not fit" if point.fits is False else "")
        axes.label(point.time, 0.0, text, dx=7, dy=9 if index % 2 == 0 else -11)
    axes.y_ticks([0.0], lambda _: "no price")
