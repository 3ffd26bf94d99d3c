"""Loaders that turn public timing measurements into `Sample`s (an `OpSpec`, a device, seconds).

One module per source; each documents what it keeps and what it excludes (and why) in its
docstring and counts exclusions in `LoadReport`. `load_all` gathers them for training/evaluation.
"""
from __future__ import annotations

from .common import LoadReport, Sample
from .registry import SOURCES, load_all
from .rows import RowsError, read_rows, write_rows

__all__ = ["LoadReport", "RowsError", "Sample", "SOURCES", "load_all", "read_rows", "write_rows"]
