"""Choosing rows spread over groups (op class and math) and sizes: which rows a quick collection
would measure, and which rows `calibrate` holds back to report its error honestly."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def spread_pick(groups: Sequence[str], size: Sequence[float], n: int, *, seed: int = 0) -> np.ndarray:
    """Indices of ``n`` rows (sorted): an equal share per group (a small group's unused share goes to
    the others), and inside a group rows evenly spaced along ``size`` (e.g. log of the op's bound),
    each from a seeded random position inside its stretch."""
    groups = np.asarray(groups, dtype=object)
    size = np.asarray(size, dtype=float)
    if n >= len(groups):
        return np.arange(len(groups))
    rng = np.random.default_rng(seed)
    names = sorted(set(groups))
    members = {g: np.flatnonzero(groups == g) for g in names}
    quota = dict.fromkeys(names, 0)
    left, open_groups = n, list(names)
    while left > 0 and open_groups:
        share = max(left // len(open_groups), 1)
        for g in list(open_groups):
            take = min(share, members[g].size - quota[g], left)
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
