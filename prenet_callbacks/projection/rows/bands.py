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

The band is symmetric; the error need not be. ``band_table.json``'s ``bias`` holds, per precision and architecture
generation, the median signed error of the absolute device-bound steps and each set's and each GPU's own median.
Where at least `BIAS_MIN_SETS` sets and `MIN_ROWS` steps, every set and every GPU, err the same way and the median is
at least `BIAS_MIN` off, a projected row of that generation says so (`bias_note`): a disclosure of what the evaluation
measured, not a correction of the prediction (issue 38 allows whole steps to move the predictor only through a
mechanism, and none is known yet). A row anchored on a measured GPU of the same generation carries no note (the
generation's error is in both sides of its ratio), nor does a host-bound row, whose time is the host model's.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from prenet_callbacks.units import plural

TABLE_PATH = Path(__file__).with_name("band_table.json")
MIN_ROWS = 8
BIAS_MIN_SETS = 3     # evaluation sets that must each err the same way before a row says so
BIAS_MIN = 0.10       # the smallest median signed error a row is told of
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


def build_bias(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{"half/hopper": {"n", "median_error", "sets": {set: median}, "gpus": {gpu: median}}}`` from the absolute
    device-bound rows (``half``, ``generation``, ``set``, ``gpu``, ``host_bound``, ``log_error``): signed errors,
    predicted / measured - 1. Host-bound steps are left out: their time is the host model's, not the generation's."""
    cells: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["method"] == "absolute" and row.get("generation") and not row.get("host_bound"):
            cells.setdefault(f"{'half' if row['half'] else 'fp32'}/{row['generation']}", []).append(row)
    out = {}
    for key, members in sorted(cells.items()):
        out[key] = {"n": len(members), "median_error": _median_error(members),
                    "sets": _medians_by(members, "set"), "gpus": _medians_by(members, "gpu")}
    return out


def _median_error(rows: list[dict[str, Any]]) -> float:
    return round(float(np.median([math.expm1(float(r["log_error"])) for r in rows])), 4)


def _medians_by(rows: list[dict[str, Any]], field: str) -> dict[str, float]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row.get(field)), []).append(row)
    return {name: _median_error(members) for name, members in sorted(groups.items())}


def width_from(table: dict[str, dict[str, Any]], precision_half: bool, method: str, matrix_units: bool,
               host_bound: bool) -> float:
    """The log half-width for a regime: the finest cell with at least `MIN_ROWS` rows."""
    for key in regime_keys(precision_half, method, matrix_units, host_bound):
        cell = table.get(key)
        if cell and cell["n"] >= MIN_ROWS:
            return float(cell["width"])
    return _FALLBACK_WIDTH


@lru_cache(maxsize=1)
def _shipped_document() -> dict[str, Any]:
    """``band_table.json`` as committed, read once; empty when it is missing or unreadable."""
    try:
        document = json.loads(TABLE_PATH.read_text())
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def shipped_table() -> dict[str, dict[str, Any]]:
    """The committed table's cells; empty when it is missing (the fallback width applies)."""
    return _shipped_document().get("cells") or {}


def shipped_bias() -> dict[str, dict[str, Any]]:
    """The committed table's ``bias`` cells; empty when missing."""
    return _shipped_document().get("bias") or {}


def bias_note(precision_half: bool, target: Any, anchor: Any = None, host_bound: bool = False,
              table: dict[str, dict[str, Any]] | None = None) -> str | None:
    """What the evaluation sets measured for the target's generation in this precision, when at least
    `BIAS_MIN_SETS` sets and `MIN_ROWS` steps, every set and every GPU, erred the same way by a median of at least
    `BIAS_MIN`. None otherwise, for a row anchored on a measured GPU of the target's generation, and for a
    host-bound row (the cells hold device-bound steps)."""
    # imported here, as `predictor_source` imports the predictor: the package loads its models on first use only
    from predictor_models.predictor.dominance import generation

    gen = generation(target)
    if host_bound or not gen or (anchor is not None and generation(anchor) == gen):
        return None
    precision = "half" if precision_half else "fp32"
    cell = (shipped_bias() if table is None else table).get(f"{precision}/{gen}")
    if not cell or cell["n"] < MIN_ROWS or len(cell["sets"]) < BIAS_MIN_SETS:
        return None
    median = float(cell["median_error"])
    # every set and every GPU of the cell the same way: a generation whose GPUs err both ways (the Ada cards: the
    # L4 and RTX 4090 priced too slow, the RTX 6000 Ada too fast) has no direction to tell
    agree = [*cell["sets"].values(), *(cell.get("gpus") or {}).values()]
    if abs(median) < BIAS_MIN or any(m * median <= 0 for m in agree):
        return None
    # measured = predicted / (1 + median): the share of the prediction the measured step took more (or less)
    share = abs(1.0 / (1.0 + median) - 1.0)
    words = "longer" if median < 0 else "less time"
    gpus, half = len(cell.get("gpus") or {}), "upper" if median < 0 else "lower"
    return (f"{'half-precision' if precision_half else 'fp32'} steps on {gen.title()} GPUs took {share:.0%} {words} "
            f"than predicted on the project's evaluation sets (median of {cell['n']} steps on {plural(gpus, 'GPU')} in "
            f"{len(cell['sets'])} sets, each the same way): expect the {half} half of the band")


def regime_width(precision_half: bool, method: str, accelerator: Any, host_bound: bool) -> float:
    return width_from(shipped_table(), precision_half, method, has_matrix_units(accelerator), host_bound)


def widen(step: float, low: float, high: float, width: float) -> tuple[float, float]:
    """The band (low, high) around `step`, at least ``step / e^width .. step x e^width``."""
    return min(low, step * math.exp(-width)), max(high, step * math.exp(width))


def _quantile(values: list[float], q: float) -> float:
    return float(np.quantile(values, q)) if values else _FALLBACK_WIDTH
