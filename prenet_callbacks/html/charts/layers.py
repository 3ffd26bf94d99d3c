"""The slowest layers (time, FLOPs, FLOP/byte) beside a per-layer roofline on the current device."""
from __future__ import annotations

import textwrap
from typing import Any

from prenet_callbacks.html import view
from prenet_callbacks.html.charts.style import BLUE, DARK, INCH, ORANGE, RED, time_tick, time_ticks, value_ticks
from prenet_callbacks.html.plot import WIDTH, Axes, Chart, text_width
from prenet_callbacks.units import format_count, format_step_time

TOP_LAYERS = 12
_NAME_CHARS = 44   # a longer layer label keeps its tail: the leaf's name says more than the root's


def layers_chart(data: dict[str, Any]) -> Chart | None:
    """The slowest layers (forward + backward per optimizer step, with FLOPs and FLOP/byte), beside
    their achieved FLOP/s against arithmetic intensity under the current device's roofline."""
    rows = view.layers(data)[:TOP_LAYERS]
    if not rows:
        return None
    chart = Chart("layers", (0.3 * len(rows) + 1.9) * INCH)
    labels = [_short(f"{i + 1}. {layer.name} ({layer.module_type})") for i, layer in enumerate(rows)]
    split = WIDTH * 0.6
    left = 10 + max(text_width(label, 9) for label in labels)
    right = max(layer.seconds for layer in rows) * 1.6
    _layer_bars(Axes(chart, (left, 34.0, split - 20, chart.height - 44), (0.0, right), (len(rows) - 0.5, -0.5)),
                rows, labels)
    _roofline(chart, (split + 70, 34.0, WIDTH - 12, chart.height - 44), rows, data)
    return chart


def _short(label: str) -> str:
    return label if len(label) <= _NAME_CHARS else "…" + label[-(_NAME_CHARS - 1):]


def _layer_bars(axes: Axes, rows: list[view.Layer], labels: list[str]) -> None:
    axes.frame(grid_y=False)
    axes.x_ticks(time_ticks(0, axes.x.high, most=4), time_tick(format_step_time))
    forward = [layer.forward_s for layer in rows]
    axes.bars(range(len(rows)), forward, BLUE, height=0.65, label="forward")
    axes.bars(range(len(rows)), [layer.backward_s for layer in rows], ORANGE, lefts=forward, height=0.65,
              label="backward")
    axes.row_labels(labels, size=9)
    for row, layer in enumerate(rows):
        intensity = "—" if layer.intensity is None else f"{layer.intensity:.1f}"
        axes.label(layer.seconds, row, f"{format_count(layer.flops)}FLOP, {intensity} FLOP/B", dx=4, size=8)
    axes.x_label("time per optimizer step")
    axes.legend("lower right", size=9)
    axes.title("Slowest layers (measured)")


def _roofline(chart: Chart, box: tuple[float, float, float, float], rows: list[view.Layer],
              data: dict[str, Any]) -> None:
    points = [(i + 1, layer.intensity, layer.achieved_flops_s) for i, layer in enumerate(rows)
              if layer.intensity and layer.achieved_flops_s]
    roof, why = view.roof(data)
    if not points:
        axes = Axes(chart, box, (0.0, 1.0), (0.0, 1.0))
        axes.frame()
        axes.note(0.5, 0.5, "no FLOP counts for these layers")
    else:
        xs, ys = [p[1] for p in points], [p[2] for p in points]
        low, high = min(xs) / 3, max(xs) * 3
        if roof is not None:
            ridge = roof.peak_flops_s / roof.bandwidth_bytes_s
            low, high = min(low, ridge / 10), max(high, ridge * 10)
            ys.append(roof.peak_flops_s)
        axes = Axes(chart, box, (low, high), (min(ys) / 2, max(ys) * 2), x_log=True, y_log=True)
        axes.frame()
        axes.x_ticks(value_ticks(low, high, log=True), lambda v: f"{v:g}")
        axes.y_ticks(value_ticks(min(ys) / 2, max(ys) * 2, log=True), lambda v: f"{format_count(v)}FLOP/s")
        if roof is not None:
            grid = [low * (high / low) ** (k / 60) for k in range(61)]
            axes.line(grid, [min(roof.peak_flops_s, roof.bandwidth_bytes_s * x) for x in grid], RED, width=1.4,
                      label=f"roof: {format_count(roof.peak_flops_s)}FLOP/s, "
                            f"{roof.bandwidth_bytes_s / 1e9:,.0f} GB/s")
        axes.markers([p[1] for p in points], [p[2] for p in points], BLUE, size=6, label="layer")
        for rank, x, y in points:
            axes.label(x, y, str(rank), dx=4, dy=4, size=8, color=DARK)
        axes.legend("lower right", size=9)
    axes.x_label("arithmetic intensity (FLOP per byte)")
    if roof:
        axes.title(f"Roofline on {roof.device}")
    else:
        for line, text in enumerate(["Achieved FLOP/s", *textwrap.wrap(why, 48)][:3]):
            chart.text(box[0], 8 + 11 * line, text, size=9)
