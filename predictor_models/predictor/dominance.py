"""A GPU never predicted slower than one it dominates: the envelope over the catalog of its generation.

A device *dominates* another of the same architecture generation when it has at least the other's peak in
every math mode, its DRAM bandwidth and its SM count. Physics allows the dominated one to win on a tiny
kernel (more SMs at a lower clock finish one wave later), but a user comparing targets reads "more of
everything" as "never slower", and the measured data cannot settle a few-percent tail either way. So each
device's time is the minimum of its own prediction and those of every catalog device it dominates
(`dominated`); since dominance is transitive, a dominating device's set holds the dominated one's, and the
order holds for every op, not only on a grid.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from .devices import device_columns
from .kernels import generation_slot


def _key(dev) -> tuple:
    cols = device_columns([dev])
    return (int(generation_slot(cols.arch)[0]), tuple(cols.peaks[0]), float(cols.bandwidth[0]), float(cols.sms[0]))


def _dominates(a: tuple, b: tuple) -> bool:
    return (a[0] == b[0] and all(x >= y for x, y in zip(a[1], b[1])) and a[2] >= b[2] and a[3] >= b[3]
            and (a[1], a[2], a[3]) != (b[1], b[2], b[3]))


@lru_cache(maxsize=1)
def _catalog() -> tuple[tuple, ...]:
    from predictor_models.hardware import default_catalog

    out = []
    for dev in default_catalog():
        if getattr(dev, "memory_bandwidth_gbs", None) and getattr(dev, "fp32_tflops", None):
            out.append((dev, _key(dev)))
    return tuple(out)


def dominated(devices: Sequence) -> list[list]:
    """For each device, the catalog devices of its generation it dominates (itself excluded)."""
    catalog = _catalog()
    out = []
    for dev in devices:
        key = _key(dev)
        out.append([other for other, other_key in catalog if _dominates(key, other_key)])
    return out


def envelope(times: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """``times[:, i]`` lowered to the minimum over the columns in ``groups[i]`` (indices into ``times``)."""
    out = times.copy()
    for i, group in enumerate(groups):
        if group:
            out[:, i] = np.minimum(out[:, i], times[:, list(group)].min(axis=1))
    return out
