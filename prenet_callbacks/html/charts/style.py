"""What every chart shares: colours, chart heights, and tick positions and labels with units."""
from __future__ import annotations

import math
from typing import Callable

from prenet_callbacks.html.plot import log_ticks, nice_ticks
from prenet_callbacks.units import format_usd

BLUE, ORANGE, GREEN, RED, GREY, DARK = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#8c8c8c", "#333333"
FIT_COLORS = (BLUE, "#9467bd", "#17becf", "#bcbd22")
PART_COLORS = (GREY, BLUE, ORANGE, GREEN, "#9467bd")
INCH = 96.0   # the charts' heights were chosen in inches; the page is laid out in CSS pixels
# Round times for ticks: 1-2-5 steps up to 50 s (and for step times in ms and µs), then minutes and hours.
ROUND_TIMES_S = ([k * 10.0 ** e for e in range(-6, 2) for k in (1, 2, 5)]
                 + [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 432000, 864000])


def time_ticks(low: float, high: float, *, log: bool = False, most: int = 8) -> list[float]:
    """Ticks at round times between `low` and `high` seconds (``1m 00s``, ``2m 00s``, not ``1m 40s``), at most `most`."""
    if log:
        ticks: list[float] = []
        for tick in (t for t in ROUND_TIMES_S if low <= t <= high):
            if not ticks or tick >= 1.9 * ticks[-1]:  # evenly spread on a log axis: 50 s, then 2m, not 1m
                ticks.append(tick)
        while len(ticks) > most:
            ticks = ticks[::2]
        return ticks
    span = max(high - low, 1e-9)
    steps = [s for s in ROUND_TIMES_S if span <= 120 or s % 60 == 0]  # whole minutes beyond two minutes
    step = next((s for s in steps if span / s <= most), steps[-1])
    return [k * step for k in range(math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9) + 1)]


def time_tick(fmt: Callable[[float], str]) -> Callable[[float], str]:
    """Tick labels through a time formatter (``1m 05s``, ``42.1 ms``), with a plain ``0`` at zero."""
    return lambda value: "0" if value == 0 else fmt(value)


def value_ticks(low: float, high: float, *, log: bool) -> list[float]:
    """Ticks of a plain (cost, FLOP/s, intensity) axis."""
    return log_ticks(low, high) if log else nice_ticks(low, high)


def usd_tick(value: float) -> str:
    """Cost tick labels that keep small amounts apart (``$0.0007``, not ``<$0.01``)."""
    if value <= 0:
        return "$0"
    return f"${value:.2g}" if value < 1 else format_usd(value)
