"""Time that never falls as a streaming op's work grows, for every size: its family priced on one grid of sizes.

A *family* is a set of ops alike in everything but one work dimension (a pointwise op's elements, a norm's rows),
their FLOPs and bytes proportional to it (`GRID_DIMS`). The family is priced at the sizes ``2**(j / STEPS_PER_OCTAVE)``,
j = 0, 1, ..., up to its largest member; those times are made non-decreasing along the grid (a running maximum: a
larger op's kernel can always do a smaller one's work); and each member's time is their interpolation at its size,
linear in log size and log time. A piecewise-linear interpolation of a non-decreasing sequence does not decrease,
so no member is ever predicted faster than a smaller one, whatever their sizes. The work ladder it replaces
(`monotone.py`) held only sizes a power of two apart, and priced each op's own halvings: a 500-layer step's ~100
distinct adds and norms were ~1,000 rungs, where their grids are a few hundred rows shared by every member.

The interpolation never goes below the roofline: within a family the bound is ``launch + c * size``, whose log is
convex in log size, so a chord between two grid times (each at or above its bound) lies above it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .optable import _DIM_INDEX, OpColumns

# The dimension each streaming class grows along (the work a step's batch and sequence scale).
GRID_DIMS = {"elementwise": "numel", "norm": "rows"}
STEPS_PER_OCTAVE = 2
RATIO_STEPS = 32        # FLOPs and bytes per unit of work that differ by more than a 32nd of an octave: another family


@dataclass(frozen=True)
class WorkGrid:
    """The grid rows of every family met, and where each held op reads them.

    ``cols``: the grid's rows, family after family, each from size 1 up; ``held``: the ops (rows of the columns
    given to `work_grid`) priced on it; per held op, ``lower``/``upper`` (grid rows around its size) and ``weight``
    (its place between them, 0 at ``lower``); ``family_starts``: each family's first grid row."""

    cols: OpColumns
    held: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    weight: np.ndarray
    family_starts: np.ndarray

    def held_times(self, grid_times: np.ndarray, own_bound: np.ndarray) -> np.ndarray:
        """``(held ops, devices)`` times from the grid's ``(grid rows, devices)`` times, never below the held ops' own
        bounds ``own_bound`` (non-decreasing in the work too: a member's fixed bytes, such as a norm's weights, are
        not in the grid's per-unit rate)."""
        running = _running_max(grid_times, self.family_starts)
        low, high = np.log(running[self.lower]), np.log(running[self.upper])
        return np.maximum(np.exp(low + self.weight[:, None] * (high - low)), own_bound)


def work_grid(cols: OpColumns, hold: np.ndarray, steps_per_octave: int | None = None) -> WorkGrid | None:
    """The grid for the ops of ``cols`` in `GRID_DIMS`' classes that ``hold`` marks (their dtype is held:
    `monotone.HELD_DTYPES`) and whose work dimension is at least 1; None when there are none."""
    steps_per_octave = steps_per_octave or STEPS_PER_OCTAVE
    size = np.zeros(len(cols))
    for op_class, dim in GRID_DIMS.items():
        rows = cols.op_class == op_class
        size[rows] = cols.dims[rows, _DIM_INDEX[dim]]
    held = np.flatnonzero((size >= 1.0) & np.asarray(hold, dtype=bool) & _is_grid_class(cols.op_class))
    if held.size == 0:
        return None
    s = size[held]
    family, rates = _families(cols, held, s)
    first = rates["source"]
    position = steps_per_octave * np.log2(s)                     # the op's place on the grid, in grid steps
    tops = np.zeros(first.size, dtype=np.int64)                  # each family's last grid point: at or above its ops
    np.maximum.at(tops, family, np.ceil(position - 1e-9).astype(np.int64))
    lengths = tops + 1
    starts = np.cumsum(lengths) - lengths
    owner = np.repeat(np.arange(first.size), lengths)             # the family of each grid row
    step = np.arange(lengths.sum()) - np.repeat(starts, lengths)  # 0, 1, ... within a family
    points = np.exp2(step / steps_per_octave)
    source = held[first][owner]                                   # a member whose columns the family's rows copy
    grid_dims = cols.dims[source].copy()
    work_index = np.array([_DIM_INDEX[GRID_DIMS[c]] for c in cols.op_class[held]])
    grid_dims[np.arange(owner.size), work_index[first][owner]] = points
    flops = rates["flops_per_unit"][owner] * points + rates["flops_fixed"][owner]
    moved = rates["bytes_per_unit"][owner] * points + rates["bytes_fixed"][owner]
    grid = OpColumns(cols.op_class[source], cols.mode[source], flops, moved, grid_dims, cols.heavy[source],
                     cols.softmax[source], cols.esize[source])
    lower = np.minimum(np.floor(position + 1e-9).astype(np.int64), tops[family])
    weight = np.clip(position - lower, 0.0, 1.0)
    upper = np.minimum(lower + 1, tops[family])
    weight = np.where(upper == lower, 0.0, weight)
    return WorkGrid(grid, held, starts[family] + lower, starts[family] + upper, weight, starts)


def _families(cols: OpColumns, held: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Each held op's family, and per family its FLOPs and bytes as ``per_unit * size + fixed`` and the member
    (``source``, an index into ``held``) whose other columns its grid rows copy.

    Ops alike in every column but the work dimension, FLOPs and bytes are one family when their FLOPs and bytes lie on
    one line in the size (a norm's weights and a bias add's bias are its fixed bytes): the grid then prices the same
    op at every size. Where they do not (an add whose second operand is broadcast beside one whose is not), ops are
    grouped by their FLOPs and bytes per unit of work, to within a 32nd of an octave, in proportion to the size."""
    dims = cols.dims[held].copy()
    work_index = np.array([_DIM_INDEX[GRID_DIMS[c]] for c in cols.op_class[held]])
    dims[np.arange(held.size), work_index] = 0.0
    codes = np.array([sorted(GRID_DIMS).index(c) for c in cols.op_class[held]], dtype=np.float64)
    alike = np.column_stack([codes, cols.mode[held], cols.heavy[held], cols.softmax[held], cols.esize[held], dims])
    _, group = np.unique(alike, axis=0, return_inverse=True)
    group = group.reshape(-1)
    flops, moved = cols.flops[held], cols.bytes[held]
    family = np.empty(held.size, dtype=np.int64)
    rates: dict[str, list] = {k: [] for k in ("source", "flops_per_unit", "flops_fixed", "bytes_per_unit",
                                               "bytes_fixed")}
    for g in range(int(group.max()) + 1):
        members = np.flatnonzero(group == g)
        lines = [_line(s[members], x[members]) for x in (flops, moved)]
        if lines[0] is not None and lines[1] is not None:
            parts = [(members, lines)]
        else:   # in proportion to the size, grouped by the rate
            rate = lambda x: np.round(RATIO_STEPS * np.log2(np.maximum(x[members] / s[members], 1e-30)))  # noqa: E731
            _, bucket = np.unique(np.column_stack([rate(flops), rate(moved)]), axis=0, return_inverse=True)
            parts = []
            for b in range(int(bucket.max()) + 1):
                part = members[bucket.reshape(-1) == b]
                largest = part[np.argmax(s[part])]
                parts.append((part, [(x[largest] / s[largest], 0.0) for x in (flops, moved)]))
        for part, ((flops_per_unit, flops_fixed), (bytes_per_unit, bytes_fixed)) in parts:
            family[part] = len(rates["source"])
            rates["source"].append(part[np.argmax(s[part])])
            rates["flops_per_unit"].append(flops_per_unit)
            rates["flops_fixed"].append(flops_fixed)
            rates["bytes_per_unit"].append(bytes_per_unit)
            rates["bytes_fixed"].append(bytes_fixed)
    return family, {k: np.asarray(v) for k, v in rates.items()}


def _line(size: np.ndarray, x: np.ndarray) -> tuple[float, float] | None:
    """``(per_unit, fixed)`` with ``x = per_unit * size + fixed`` for every member (both >= 0), through the largest
    and the smallest size; None when a member is off that line (beyond float rounding) or the line is not physical."""
    big, small = np.argmax(size), np.argmin(size)
    if size[big] == size[small]:
        return (x[big] / size[big], 0.0) if np.all(x == x[big]) else None
    per_unit = (x[big] - x[small]) / (size[big] - size[small])
    fixed = x[big] - per_unit * size[big]
    if per_unit < 0 or fixed < -1e-9 * max(abs(x[big]), 1.0):
        return None
    fixed = max(fixed, 0.0)
    if not np.allclose(per_unit * size + fixed, x, rtol=1e-9, atol=0.0):
        return None
    return per_unit, fixed


def _is_grid_class(op_class: np.ndarray) -> np.ndarray:
    return np.isin(op_class, list(GRID_DIMS))


def _running_max(times: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each family's times made non-decreasing along its grid rows (rows ``starts[f]`` up to the next start)."""
    out = np.empty_like(times)
    bounds = list(starts.tolist()) + [times.shape[0]]
    for begin, end in zip(bounds[:-1], bounds[1:]):
        np.maximum.accumulate(times[begin:end], axis=0, out=out[begin:end])
    return out
