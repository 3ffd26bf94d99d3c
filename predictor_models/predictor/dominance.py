"""A GPU at least as strong as a measured GPU of its generation is never predicted slower: the device envelope.

The class models read the device through learned features, so between the GPUs they were trained on they can rank
two GPUs of one generation against their figures (an H200 slower than an H100 on most bf16 GEMMs). Physics says
otherwise: a GPU with at least another's figures, of the same architecture generation, can run the other's kernels at
least as fast. The figures compared are every one the models read: the peak of the op's math mode (the vector FP32
rate for pointwise and norm ops, as the bound reads it), DRAM bandwidth, SMs, L2 and board power; a figure the
catalog lacks compares with nothing. So each device's time for an op is the smallest over its *down-set*: itself and
the GPUs the training data measures that it dominates in the op's mode, taken over the whole catalog and the devices
asked for, whichever of them a prediction names. Unmeasured GPUs stay out of every down-set: the models extrapolate
to them, and a measured GPU would take their errors. Dominance is a partial order, so a down-set holds the down-sets
of the measured devices in it, and for B measured

    A dominates B  =>  down(A) contains down(B)  =>  time(A) = min over down(A) <= min over down(B) <= time(B)

for every op, whatever else is predicted with it (`tests/test_predictor_dominance.py`). The minimum keeps the other
guarantees: no time falls below its own device's roofline (a weaker device's bound is larger), and a minimum of
times that never fall as work grows never falls either.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from .devices import MODES, device_columns

_TOLERANCE = 1e-9   # figures equal to this relative precision count as equal


def generation(device) -> str:
    """The architecture generation from the catalog's ``architecture`` text: "Ampere (GA102)" -> "Ampere",
    "Hopper (GH100) + Grace CPU" -> "Hopper", "TPU v5e (1 TensorCore)" -> "TPU v5e"."""
    text = str(getattr(device, "architecture", "") or "")
    return text.split(" (")[0].split(" + ")[0].strip().lower()


_OTHER_FIGURES = ("memory_bandwidth_gbs", "sm_count", "l2_cache_mb", "tdp_w")   # what the models read


def _figures(devices: Sequence) -> np.ndarray:
    """Per device: its peak in every math mode (`MODES`) as the predictor reads it, then the catalog's DRAM
    bandwidth, SM count, L2 and board power (what the models read besides the peaks), NaN where the catalog has
    no figure."""
    cols = device_columns(devices)
    other = np.array([[float(getattr(d, k, None) or np.nan) for k in _OTHER_FIGURES] for d in devices],
                     dtype=np.float64).reshape(len(devices), len(_OTHER_FIGURES))
    return np.column_stack([cols.peaks, other])


def _compared(figures: np.ndarray, mode: int) -> np.ndarray:
    """The figures an op of math mode `mode` runs on: that mode's peak and every other figure."""
    return figures[..., [mode] + list(range(len(MODES), len(MODES) + len(_OTHER_FIGURES)))]


def dominates(a, b, mode: str = "fp32") -> bool:
    """Whether `a` has at least `b`'s figures for an op of math ``mode`` (`_compared`), of the same generation."""
    if generation(a) != generation(b) or not generation(a):
        return False
    fa, fb = _compared(_figures([a, b]), MODES.index(mode))
    return bool(np.all(fa >= fb * (1 - _TOLERANCE)))


def device_key(device) -> tuple:
    """What tells a device apart for the predictor: its name, generation and figures (cached per catalog entry)."""
    try:
        return _cached_key(device)
    except TypeError:       # an unhashable stand-in for a catalog entry: read it each time
        return _cached_key.__wrapped__(device)


@lru_cache(maxsize=1024)
def _cached_key(device) -> tuple:
    return (device.name, generation(device), tuple(_figures([device])[0].tolist()))


def down_sets(devices: Sequence, catalog: Sequence, modes: Sequence[int],
              measured: Sequence[str] = ()) -> tuple[list, dict[int, list[np.ndarray]]]:
    """The devices to predict (``devices`` first, then the ``measured`` catalog devices some of them dominate in one
    of ``modes``, indices into `MODES`) and, per mode and per device asked for, the indices into that list of its
    down-set: itself first, then the devices of ``measured`` (the GPUs the training data holds) it dominates."""
    devices = list(devices)
    asked = {d.name for d in devices}
    trusted = frozenset(measured)
    extra = [d for d in catalog if d.name not in asked and d.name in trusted]
    keys = tuple(device_key(d) for d in devices)
    order, sets = _down_sets(keys, tuple(device_key(d) for d in extra), tuple(sorted(set(modes))),
                             tuple(d.name in trusted for d in devices))
    pool = devices + extra
    return [pool[i] for i in order], {mode: [np.asarray(s, dtype=np.int64) for s in per] for mode, per in sets.items()}


@lru_cache(maxsize=64)
def _down_sets(asked: tuple, extra: tuple, modes: tuple,
               asked_measured: tuple) -> tuple[list[int], dict[int, list[list[int]]]]:
    keys = list(asked) + list(extra)
    measured = np.array(list(asked_measured) + [True] * len(extra), dtype=bool)
    gens = np.array([k[1] for k in keys], dtype=object)
    figs = np.array([k[2] for k in keys], dtype=np.float64).reshape(len(keys), len(MODES) + len(_OTHER_FIGURES))
    same = (gens[:, None] == gens[None, :]) & (gens != "")[:, None]
    order = list(range(len(asked)))        # the devices asked for keep their places
    index = {i: i for i in order}
    sets: dict[int, list[list[int]]] = {}
    for mode in modes:
        f = _compared(figs, mode)
        # below[a, b]: a >= b in every figure; a figure missing on either side (NaN) compares False
        below = same & np.all(f[:, None, :] >= f[None, :, :] * (1 - _TOLERANCE), axis=2)
        per = []
        for a in range(len(asked)):
            members = [a] + [b for b in np.flatnonzero(below[a] & measured).tolist() if b != a]
            for b in members:
                if b not in index:
                    index[b] = len(order)
                    order.append(b)
            per.append([index[b] for b in members])
        sets[mode] = per
    return order, sets
