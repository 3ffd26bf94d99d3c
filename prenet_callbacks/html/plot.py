"""A small SVG plotter for the page's four charts: axes, bars, lines, bands, markers, error bars, text.

The page used to be drawn with matplotlib, which took about two CPU-seconds per page (import and
layout) that a training run paid for twice, once while it trained and once after its last step. A
page's charts are a few dozen shapes, so they are written as SVG elements straight from the data:
a page takes milliseconds, needs no extra package and runs in the caller's thread.

Coordinates: an `Axes` maps data to pixels through two `Scale`\\ s (linear or logarithmic); every
shape it draws is clipped to its plot area. Text stays text (selectable, searchable) and ids carry
the chart's prefix, so several charts on one page never share one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape
from typing import Callable, Sequence

FONT = "system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif"
DARK, GRID, SPINE = "#333333", "#e6e6e6", "#999999"
WIDTH = 950.0   # the page's figures are this many pixels wide (they scale to the page with viewBox)


def text_width(text: str, size: float) -> float:
    """An estimate of a label's width in pixels (average glyph of a sans-serif face): enough to lay out margins."""
    return len(text) * size * 0.56


@dataclass
class Scale:
    """Data ``low .. high`` onto pixels ``start .. end`` (``end < start`` for a y axis that grows upwards)."""

    low: float
    high: float
    start: float
    end: float
    log: bool = False

    def __post_init__(self) -> None:
        if self.log:
            self.low, self.high = max(self.low, 1e-30), max(self.high, 1e-30)
        if self.high == self.low:   # one value: give it room (a scale may run backwards, high < low)
            self.high = self.low * 2 if self.log else self.low + 1.0

    def __call__(self, value: float) -> float:
        if self.log:
            share = (math.log10(max(value, 1e-30)) - math.log10(self.low)) / (math.log10(self.high) - math.log10(self.low))
        else:
            share = (value - self.low) / (self.high - self.low)
        return self.start + share * (self.end - self.start)

    def holds(self, value: float) -> bool:
        low, high = min(self.low, self.high), max(self.low, self.high)
        return low - 1e-9 * abs(low) <= value <= high + 1e-9 * abs(high)


def nice_ticks(low: float, high: float, most: int = 6) -> list[float]:
    """Ticks at 1, 2 or 5 times a power of ten, at most `most` of them, between `low` and `high`."""
    span = max(high - low, 1e-12)
    base = 10 ** math.floor(math.log10(span / most))
    step = next((k * base for k in (1, 2, 5, 10) if span / (k * base) <= most), 10 * base)
    first = math.ceil(low / step - 1e-9)
    return [round(k * step, 12) for k in range(first, int(math.floor(high / step + 1e-9)) + 1)]


def log_ticks(low: float, high: float) -> list[float]:
    """Powers of ten between `low` and `high`, with 2x and 5x each when the span is under two decades."""
    subs = (1.0, 2.0, 5.0) if high / low < 100 else (1.0,)
    ticks = [k * 10.0 ** e for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1) for k in subs]
    return [t for t in ticks if low <= t * (1 + 1e-9) and t <= high * (1 + 1e-9)]


@dataclass
class LegendEntry:
    label: str
    color: str
    kind: str = "line"          # "line", "patch" or a marker shape ("o", "D", "X", "s", "ring")
    dash: str | None = None
    opacity: float = 1.0


@dataclass
class Chart:
    """One SVG figure: a list of elements, a height in pixels, and ids prefixed with `prefix`."""

    prefix: str
    height: float
    width: float = WIDTH
    elements: list[str] = field(default_factory=list)
    hatched: bool = False   # the hatch pattern is defined (once a chart)
    _ids: int = 0

    def new_id(self, kind: str) -> str:
        self._ids += 1
        return f"{self.prefix}-{kind}{self._ids}"

    def text(self, x: float, y: float, text: str, *, size: float = 11, anchor: str = "start", color: str = DARK,
             bold: bool = False, rotate: float | None = None, clip: str | None = None) -> None:
        attributes = f'x="{x:.1f}" y="{y:.1f}" font-size="{size:g}" text-anchor="{anchor}" fill="{color}"'
        attributes += ' dominant-baseline="central"' + (' font-weight="bold"' if bold else "")
        if rotate is not None:
            attributes += f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"'
        if clip:
            attributes += f' clip-path="url(#{clip})"'
        self.elements.append(f"<text {attributes}>{escape(text, quote=False)}</text>")

    def svg(self, title: str) -> str:
        return (f'<svg viewBox="0 0 {self.width:.0f} {self.height:.0f}" role="img" aria-label="{escape(title)}" '
                f'font-family="{FONT}">' + "".join(self.elements) + "</svg>")


class Axes:
    """A plot area of `chart` (pixels ``left, top, right, bottom``) with an x and a y `Scale`."""

    def __init__(self, chart: Chart, box: tuple[float, float, float, float], x: tuple[float, float],
                 y: tuple[float, float], *, x_log: bool = False, y_log: bool = False) -> None:
        self.chart = chart
        self.left, self.top, self.right, self.bottom = box
        self.x = Scale(x[0], x[1], self.left, self.right, x_log)
        self.y = Scale(y[0], y[1], self.bottom, self.top, y_log)
        self.clip = chart.new_id("clip")
        chart.elements.append(f'<clipPath id="{self.clip}"><rect x="{self.left - 6:.1f}" y="{self.top - 6:.1f}" '
                              f'width="{self.right - self.left + 12:.1f}" height="{self.bottom - self.top + 12:.1f}"/>'
                              "</clipPath>")
        self.legend_entries: list[LegendEntry] = []
        self._labels: set[str] = set()
        self.grid_x = self.grid_y = True   # light lines at the ticks, behind the data (`frame` may turn one off)

    # -- what a chart draws, in data coordinates --------------------------------------------------------
    def _add(self, element: str) -> None:
        self.chart.elements.append(element.replace("/>", f' clip-path="url(#{self.clip})"/>', 1))

    def _legend(self, label: str | None, entry: LegendEntry) -> None:
        if label and label not in self._labels:
            self._labels.add(label)
            entry.label = label
            self.legend_entries.append(entry)

    def line(self, xs: Sequence[float], ys: Sequence[float], color: str, *, width: float = 1.5,
             dash: str | None = None, label: str | None = None) -> None:
        points = " ".join(f"{self.x(x):.1f},{self.y(y):.1f}" for x, y in zip(xs, ys))
        self._add(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="{width:g}"'
                  + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        self._legend(label, LegendEntry("", color, "line", dash))

    def band(self, xs: Sequence[float], lows: Sequence[float], highs: Sequence[float], color: str, *,
             opacity: float = 0.18, label: str | None = None) -> None:
        upper = [f"{self.x(x):.1f},{self.y(y):.1f}" for x, y in zip(xs, highs)]
        lower = [f"{self.x(x):.1f},{self.y(y):.1f}" for x, y in zip(reversed(xs), reversed(lows))]
        self._add(f'<polygon points="{" ".join(upper + lower)}" fill="{color}" fill-opacity="{opacity:g}"/>')
        self._legend(label, LegendEntry("", color, "patch", opacity=opacity))

    def markers(self, xs: Sequence[float], ys: Sequence[float], color: str, *, shape: str = "o", size: float = 6,
                label: str | None = None) -> None:
        for x, y in zip(xs, ys):
            self._add(marker(shape, self.x(x), self.y(y), size, color))
        self._legend(label, LegendEntry("", color, shape))

    def error_bars(self, x: float, y: float, color: str, *, x_range: tuple[float, float] | None = None,
                   y_range: tuple[float, float] | None = None, cap: float = 3) -> None:
        px, py = self.x(x), self.y(y)
        if x_range is not None:
            a, b = self.x(x_range[0]), self.x(x_range[1])
            self._add(f'<path d="M{a:.1f} {py:.1f}H{b:.1f}M{a:.1f} {py - cap:.1f}V{py + cap:.1f}'
                      f'M{b:.1f} {py - cap:.1f}V{py + cap:.1f}" stroke="{color}" fill="none"/>')
        if y_range is not None:
            a, b = self.y(y_range[0]), self.y(y_range[1])
            self._add(f'<path d="M{px:.1f} {a:.1f}V{b:.1f}M{px - cap:.1f} {a:.1f}H{px + cap:.1f}'
                      f'M{px - cap:.1f} {b:.1f}H{px + cap:.1f}" stroke="{color}" fill="none"/>')

    def bars(self, rows: Sequence[float], values: Sequence[float], colors: str | Sequence[str], *,
             lefts: Sequence[float] | None = None, height: float = 0.6, label: str | None = None,
             hatch: bool = False) -> None:
        """Horizontal bars: row ``r`` (a y value) spans ``r +- height/2``, from ``left`` to ``left + value``."""
        for index, (row, value) in enumerate(zip(rows, values)):
            left = lefts[index] if lefts is not None else 0.0
            x0, x1 = self.x(left), self.x(left + value)
            y0, y1 = self.y(row - height / 2), self.y(row + height / 2)
            color = colors if isinstance(colors, str) else colors[index % len(colors)]
            fill = f'url(#{self._hatch()})' if hatch else color
            self._add(f'<rect x="{min(x0, x1):.1f}" y="{min(y0, y1):.1f}" width="{abs(x1 - x0):.1f}" '
                      f'height="{abs(y1 - y0):.1f}" fill="{fill}"/>')
        if label:
            self._legend(label, LegendEntry("", colors if isinstance(colors, str) else colors[0], "hatch" if hatch
                                            else "patch"))

    def _hatch(self) -> str:
        name = f"{self.chart.prefix}-hatch"
        if not self.chart.hatched:
            self.chart.hatched = True
            self.chart.elements.insert(0, f'<pattern id="{name}" width="6" height="6" patternUnits="userSpaceOnUse" '
                                          'patternTransform="rotate(45)"><rect width="6" height="6" fill="white" '
                                          f'fill-opacity="0.55"/><path d="M0 0V6" stroke="{DARK}" stroke-width="1"/>'
                                          "</pattern>")
        return name

    def hline(self, y: float, color: str, *, start: float | None = None, end: float | None = None,
              dash: str | None = None, width: float = 1.5, label: str | None = None) -> None:
        x0 = self.left if start is None else self.x(start)
        x1 = self.right if end is None else self.x(end)
        self._add(f'<line x1="{x0:.1f}" y1="{self.y(y):.1f}" x2="{x1:.1f}" y2="{self.y(y):.1f}" stroke="{color}" '
                  f'stroke-width="{width:g}"' + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        self._legend(label, LegendEntry("", color, "line", dash))

    def vline(self, x: float, color: str, *, dash: str | None = None, label: str | None = None) -> None:
        self._add(f'<line x1="{self.x(x):.1f}" y1="{self.top:.1f}" x2="{self.x(x):.1f}" y2="{self.bottom:.1f}" '
                  f'stroke="{color}"' + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        self._legend(label, LegendEntry("", color, "line", dash))

    def label(self, x: float, y: float, text: str, *, dx: float = 0, dy: float = 0, size: float = 9,
              color: str = DARK, bold: bool = False, anchor: str = "start") -> None:
        """Text at a data point, offset by ``dx, dy`` pixels (``dy`` > 0 is up, as in matplotlib's offsets)."""
        self.chart.text(self.x(x) + dx, self.y(y) - dy, text, size=size, color=color, bold=bold, anchor=anchor,
                        clip=self.clip)

    def note(self, share_x: float, share_y: float, text: str, *, size: float = 10, anchor: str = "middle") -> None:
        """Text at a place of the plot area given as shares of its width and height (0, 0: bottom left)."""
        self.chart.text(self.left + share_x * (self.right - self.left), self.bottom - share_y * (self.bottom - self.top),
                        text, size=size, anchor=anchor)

    # -- frame, ticks, titles and legend --------------------------------------------------------------
    def frame(self, *, grid_x: bool = True, grid_y: bool = True) -> None:
        """The left and bottom spines (no top and right frame)."""
        self.chart.elements.append(f'<path d="M{self.left:.1f} {self.top:.1f}V{self.bottom:.1f}H{self.right:.1f}" '
                                   f'stroke="{SPINE}" fill="none"/>')
        self.grid_x, self.grid_y = grid_x, grid_y

    def x_ticks(self, ticks: Sequence[float], format_tick: Callable[[float], str], *, labels: bool = True) -> None:
        self._ticks("x", ticks, format_tick if labels else None)

    def y_ticks(self, ticks: Sequence[float], format_tick: Callable[[float], str]) -> None:
        self._ticks("y", ticks, format_tick)

    def _ticks(self, axis: str, ticks: Sequence[float], format_tick: Callable[[float], str] | None) -> None:
        """Grid lines (behind the data) and labels (below the x axis, left of the y axis) at `ticks`."""
        scale, grid = (self.x, self.grid_x) if axis == "x" else (self.y, self.grid_y)
        for tick in (t for t in ticks if scale.holds(t)):
            at = scale(tick)
            x1, y1, x2, y2 = (at, self.top, at, self.bottom) if axis == "x" else (self.left, at, self.right, at)
            if grid:
                self.chart.elements.insert(0, f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                                              f'stroke="{GRID}"/>')
            if format_tick is not None:
                x, y, anchor = (at, self.bottom + 12, "middle") if axis == "x" else (self.left - 6, at, "end")
                self.chart.text(x, y, format_tick(tick), size=10, anchor=anchor)

    def row_labels(self, labels: Sequence[str], *, size: float = 10) -> None:
        for row, text in enumerate(labels):
            self.chart.text(self.left - 6, self.y(row), text, size=size, anchor="end")

    def title(self, text: str, *, size: float = 13) -> None:
        self.chart.text(self.left, self.top - 14, text, size=size)

    def x_label(self, text: str) -> None:
        self.chart.text((self.left + self.right) / 2, self.bottom + 30, text, size=11, anchor="middle")

    def y_label(self, text: str, offset: float = 58) -> None:
        self.chart.text(self.left - offset, (self.top + self.bottom) / 2, text, size=11, anchor="middle", rotate=-90)

    def legend(self, corner: str = "upper right", *, size: float = 10) -> None:
        """The entries drawn so far, stacked in a corner of the plot area ("upper/lower left/right")."""
        entries = self.legend_entries
        if not entries:
            return
        row = size * 1.5
        width = max(text_width(e.label, size) for e in entries) + 30
        x = self.right - width - 4 if corner.endswith("right") else self.left + 8
        y = self.top + 6 if corner.startswith("upper") else self.bottom - 6 - row * len(entries)
        self.chart.elements.append(f'<rect x="{x - 4:.1f}" y="{y:.1f}" width="{width + 4:.1f}" '
                                   f'height="{row * len(entries) + 4:.1f}" fill="white" fill-opacity="0.8"/>')
        for index, entry in enumerate(entries):
            cy = y + row * (index + 0.5) + 2
            self.chart.elements.append(_swatch(entry, x, cy, self.chart.prefix))
            self.chart.text(x + 26, cy, entry.label, size=size)


def marker(shape: str, x: float, y: float, size: float, color: str) -> str:
    """One marker: "o" circle, "D" diamond, "s" square, "X" cross, "ring" an open circle (recommended)."""
    r = size / 2
    if shape == "D":
        return (f'<path d="M{x:.1f} {y - r * 1.2:.1f}L{x + r:.1f} {y:.1f}L{x:.1f} {y + r * 1.2:.1f}L{x - r:.1f} '
                f'{y:.1f}Z" fill="{color}"/>')
    if shape == "s":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{size:.1f}" height="{size:.1f}" fill="{color}"/>'
    if shape == "X":
        return (f'<path d="M{x - r:.1f} {y - r:.1f}L{x + r:.1f} {y + r:.1f}M{x - r:.1f} {y + r:.1f}L{x + r:.1f} '
                f'{y - r:.1f}" stroke="{color}" stroke-width="2.5"/>')
    if shape == "ring":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="none" stroke="{color}" stroke-width="2"/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{color}"/>'


def _swatch(entry: LegendEntry, x: float, y: float, prefix: str) -> str:
    if entry.kind == "line":
        return (f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x + 20:.1f}" y2="{y:.1f}" stroke="{entry.color}" '
                'stroke-width="1.5"' + (f' stroke-dasharray="{entry.dash}"' if entry.dash else "") + "/>")
    if entry.kind in ("patch", "hatch"):
        fill = f"url(#{prefix}-hatch)" if entry.kind == "hatch" else entry.color
        return (f'<rect x="{x:.1f}" y="{y - 5:.1f}" width="20" height="10" fill="{fill}" '
                f'fill-opacity="{entry.opacity:g}"/>')
    return marker(entry.kind, x + 10, y, 12 if entry.kind == "ring" else 7, entry.color)
