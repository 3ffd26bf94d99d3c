"""The slowest layers (time, FLOPs, FLOP/byte) beside a per-layer roofline on the current device."""
from __future__ import annotations

import textwrap
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from prenet_callbacks.html import view
from prenet_callbacks.html.charts.style import BLUE, DARK, ORANGE, RED, log_scale, new_figure, tidy, time_axis
from prenet_callbacks.units import format_count, format_step_time

TOP_LAYERS = 12


def layers_chart(data: dict[str, Any]) -> Figure | None:
    """The slowest layers (forward + backward per optimizer step, with FLOPs and FLOP/byte), beside
    their achieved FLOP/s against arithmetic intensity under the current device's roofline."""
    rows = view.layers(data)[:TOP_LAYERS]
    if not rows:
        return None
    figure = new_figure(0.3 * len(rows) + 1.9)
    bars, roofline = figure.subplots(1, 2, width_ratios=[1.5, 1])
    _layer_bars(bars, rows)
    _roofline(roofline, rows, data)
    return figure


def _layer_bars(axis: Any, rows: list[view.Layer]) -> None:
    tidy(axis)
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
    time_axis(axis.xaxis, format_step_time, 0, right * 1.6, most=4)
    axis.set_xlabel("time per optimizer step")
    axis.legend(loc="lower right", fontsize=8, frameon=False)
    axis.set_title("Slowest layers (measured)", loc="left", fontsize=11)


def _roofline(axis: Any, rows: list[view.Layer], data: dict[str, Any]) -> None:
    tidy(axis)
    points = [(i + 1, layer.intensity, layer.achieved_flops_s) for i, layer in enumerate(rows)
              if layer.intensity and layer.achieved_flops_s]
    roof, why = view.roof(data)
    if points:
        axis.scatter([p[1] for p in points], [p[2] for p in points], s=22, color=BLUE, zorder=3, label="layer")
        for rank, x, y in points:
            axis.annotate(str(rank), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
        xs, ys = [p[1] for p in points], [p[2] for p in points]
        low, high = min(xs) / 3, max(xs) * 3
        if roof is not None:
            ridge = roof.peak_flops_s / roof.bandwidth_bytes_s
            low, high = min(low, ridge / 10), max(high, ridge * 10)
            ys.append(roof.peak_flops_s)
            grid = [low * (high / low) ** (k / 60) for k in range(61)]
            axis.plot(grid, [min(roof.peak_flops_s, roof.bandwidth_bytes_s * x) for x in grid], color=RED,
                      linewidth=1.4, label=f"roof: {format_count(roof.peak_flops_s)}FLOP/s, "
                                           f"{roof.bandwidth_bytes_s / 1e9:,.0f} GB/s")
        log_scale(axis.xaxis, FuncFormatter(lambda v, _: f"{v:g}"), high / low)
        log_scale(axis.yaxis, FuncFormatter(lambda v, _: f"{format_count(v)}FLOP/s"), max(ys) / min(ys))
        axis.set_xlim(low, high)
        axis.legend(loc="lower right", fontsize=7, frameon=False)
    else:
        axis.text(0.5, 0.5, "no FLOP counts for these layers", ha="center", va="center", transform=axis.transAxes)
    axis.set_xlabel("arithmetic intensity (FLOP per byte)")
    if roof:
        axis.set_title(f"Roofline on {roof.device}", loc="left", fontsize=11)
    else:
        axis.set_title("Achieved FLOP/s\n" + "\n".join(textwrap.wrap(why, 40)), loc="left", fontsize=8)
