"""What every chart shares: size, colours, tidy axes, legend labels once, tick labels with units."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

import matplotlib.style
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MultipleLocator

from prenet_callbacks.units import format_usd

WIDTH_IN = 9.5
BLUE, ORANGE, GREEN, RED, GREY, DARK = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#8c8c8c", "#333333"
FIT_COLORS = (BLUE, "#9467bd", "#17becf", "#bcbd22")
PART_COLORS = (GREY, BLUE, ORANGE, GREEN, "#9467bd")
# Round times for ticks: 1-2-5 steps up to 50 s (and for step times in ms and µs), then minutes and hours.
ROUND_TIMES_S = ([k * 10.0 ** e for e in range(-6, 2) for k in (1, 2, 5)]
                 + [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 432000, 864000])


# Style contexts change matplotlib's global rcParams while they are open: one drawer at a time,
# so that a page drawn in a background thread and a TensorBoard image drawn in the training thread
# never restore each other's settings.
_ONE_DRAWER = threading.RLock()


@contextmanager
def drawing() -> Iterator[None]:
    """Draw and save charts in matplotlib's default style whatever the user has set, with plain text
    (no mathtext: a ``$`` in a label stays a dollar, and nothing pays for the math parser)."""
    with _ONE_DRAWER, matplotlib.style.context("default"), rc_context({"text.parse_math": False}):
        yield


def new_figure(height_in: float) -> Figure:
    """A page-wide figure (white, constrained layout) of the given height in inches."""
    figure = Figure(figsize=(WIDTH_IN, height_in), layout="constrained")
    figure.set_facecolor("white")
    return figure


def tidy(axis: Any) -> None:
    """No top/right frame, a light grid behind the data."""
    axis.spines[["top", "right"]].set_visible(False)
    axis.grid(True, color="#e6e6e6", linewidth=0.8)
    axis.set_axisbelow(True)


class Legend:
    """Legend labels that appear once however many artists share them."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, text: str) -> str:
        if text in self.seen:
            return "_nolegend_"
        self.seen.add(text)
        return text


def log_scale(axis: Any, formatter: Any, span: float) -> None:
    """Make one axis (``axes.xaxis`` / ``axes.yaxis``) logarithmic; where the data span (max / min)
    is under two decades, label 1, 2 and 5 times each power of ten so that it gets several labels."""
    if axis is axis.axes.xaxis:
        axis.axes.set_xscale("log")
    else:
        axis.axes.set_yscale("log")
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if span < 100 else (1.0,)))
    axis.set_major_formatter(formatter)
    axis.set_minor_formatter(FuncFormatter(lambda value, _: ""))


def time_axis(axis: Any, fmt: Any, low: float, high: float, *, log: bool = False, most: int = 8) -> None:
    """Ticks at round times between `low` and `high` seconds (``1m 00s``, ``2m 00s``, not ``1m 40s``),
    labelled with `fmt`; `log` makes the axis logarithmic. At most `most` labelled ticks."""
    if log:
        if axis is axis.axes.xaxis:
            axis.axes.set_xscale("log")
        else:
            axis.axes.set_yscale("log")
        ticks: list[float] = []
        for tick in (t for t in ROUND_TIMES_S if low <= t <= high):
            if not ticks or tick >= 1.9 * ticks[-1]:  # evenly spread on a log axis: 50 s, then 2m, not 1m
                ticks.append(tick)
        while len(ticks) > most:
            ticks = ticks[::2]
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_minor_formatter(FuncFormatter(lambda value, _: ""))
    else:
        span = max(high - low, 1e-9)
        steps = [s for s in ROUND_TIMES_S if span <= 120 or s % 60 == 0]  # whole minutes beyond two minutes
        axis.set_major_locator(MultipleLocator(next((s for s in steps if span / s <= most), steps[-1])))
    axis.set_major_formatter(time_tick(fmt))


def time_tick(fmt: Any) -> FuncFormatter:
    """Tick labels through a time formatter (``1m 05s``, ``42.1 ms``), with a plain ``0`` at zero."""
    return FuncFormatter(lambda value, _: "0" if value == 0 else fmt(value))


def usd_tick(value: float, _position: Any = None) -> str:
    """Cost tick labels that keep small amounts apart (``$0.0007``, not ``<$0.01``)."""
    if value <= 0:
        return "$0"
    return f"${value:.2g}" if value < 1 else format_usd(value)
