"""Choosing rows spread over groups (op class and math) and sizes: which rows a quick collection
would measure, and which rows `calibrate` holds back to report its error honestly."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from predictor_models.predictor.devices import MODES

_TENSOR = np.array([m in ("tf32", "fp16", "bf16", "fp8") for m in MODES])


def group_keys(cols) -> np.ndarray:
    """``class/math`` per op (`OpColumns`): math is ``tensor`` (TF32/FP16/BF16/FP8 matrix units),
    ``half`` (2-byte vector math) or ``fp32``."""
    math = np.where(_TENSOR[cols.mode], "tensor", np.where(cols.esize <= 2, "half", "fp32"))
    return np.array([f"{c}/{m}" for c, m in zip(cols.op_class, math)], dtype=object)


def spread_pick(groups: Sequence[str], size: Sequence[float], n: int, *, seed: int = 0,
                weights: dict[str, float] | None = None) -> np.ndarray:
    """Indices of ``n`` rows (sorted): a share per group in proportion to ``weights`` (default equal;
    a small group's unused share goes to the others), and inside a group rows evenly spaced along
    ``size`` (e.g. log of the op's bound), each from a seeded random position inside its stretch."""
    groups = np.asarray(groups, dtype=object)
    size = np.asarray(size, dtype=float)
    if n >= len(groups):
        return np.arange(len(groups))
    rng = np.random.default_rng(seed)
    names = sorted(set(groups))
    members = {g: np.flatnonzero(groups == g) for g in names}
    weight = {g: float((weights or {}).get(g, 1.0 if weights is None else 0.0)) for g in names}
    quota = dict.fromkeys(names, 0)
    left, open_groups = n, [g for g in names if weight[g] > 0] or list(names)
    while left > 0 and open_groups:
        total = sum(weight[g] or 1.0 for g in open_groups)
        shares = {g: max(int(left * (weight[g] or 1.0) / total), 1) for g in open_groups}
        for g in list(open_groups):
            take = min(shares[g], members[g].size - quota[g], left)
            quota[g] += take
            left -= take
            if quota[g] >= members[g].size:
                open_groups.remove(g)
            if left == 0:
                break
    chosen = [_along(members[g], size, quota[g], rng) for g in names if quota[g]]
    return np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=int)


def _along(rows: np.ndarray, size: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` of ``rows``, one from each of k equal stretches along ``size``."""
    rows = rows[np.argsort(size[rows], kind="stable")]
    edges = np.floor(np.linspace(0, rows.size, k + 1)).astype(int)   # k disjoint stretches, each >= 1 row
    return rows[edges[:-1] + (rng.random(k) * (edges[1:] - edges[:-1])).astype(int)]


def hold_back(groups: Sequence[str], size: Sequence[float], fraction: float, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(fit rows, held-back rows): ``fraction`` of each group's rows (rounded down), spread along
    ``size``, kept out of the fit."""
    groups = np.asarray(groups, dtype=object)
    size = np.asarray(size, dtype=float)
    rng = np.random.default_rng(seed)
    held = [_along(np.flatnonzero(groups == g), size, int(fraction * np.sum(groups == g)), rng)
            for g in sorted(set(groups))]
    held = np.sort(np.concatenate(held)) if held else np.zeros(0, dtype=int)
    mask = np.ones(len(groups), dtype=bool)
    mask[held] = False
    return np.flatnonzero(mask), held
