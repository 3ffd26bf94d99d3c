"""The page's SVG plotter: scales, ticks and the shapes it writes (the charts' geometry)."""
from __future__ import annotations

import math

from prenet_callbacks.html.plot import Axes, Chart, Scale, log_ticks, nice_ticks


def test_scales_map_both_ways_and_log_scales_by_decade():
    up = Scale(0.0, 10.0, 300.0, 100.0)         # a y axis: 0 at the bottom (pixel 300)
    assert up(0.0) == 300.0 and up(10.0) == 100.0 and up(5.0) == 200.0
    rows = Scale(4.5, -0.5, 300.0, 100.0)       # bar rows: row 0 on top
    assert rows(-0.5) == 100.0 and rows(0) < rows(4) and rows.holds(2) and not rows.holds(5)
    log = Scale(1.0, 1000.0, 0.0, 300.0, log=True)
    assert math.isclose(log(10.0), 100.0) and math.isclose(log(100.0), 200.0)
    assert Scale(3.0, 3.0, 0.0, 1.0).high > 3.0  # one value still gets a span


def test_ticks_are_round_and_inside_the_range():
    assert nice_ticks(0, 190, 8) == [0, 50, 100, 150] and nice_ticks(0, 190, 10) == [20 * k for k in range(10)]
    assert nice_ticks(0.0, 0.013, 5) == [0.0, 0.005, 0.01]
    assert log_ticks(0.05, 2000) == [0.1, 1.0, 10.0, 100.0, 1000.0]
    assert log_ticks(0.3, 12) == [0.5, 1.0, 2.0, 5.0, 10.0]


def test_shapes_are_clipped_to_their_axes_and_ids_carry_the_prefix():
    chart = Chart("demo", 200)
    axes = Axes(chart, (50, 20, 400, 180), (0, 10), (0, 1))
    axes.line([0, 5, 10], [0, 1, 0.5], "#000", label="a line")
    axes.bars([0.5], [3], "#111", hatch=True, label="hatched")
    axes.legend()
    svg = chart.svg("a <title>")
    assert svg.startswith('<svg viewBox="0 0 950 200"') and 'aria-label="a &lt;title&gt;"' in svg
    assert 'points="50.0,180.0 225.0,20.0 400.0,100.0"' in svg
    assert svg.count(f'clip-path="url(#{axes.clip})"') == 2 and axes.clip.startswith("demo-")
    assert 'id="demo-hatch"' in svg and ">a line</text>" in svg and ">hatched</text>" in svg
