"""Bands that come from measured error: how far projections of each regime missed on our evaluation sets.

A row's band first comes from the predictor (each op class's held-out error, host time +-30%). That
is a statement about single ops; a whole step adds what no op model sees (host effects, library
choices, the op stream itself). So the band is also never narrower than the error measured for the
row's *regime* on the project's evaluation sets (``benchmarks/band_table.py`` writes
``band_table.json`` from the committed results of ``benchmarks/projection_accuracy.py`` and
``benchmarks/estimate_h200.py``):

- precision: ``fp32`` (32-true, 64-true) or ``half`` (mixed and true half precision);
- method: ``absolute`` (predicted from the ops alone) or ``anchored`` (scaled from a measured GPU);
- the target's generation: ``matrix`` (tensor or matrix cores: Volta and later, CDNA) or ``vector``
  (Kepler, Pascal), whose libraries the predictor's data barely cover;
- host-bound or not (the host model's share is the least certain part).

Each cell holds the 90th percentile of ``|log(predicted / measured)|`` over the measured steps of that
regime (a cell with fewer than `MIN_ROWS` rows falls back to a coarser one: without host-bound, then
without the generation, then the method alone, then every measured step: a regime never measured takes
the error of all of them, not a guess).
The band is multiplicative, ``step / e^w .. step x e^w``, so it is as wide above as below in ratio.
``band_table.json`` also records, per evaluation set, the coverage of bands built *without* that set
(a test of the rule on data it was not made from), which docs/projection.md reports.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

TABLE_PATH = Path(__file__).with_name("band_table.json")
MIN_ROWS = 8
ALL_ROWS = "all"
QUANTILE = 0.9
# Before band_table.json exists: the flat band the projection used to show.
_FALLBACK_WIDTH = math.log1p(0.2)


def has_matrix_units(accelerator: Any) -> bool:
    """Tensor or matrix cores: NVIDIA from compute capability 7.0 (Volta), AMD CDNA, TPUs."""
    kind = str(getattr(accelerator, "kind", "gpu"))
    if kind == "tpu":
        return True
    vendor = str(getattr(accelerator, "vendor", "")).lower()
    if vendor == "nvidia":
        try:
            return float(str(accelerator.compute_capability)) >= 7.0
        except (TypeError, ValueError):
            return False
    return "cdna" in str(getattr(accelerator, "architecture", "")).lower()


def regime_keys(precision_half: bool, method: str, matrix_units: bool, host_bound: bool) -> tuple[str, ...]:
    """The regime's cells, finest first: precision/method/generation/host, then coarser."""
    precision = "half" if precision_half else "fp32"
    method = "anchored" if method.startswith("anchored") else "absolute"
    generation = "matrix" if matrix_units else "vector"
    host = "host" if host_bound else "device"
    return (f"{precision}/{method}/{generation}/{host}", f"{precision}/{method}/{generation}",
            f"{precision}/{method}", method, ALL_ROWS)


def build_table(rows: list[dict[str, Any]], quantile: float = QUANTILE) -> dict[str, dict[str, Any]]:
    """``{key: {"width": log half-width, "n": rows}}`` for every cell, from rows with ``half``, ``method``,
    ``matrix_units``, ``host_bound``, ``log_error`` (log(predicted/measured))."""
    cells: dict[str, list[float]] = {}
    for row in rows:
        for key in regime_keys(row["half"], row["method"], row["matrix_units"], row["host_bound"]):
            cells.setdefault(key, []).append(abs(float(row["log_error"])))
    return {key: {"width": round(_quantile(values, quantile), 4), "n": len(values)} for key, values in sorted(cells.items())}


def width_from(table: dict[str, dict[str, Any]], precision_half: bool, method: str, matrix_units: bool,
               host_bound: bool) -> float:
    """The log half-width for a regime: the finest cell with at least `MIN_ROWS` rows."""
    for key in regime_keys(precision_half, method, matrix_units, host_bound):
        cell = table.get(key)
        if cell and cell["n"] >= MIN_ROWS:
            return float(cell["width"])
    return _FALLBACK_WIDTH


@lru_cache(maxsize=1)
def shipped_table() -> dict[str, dict[str, Any]]:
    """The committed table (``band_table.json``); empty when it is missing (the fallback width applies)."""
    try:
        return json.loads(TABLE_PATH.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return {}


def regime_width(precision_half: bool, method: str, accelerator: Any, host_bound: bool) -> float:
    return width_from(shipped_table(), precision_half, method, has_matrix_units(accelerator), host_bound)


def widen(step: float, low: float, high: float, width: float) -> tuple[float, float]:
    """The band (low, high) around `step`, at least ``step / e^width .. step x e^width``."""
    return min(low, step * math.exp(-width)), max(high, step * math.exp(width))


def _quantile(values: list[float], q: float) -> float:
    return float(np.quantile(values, q)) if values else _FALLBACK_WIDTH
