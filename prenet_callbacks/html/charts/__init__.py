"""The page's charts: each function takes a report dict and returns a `plot.Chart` (SVG), or None
when the report has nothing to draw. No plotting package is imported: see `prenet_callbacks.html.plot`."""
from __future__ import annotations

from prenet_callbacks.html.charts.breakdown import breakdown_chart
from prenet_callbacks.html.charts.hardware import hardware_chart
from prenet_callbacks.html.charts.history import history_chart
from prenet_callbacks.html.charts.layers import layers_chart

__all__ = ["breakdown_chart", "hardware_chart", "history_chart", "layers_chart"]
