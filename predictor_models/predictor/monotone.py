"""Time that does not fall as an op's work grows: the lattice of smaller ops each prediction is held above.

The utilisation models are free functions of their features, so between measured shapes they can
dip: a convolution of 2x the batch predicted faster than the smaller one. Physics says otherwise: the
larger op's kernel can always do the smaller one's work and more. So each held op's time is the maximum of
its own prediction and those of the same op with its work dimensions halved, quartered, ... down to 1,
every combination of them (`smaller_ops`, along `WORK_DIMS`). An op whose sizes are power-of-two multiples of
another's holds every point of the smaller one's lattice, so it is never predicted faster
(`tests/test_predictor_monotone.py`). Predictions build the lattice as columns (`ladder_columns`, the same rungs
as `smaller_ops` without an `OpSpec` each) and price a rung shared by several ops once.

Pointwise ops and norms are no longer held here but on their family's grid of sizes (`work_grid.py`,
2026-12-06): monotone at every size, not only at power-of-two multiples, and shared by a family's members
(a 500-layer step's adds and norms were ~1,000 rungs). What the ladder still holds is a half-precision
convolution's batch where no tensor-core network prices it (a Pascal GPU's fp16).

GEMMs are not held: their lattice over (b, m, n, k) has thousands of points per op, and a ladder along
each dimension alone lets one dimension's dip raise the smaller op and not the larger (measured: more
violations, not fewer). `benchmarks/predictor_physics.py` reports what remains.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np

from predictor_models.op_spec import OpSpec

from .optable import _DIM_INDEX, OpColumns

# Half-precision ops only. The public fp32 per-op times of small ops carry NeuSight's host lag (20-40 us
# of Python and launch before the kernel; model card, "Known limits"), so holding fp32 ops above their
# smaller ones spreads that lag onto mid-size kernels (measured: the H200's fp32 steps 3.1% -> 3.6%
# median, worst 7.4% -> 11.5%). Half-precision rows come from kernel-timed sources (OpenXLA, Vidur).
# The same dtypes are held on the work grid (work_grid.py).
HELD_DTYPES = frozenset({"bfloat16", "float16"})
# fp32 pointwise ops and norms are held on their work grid from above instead (work_grid._envelope): a small op priced
# above a larger one (its harness lag) is lowered to it, not the larger op raised (2026-12-07,
# benchmarks/results/issue38_descending/).
DESCENDING_DTYPES = frozenset({"float32"})
MAX_RUNGS = 16          # a dimension of 65,536 reaches 1
# Work dimensions per class; flops and bytes are proportional to each (a conv's weights aside). Pointwise ops and
# norms (numel, rows) are held on their grid instead (work_grid.GRID_DIMS).
WORK_DIMS = {"conv": ("n",)}


def _sizes(value: float) -> list[float]:
    """The value and its halvings down to 1."""
    out, size = [float(value)], float(value)
    while size >= 2.0 and len(out) <= MAX_RUNGS:
        size /= 2.0
        out.append(size)
    return out


def _lattice(op: OpSpec) -> tuple[list[str], list[np.ndarray], np.ndarray]:
    """The smaller points of an op's power-of-two lattice, in order (the first work dimension outermost): the work
    dimensions, each point's size along each, and each point's share of the op's work."""
    dims = op.dims or {}
    keys = [k for k in WORK_DIMS.get(op.op_class, ()) if float(dims.get(k) or 0) >= 2.0]
    if not keys:
        return [], [], np.zeros(0)
    grids = [g.reshape(-1) for g in np.meshgrid(*[np.asarray(_sizes(dims[k])) for k in keys], indexing="ij")]
    share = np.ones(grids[0].size)
    for key, grid in zip(keys, grids):
        share = share * (grid / float(dims[key]))
    smaller = share < 1.0
    return keys, [grid[smaller] for grid in grids], share[smaller]


def smaller_ops(op: OpSpec) -> list[OpSpec]:
    """The same op at every smaller point of its power-of-two lattice (empty for classes without one)."""
    keys, sizes, shares = _lattice(op)
    return [replace(op, flops=op.flops * share, bytes_read=op.bytes_read * share,
                    bytes_written=op.bytes_written * share,
                    dims={**op.dims, **{key: float(size[i]) for key, size in zip(keys, sizes)}})
            for i, share in enumerate(shares.tolist())]


def ladder_columns(ops: Sequence[OpSpec], cols: OpColumns,
                   dtypes: frozenset[str] = HELD_DTYPES) -> tuple[OpColumns | None, np.ndarray]:
    """Every op's `smaller_ops` (ops of `dtypes`) as columns, built from ``cols`` (the columns of ``ops``) without
    an `OpSpec` per rung (a step has hundreds of distinct ops, each with up to 16 rungs).
    Returns the ladder's columns (None when empty) and each rung's owner."""
    lengths = np.zeros(len(ops), dtype=np.int64)
    singles: list[tuple[int, int, float, int]] = []     # one work dimension: (op, its column, its size, rungs)
    lattices: list[tuple[int, tuple]] = []              # several: the op's `_lattice`
    work = np.zeros((len(ops), 3))                      # flops, bytes read and written of each held op
    for i, op in enumerate(ops):
        keys = WORK_DIMS.get(op.op_class)
        if not keys or op.dtype not in dtypes:
            continue
        if len(keys) == 1:
            size = float((op.dims or {}).get(keys[0]) or 0)
            if size < 2.0:
                continue
            # `_sizes`' halvings: one per power of two from 2 up to the size (frexp is exact), at most MAX_RUNGS
            lengths[i] = min(math.frexp(size)[1] - 1, MAX_RUNGS)
            singles.append((i, _DIM_INDEX[keys[0]], size, int(lengths[i])))
        else:
            lattice = _lattice(op)
            if not lattice[2].size:
                continue
            lengths[i] = lattice[2].size
            lattices.append((i, lattice))
        work[i] = (op.flops, op.bytes_read, op.bytes_written)
    if not lengths.any():
        return None, np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(len(ops)), lengths)
    first = np.cumsum(lengths) - lengths                 # each op's first rung
    share = np.empty(owner.size)
    rungs = cols.take(owner)
    dims = rungs.dims.copy()
    if singles:
        index, column, size, count = (np.array(x) for x in zip(*singles))
        offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)   # 0, 1, ... within an op
        rows = np.repeat(first[index], count) + offset
        share[rows] = np.ldexp(1.0, -(offset + 1))      # exactly size / 2^j over size, as `_lattice` divides
        dims[rows, np.repeat(column, count)] = np.repeat(size, count) * share[rows]
    for i, (keys, along, part) in lattices:
        rows = slice(first[i], first[i] + part.size)
        share[rows] = part
        for key, values in zip(keys, along):
            dims[rows, _DIM_INDEX[key]] = values
    flops, read, written = work[owner].T
    return OpColumns(rungs.op_class, rungs.mode, np.maximum(flops * share, 0.0),
                     np.maximum(read * share + written * share, 0.0), dims, rungs.heavy, rungs.softmax,
                     rungs.esize), owner
