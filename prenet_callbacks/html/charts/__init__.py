"""The page's charts, drawn with matplotlib (the ``html`` extra): each function takes a report dict
and returns a `matplotlib.figure.Figure`, or None when the report has nothing to draw.

Figures are built with the object API (no pyplot, no global state), so drawing is safe inside a
training process and leaves the user's own plots alone.
"""
from __future__ import annotations

from prenet_callbacks.html.charts.breakdown import breakdown_chart
from prenet_callbacks.html.charts.hardware import hardware_chart
from prenet_callbacks.html.charts.history import history_chart
from prenet_callbacks.html.charts.layers import layers_chart
from prenet_callbacks.html.charts.style import drawing

__all__ = ["breakdown_chart", "drawing", "hardware_chart", "history_chart", "layers_chart"]
