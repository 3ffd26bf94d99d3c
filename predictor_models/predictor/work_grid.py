"""Time that never falls as a streaming op's work grows, for every size: its family priced on one grid of sizes.

A *family* is a set of ops alike in everything but one work dimension (a pointwise op's elements, a norm's rows),
their FLOPs and bytes proportional to it (`GRID_DIMS`). The family is priced at the sizes ``2**(j / STEPS_PER_OCTAVE)``,
j = 0, 1, ..., up to its largest member; those times are made non-decreasing along the grid (a running maximum: a
larger op's kernel can always do a smaller one's work); and each member's time is their interpolation at its size,
linear in log size and log time. A piecewise-linear interpolation of a non-decreasing sequence does not decrease,
so no member is ever predicted faster than a smaller one, whatever their sizes. The work ladder it replaces
(`monotone.py`) held only sizes a power of two apart, and priced each op's own halvings: a 500-layer step's ~100
distinct adds and norms were ~1,000 rungs, where their grids are a few hundred rows shared by every member.

Half-precision families are held from below, as said. fp32 families (`monotone.DESCENDING_DTYPES`) are held from
above: each grid size takes the least time of any larger size, since the larger op's kernel could do the smaller
one's work. Their public small-op times carry a harness's host lag, which a running maximum carried up to mid-size
ops; from above, a small op priced over a larger one is lowered to it instead. Their grid reaches the size whose
bytes no GPU holds (`LARGEST_OP_BYTES`), whatever the family's largest member, so that an op's price does not depend
on the other ops of its step.

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
# A descending family's grid reaches the size whose bytes no catalog GPU's memory holds (256 GiB), so that the
# minimum over the larger sizes is the same whatever the step's largest member is.
LARGEST_OP_BYTES = 2.0 ** 38


@dataclass(frozen=True)
class WorkGrid:
    """The grid rows of every family met, and where each held op reads them.

    ``cols``: the grid's rows, family after family, each from size 1 up (from its smallest member up, for a family
    held from above); ``held``: the ops (rows of the columns given to `work_grid`) priced on it; per held op,
    ``lower``/``upper`` (grid rows around its size) and ``weight`` (its place between them, 0 at ``lower``);
    ``family_starts``: each family's first grid row; ``family_descends``: which families are held from above."""

    cols: OpColumns
    held: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    weight: np.ndarray
    family_starts: np.ndarray
    family_descends: np.ndarray

    def held_times(self, grid_times: np.ndarray, own_bound: np.ndarray) -> np.ndarray:
        """``(held ops, devices)`` times from the grid's ``(grid rows, devices)`` times, never below the held ops' own
        bounds ``own_bound`` (non-decreasing in the work too: a member's fixed bytes, such as a norm's weights, are
        not in the grid's per-unit rate)."""
        running = _envelope(grid_times, self.family_starts, self.family_descends)
        low, high = np.log(running[self.lower]), np.log(running[self.upper])
        return np.maximum(np.exp(low + self.weight[:, None] * (high - low)), own_bound)

    def candidate_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(candidates, anchors)``: the rows of families held from above that lie beyond every member's ``upper``
        (they matter only where their time is below a member's), and for each the last row of its family a member
        reads. Every other row of the grid is one a member reads."""
        ends = np.r_[self.family_starts[1:], len(self.cols)]
        read_end = np.zeros(self.family_starts.size, dtype=np.int64)   # one past each family's last row a member reads
        np.maximum.at(read_end, np.searchsorted(self.family_starts, self.upper, side="right") - 1, self.upper + 1)
        families = np.flatnonzero(self.family_descends)
        counts = ends[families] - read_end[families]
        candidates = np.concatenate([np.arange(read_end[f], ends[f]) for f in families] or [[]]).astype(np.int64)
        return candidates, np.repeat(read_end[families] - 1, counts)


def needed_candidates(candidate_bounds: np.ndarray, anchor_times: np.ndarray) -> np.ndarray:
    """Which candidate rows (`WorkGrid.candidate_rows`) can lower a member's time: those whose roofline bound lies
    below their anchor's time on some device. A time is never below its bound, and an anchor's time is the most a
    candidate must beat, so the others lower nothing; the bound grows along the grid, so the needed ones are the first
    few of each family."""
    return (candidate_bounds < anchor_times).any(axis=1)


def work_grid(cols: OpColumns, hold: np.ndarray, steps_per_octave: int | None = None,
              descend: np.ndarray | None = None) -> WorkGrid | None:
    """The grid for the ops of ``cols`` in `GRID_DIMS`' classes that ``hold`` marks (their dtype is held:
    `monotone.HELD_DTYPES`) and whose work dimension is at least 1; None when there are none. Families of the ops
    ``descend`` marks are held from above (`_envelope`): their grid runs up to `LARGEST_OP_BYTES`."""
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
    below = np.floor(position + 1e-9).astype(np.int64)          # the grid point at or below each op
    # from above, a size reads only the larger ones: the grid starts at the family's smallest member and reaches the
    # size that moves LARGEST_OP_BYTES
    descends = np.zeros(first.size, dtype=bool) if descend is None else np.asarray(descend, dtype=bool)[held][first]
    largest = (LARGEST_OP_BYTES - rates["bytes_fixed"]) / np.maximum(rates["bytes_per_unit"], 1e-30)
    reach = np.ceil(steps_per_octave * np.log2(np.maximum(largest, 1.0))).astype(np.int64)
    tops = np.where(descends, np.maximum(tops, reach), tops)
    smallest = np.full(first.size, np.iinfo(np.int64).max)
    np.minimum.at(smallest, family, below)
    lows = np.where(descends, smallest, 0)                       # each family's first grid point
    lengths = tops - lows + 1
    starts = np.cumsum(lengths) - lengths
    owner = np.repeat(np.arange(first.size), lengths)             # the family of each grid row
    step = np.arange(lengths.sum()) - np.repeat(starts - lows, lengths)   # lows, lows + 1, ... within a family
    points = np.exp2(step / steps_per_octave)
    source = held[first][owner]                                   # a member whose columns the family's rows copy
    grid_dims = cols.dims[source].copy()
    work_index = np.array([_DIM_INDEX[GRID_DIMS[c]] for c in cols.op_class[held]])
    grid_dims[np.arange(owner.size), work_index[first][owner]] = points
    flops = rates["flops_per_unit"][owner] * points + rates["flops_fixed"][owner]
    moved = rates["bytes_per_unit"][owner] * points + rates["bytes_fixed"][owner]
    grid = OpColumns(cols.op_class[source], cols.mode[source], flops, moved, grid_dims, cols.heavy[source],
                     cols.softmax[source], cols.esize[source])
    lower = np.minimum(below, tops[family])
    weight = np.clip(position - lower, 0.0, 1.0)
    upper = np.minimum(lower + 1, tops[family])
    weight = np.where(upper == lower, 0.0, weight)
    offset = starts[family] - lows[family]
    return WorkGrid(grid, held, offset + lower, offset + upper, weight, starts, descends)


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
    alike = np.column_stack([codes, cols.mode[held], cols.heavy[held], cols.softmax[held], cols.esize[held],
                             dims[:, dims.any(axis=0)]])   # the dims any of them has (most are no class's)
    group = _row_groups(alike)
    flops, moved = cols.flops[held], cols.bytes[held]
    (flops_line, flops_fixed, flops_on), (bytes_line, bytes_fixed, bytes_on) = (_lines(group, s, x)
                                                                               for x in (flops, moved))
    on_line = flops_on & bytes_on
    # off a line: in proportion to the size, grouped by the rate
    rate = lambda x: np.round(RATIO_STEPS * np.log2(np.maximum(x / s, 1e-30)))  # noqa: E731
    bucket = np.where(on_line[group][:, None], 0.0, np.column_stack([rate(flops), rate(moved)]))
    family = _row_groups(np.column_stack([group, bucket]))
    order = np.lexsort((s, family))
    source = order[np.r_[np.flatnonzero(np.diff(family[order])), order.size - 1]]   # each family's largest member
    line = on_line[group[source]]
    g = group[source]
    return family, {"source": source,
                    "flops_per_unit": np.where(line, flops_line[g], flops[source] / s[source]),
                    "flops_fixed": np.where(line, flops_fixed[g], 0.0),
                    "bytes_per_unit": np.where(line, bytes_line[g], moved[source] / s[source]),
                    "bytes_fixed": np.where(line, bytes_fixed[g], 0.0)}


def _lines(group: np.ndarray, size: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group, ``(per_unit, fixed, on)``: the line ``x = per_unit * size + fixed`` through its largest and
    smallest member, and whether every member lies on it (to float rounding) with both parts >= 0. A group of one
    size is on its line when its members agree (``fixed`` 0)."""
    groups = int(group.max()) + 1
    order = np.lexsort((size, group))
    ends = np.r_[np.flatnonzero(np.diff(group[order])), order.size - 1]
    big, small = order[ends], order[np.r_[0, ends[:-1] + 1]]
    span = size[big] - size[small]
    one_size = span == 0
    per_unit = np.where(one_size, x[big] / size[big], (x[big] - x[small]) / np.where(one_size, 1.0, span))
    fixed = np.where(one_size, 0.0, x[big] - per_unit * size[big])
    physical = (per_unit >= 0) & (fixed >= -1e-9 * np.maximum(np.abs(x[big]), 1.0))
    fixed = np.maximum(fixed, 0.0)
    off = np.abs(per_unit[group] * size + fixed[group] - x) > 1e-9 * np.abs(x)
    on = physical & (np.bincount(group, weights=off, minlength=groups) == 0)
    return per_unit, fixed, on


def _row_groups(rows: np.ndarray) -> np.ndarray:
    """Each row's group, numbered in the rows' lexicographic order: ``np.unique(rows, axis=0, return_inverse=True)``'s
    inverse for rows of finite numbers, about five times faster on a projection's few hundred rows (NumPy's sorts the
    rows as structured records)."""
    rows = np.asarray(rows, dtype=np.float64)
    if rows.shape[0] == 0:
        return np.zeros(0, dtype=np.intp)
    order = np.lexsort(rows.T[::-1])   # lexsort's last key is its first
    ranked = rows[order]
    starts = np.empty(len(order), dtype=bool)
    starts[0] = True
    np.any(ranked[1:] != ranked[:-1], axis=1, out=starts[1:])
    group = np.empty(len(order), dtype=np.intp)
    group[order] = np.cumsum(starts) - 1
    return group


def _is_grid_class(op_class: np.ndarray) -> np.ndarray:
    return np.isin(op_class, list(GRID_DIMS))


def _envelope(times: np.ndarray, starts: np.ndarray, descends: np.ndarray) -> np.ndarray:
    """Each family's times made non-decreasing along its grid rows (rows ``starts[f]`` up to the next start): from
    below, a running maximum (a larger op is held above every smaller one), or, for a family ``descends`` marks,
    from above, a running minimum taken from the largest size down (a smaller op is held below every larger one:
    the larger op's kernel could do its work)."""
    out = np.empty_like(times)
    bounds = list(starts.tolist()) + [times.shape[0]]
    for f, (begin, end) in enumerate(zip(bounds[:-1], bounds[1:])):
        if descends[f]:
            np.minimum.accumulate(times[begin:end][::-1], axis=0, out=out[begin:end][::-1])
        else:
            np.maximum.accumulate(times[begin:end], axis=0, out=out[begin:end])
    return out
