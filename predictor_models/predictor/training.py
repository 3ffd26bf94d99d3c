"""Measured samples resolved against the catalog, for fitting and evaluating the kernel constants."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from predictor_models.datasets import Sample
from predictor_models.hardware import UnknownHardwareError

from .bound import bound_seconds, paired
from .devices import DeviceColumns, device_columns
from .optable import OpColumns, op_columns

SEED = 20250101
GROUP_CAP = 6000          # rows per (source, GPU, class) so one big source does not drown the rest
MIN_RATIO = 1 / 1.5       # measured below 2/3 of the bound: not physically possible at DRAM speed
# Sources whose per-op latency includes the host's issue of the op: NeuSight times one call between two
# CUDA events on an idle GPU (`neusight/Dataset/collect.py`, measure_once: start.record(); op(); end.record();
# synchronize()), so the interval holds the Python, dispatch and launch of the op (~20-35 us) before the kernel.
HOST_LAG_SOURCES = frozenset({"neusight"})
# The shortest kernel in the kernel-timed sources (OpenXLA's tables, Vidur: 4.9-5.0 us on H100/B200/A100):
# a source's fastest op on a GPU minus this is that harness's host lag on that GPU.
KERNEL_FLOOR_S = 5e-6

@dataclass
class TrainingSet:
    """Samples resolved against the catalog, with bounds; row i of every array is sample i."""

    ops: OpColumns
    devices: DeviceColumns    # one row per sample
    gpu: np.ndarray           # catalog name per sample
    source: np.ndarray
    seconds: np.ndarray
    bound: np.ndarray
    excluded: Counter
    samples: list[Sample]

    def __len__(self) -> int:
        return len(self.seconds)

    def take(self, index: np.ndarray) -> "TrainingSet":
        return TrainingSet(self.ops.take(index), self.devices.take(index), self.gpu[index], self.source[index],
                           self.seconds[index], self.bound[index], self.excluded,
                           [self.samples[i] for i in index])


def build_training_set(samples: Sequence[Sample], lookup: Callable, *, remove_host_lag: bool = False) -> TrainingSet:
    """Resolve devices with ``lookup`` (name -> Accelerator), drop what cannot be used, compute bounds.

    A GPU ``lookup`` does not know (`UnknownHardwareError`) drops its samples, counted in
    ``excluded``; any other error of ``lookup`` (a malformed catalog file) propagates.

    ``remove_host_lag``: learn kernel times, the host lag of `HOST_LAG_SOURCES` taken off (`kernel_seconds`);
    off by default, see the model card ("Known limits") for what it changes."""
    excluded: Counter = Counter()
    accel: dict[str, object] = {}
    for name in sorted({s.device for s in samples}):
        try:
            accel[name] = lookup(name)
        except UnknownHardwareError:  # unknown to the catalog: we cannot bound its ops (counted below)
            accel[name] = None
    kept = [s for s in samples if accel[s.device] is not None]
    for s in samples:
        if accel[s.device] is None:
            excluded[f"{s.source}: GPU {s.device!r} not in the hardware catalog"] += 1
    unique = sorted({accel[s.device].name: accel[s.device] for s in kept}.items())
    position = {name: i for i, (name, _) in enumerate(unique)}
    devs = device_columns([a for _, a in unique])
    dev_idx = np.array([position[accel[s.device].name] for s in kept], dtype=np.int64)
    ops = op_columns([s.op for s in kept])
    per_sample = devs.take(dev_idx)
    bound = np.array(bound_seconds(paired(ops, per_sample)))
    seconds = np.array([s.seconds for s in kept])
    if remove_host_lag:
        seconds = kernel_seconds(seconds, np.array([s.source for s in kept], dtype=object), dev_idx, bound)
    ok = seconds >= bound * MIN_RATIO
    for s, good in zip(kept, ok):
        if not good:
            excluded[f"{s.source}: faster than 2/3 of the physical bound ({s.op.op_class})"] += 1
    index = np.flatnonzero(ok)
    gpu = np.array([accel[s.device].name for s in kept], dtype=object)
    source = np.array([s.source for s in kept], dtype=object)
    full = TrainingSet(ops, per_sample, gpu, source, seconds, bound, excluded, list(kept))
    return full.take(index)


def host_lags(seconds: np.ndarray, source: np.ndarray, device: np.ndarray) -> dict[tuple[str, int], float]:
    """``{(source, device index): seconds}``: the host lag each `HOST_LAG_SOURCES` harness adds on each GPU,
    its fastest op there minus `KERNEL_FLOOR_S`."""
    lags = {}
    for src in sorted(HOST_LAG_SOURCES & set(source.tolist())):
        for dev in np.unique(device[source == src]).tolist():
            fastest = float(seconds[(source == src) & (device == dev)].min())
            lags[(src, dev)] = max(0.0, fastest - KERNEL_FLOOR_S)
    return lags


def kernel_seconds(seconds: np.ndarray, source: np.ndarray, device: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Kernel time per sample: the harness's host lag taken off where a source carries one, never below the
    physical bound (the predictor prices kernels; the host model prices the issue, once)."""
    out = seconds.astype(float).copy()
    for (src, dev), lag in host_lags(seconds, source, device).items():
        rows = (source == src) & (device == dev)
        out[rows] = np.maximum(seconds[rows] - lag, np.minimum(seconds[rows], bound[rows]))
    return out


def balanced_rows(ts: TrainingSet, rows: np.ndarray, *, cap: int = GROUP_CAP, seed: int = SEED) -> np.ndarray:
    """At most ``cap`` rows per (source, GPU) among ``rows``, chosen with a seeded generator."""
    rng = np.random.default_rng(seed)
    keys = np.array([f"{s}|{g}" for s, g in zip(ts.source[rows], ts.gpu[rows])])
    chosen = []
    for key in sorted(set(keys)):
        members = rows[keys == key]
        if members.size > cap:
            members = np.sort(rng.choice(members, size=cap, replace=False))
        chosen.append(members)
    return np.sort(np.concatenate(chosen)) if chosen else rows[:0]
