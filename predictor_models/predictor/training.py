"""Fitting the per-class utilisation models from measured samples (shared by train and evaluate)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from predictor_models.datasets import Sample
from predictor_models.hardware import UnknownHardwareError

from .bound import bound_seconds, paired
from .devices import DeviceColumns, device_columns
from .features import FEATURES, feature_matrix
from .kernel_features import INPUTS, feature_arrays
from .mlp import fit_mlp
from .model import KernelNetwork
from .mono import MonoNet
from .mono_fit import fit_mono
from .optable import OpColumns, op_columns

SEED = 20250101
GROUP_CAP = 6000          # rows per (source, GPU, class) so one big source does not drown the rest
MIN_RATIO = 1 / 1.5       # measured below 2/3 of the bound: not physically possible at DRAM speed
MIN_CLASS_ROWS = 200      # fewer rows than this: no model for the class
# Sources whose per-op latency includes the host's issue of the op: NeuSight times one call between two
# CUDA events on an idle GPU (`neusight/Dataset/collect.py`, measure_once: start.record(); op(); end.record();
# synchronize()), so the interval holds the Python, dispatch and launch of the op (~20-35 us) before the kernel.
HOST_LAG_SOURCES = frozenset({"neusight"})
# The shortest kernel in the kernel-timed sources (OpenXLA's tables, Vidur: 4.9-5.0 us on H100/B200/A100):
# a source's fastest op on a GPU minus this is that harness's host lag on that GPU.
KERNEL_FLOOR_S = 5e-6
# L2 penalty per class. A new GPU is an extrapolation in device features; a smoother fit carries
# further. Chosen per class by sample-weighted leave-one-GPU-out MAPE among 1e-4 ... 10 (values
# tried are in the model card): pointwise ops gain most (15.2% -> 12.2%), GEMM/conv/norm 0.5-0.6 points.
WEIGHT_DECAY = {"gemm": 0.01, "conv": 0.1, "norm": 0.1, "elementwise": 1.0}
DEFAULT_WEIGHT_DECAY = 1e-4
# The tiled-kernel network (`kernel_features.py`): trained on every GEMM and convolution in every mode, it
# prices the half-precision convolutions (forward, data and weight gradients) on tensor-core GPUs, which the
# per-class convolution model learnt from three pre-Ampere GPUs only. Rows per (source, GPU, class, kernel,
# mode) are capped so that NeuSight's fp32 GEMMs do not drown the rest. It also prices FP32 convolutions with TF32
# off (2026-12-07), on every GPU's CUDA cores: as good as the class model on held-out GPUs (26.4% against 26.4%,
# `benchmarks/network_fp32_folds.py`) and monotone in their work by construction, which the class model is not
# (120 of 1,092 grid steps faster at twice the work). TF32 convolutions, PyTorch's default, stay with the class
# model: priced by the network, ResNet-50's FP32 steps were 14-21% too fast on Hopper
# (`benchmarks/results/issue38_network_fp32/`).
NETWORK_TRAINED_ON = ("gemm", "conv")
NETWORK_PRICES = ("conv",)
NETWORK_MODES = ("fp16", "bf16", "fp32")
NETWORK_CAP = 4000
# The GEMM network (2026-12-07, `kernel_features.gemm_time_features`): trained on every GEMM in every mode (capped as
# the tiled-kernel network's rows are), it prices fp16 and bf16 GEMMs (and the attention GEMMs `expand` makes) on GPUs
# with tensor cores for them, at or above the fastest kernel-timed GEMM of its rows. Monotone in b, m, n and k by
# construction, which the class model is not (305 bf16 grid steps faster at twice the work), and better on held-out
# GPUs' half-precision GEMMs (`benchmarks/gemm_work_network_folds.py --inputs scaled-roofline-nopower`). TF32 GEMMs too
# (v1.4.0, 2026-12-07): they run on tensor cores, which the class model knows only from CUDA-core FP32 rows, while the
# network learnt OpenXLA's measured TF32 GEMMs; held out, it prices them better in the worst case (B200 19.0% against
# 32.5%, H100 21.0% against 17.4%) and the whole FP32 steps with TF32 GEMMs move closer
# (`benchmarks/results/issue38_tf32_gemm_network/`). On a GPU without TF32 tensor cores a TF32 GEMM runs FP32 kernels
# and stays with the class model. FP32 GEMMs stay with it as well: NeuSight's FP32 rows carry its harness lag, and a
# network learnt without it priced held-out FP32 GEMMs worse (`benchmarks/results/issue38_network_fp32/`).
GEMM_NETWORK_PRICES = ("gemm",)
GEMM_NETWORK_MODES = ("fp16", "bf16", "tf32")
# Sources that train the network only: DeepBench's kernels (cuDNN 6-7, pre-Ampere) carry the only half-precision
# convolutions there are, which the network needs; in the per-class FP32 models they moved the Lambda FP32 steps
# from 5.9% to 16.7% median error (a trial of 2026-12-05, the development set), so those keep their 1.1 sources.
NETWORK_ONLY_SOURCES = frozenset({"deepbench"})


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


def balanced_rows(ts: TrainingSet, rows: np.ndarray, *, cap: int = GROUP_CAP, seed: int = SEED,
                  by_kernel: bool = False) -> np.ndarray:
    """At most ``cap`` rows per (source, GPU) among ``rows`` (``by_kernel``: per source, GPU, class, kernel
    of a convolution and math mode), chosen with a seeded generator."""
    rng = np.random.default_rng(seed)
    keys = np.array([f"{s}|{g}" for s, g in zip(ts.source[rows], ts.gpu[rows])])
    if by_kernel:
        ops = ts.ops
        keys = np.char.add(keys.astype(str), np.array([f"|{c}|{int(k)}|{int(m)}" for c, k, m in zip(
            ops.op_class[rows], ops.dim("grad")[rows], ops.mode[rows])]))
    chosen = []
    for key in sorted(set(keys)):
        members = rows[keys == key]
        if members.size > cap:
            members = np.sort(rng.choice(members, size=cap, replace=False))
        chosen.append(members)
    return np.sort(np.concatenate(chosen)) if chosen else rows[:0]


def class_xy(ts: TrainingSet, op_class: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Features and target log(measured / bound) (>= 0: utilisation <= 1) for rows of one class."""
    sub = ts.take(rows)
    x = feature_matrix(op_class, paired(sub.ops, sub.devices))
    y = np.log(np.maximum(sub.seconds / sub.bound, 1.0))
    return x, y


def weight_decays(overrides: Mapping[str, float] | None = None) -> dict[str, float]:
    """The L2 penalty of every op class with a feature definition: the defaults, then ``overrides``."""
    decays = {cls: WEIGHT_DECAY.get(cls, DEFAULT_WEIGHT_DECAY) for cls in FEATURES}
    decays.update(overrides or {})
    return decays


def fit_models(ts: TrainingSet, *, classes: Sequence[str] | None = None, members: int = 1,
               seed: int = SEED, cap: int = GROUP_CAP,
               weight_decay: Mapping[str, float] | None = None) -> dict[str, list[dict]]:
    """One ensemble of MLPs per op class with enough rows (``weight_decay`` overrides per class)."""
    decays = weight_decays(weight_decay)
    models: dict[str, list[dict]] = {}
    mine = ~np.isin(ts.source, list(NETWORK_ONLY_SOURCES))
    for op_class in classes or FEATURES:
        rows = np.flatnonzero((ts.ops.op_class == op_class) & mine)
        if rows.size < MIN_CLASS_ROWS:
            continue
        rows = balanced_rows(ts, rows, cap=cap, seed=seed)
        x, y = class_xy(ts, op_class, rows)
        models[op_class] = [fit_mlp(x, y, seed=seed + i, weight_decay=decays[op_class]) for i in range(members)]
    return models


def harness_lag_groups(source: np.ndarray, gpu: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The ``"source|gpu"`` harness lags a kernel network learns beside its kernel times (`HOST_LAG_SOURCES`), and each
    row's index among them (-1: a kernel-timed row)."""
    names = sorted({f"{s}|{g}" for s, g in zip(source, gpu) if s in HOST_LAG_SOURCES})
    index = {name: i for i, name in enumerate(names)}
    return names, np.array([index.get(f"{s}|{g}", -1) for s, g in zip(source, gpu)], dtype=np.int64)


def fit_network(ts: TrainingSet, *, members: int = 1, seed: int = SEED, cap: int = NETWORK_CAP) -> KernelNetwork | None:
    """The tiled-kernel network (`NETWORK_TRAINED_ON` rows, harness lags learnt beside it); None without rows."""
    rows = np.flatnonzero(np.isin(ts.ops.op_class, NETWORK_TRAINED_ON))
    nets = _fit_members(ts, rows, "tiled", members=members, seed=seed, cap=cap)
    return KernelNetwork(NETWORK_PRICES, NETWORK_MODES, nets) if nets else None


def kernel_floor_s(ts: TrainingSet, rows: np.ndarray) -> float:
    """The fastest op among ``rows`` that a kernel-timed source measured (not a harness whose times hold its host
    lag, `HOST_LAG_SOURCES`); 0 when there is none."""
    timed = rows[~np.isin(ts.source[rows], list(HOST_LAG_SOURCES))]
    return float(ts.seconds[timed].min()) if timed.size else 0.0


def fit_gemm_network(ts: TrainingSet, *, members: int = 1, seed: int = SEED,
                     cap: int = NETWORK_CAP) -> KernelNetwork | None:
    """The GEMM network (`GEMM_NETWORK_PRICES` in `GEMM_NETWORK_MODES`; every GEMM row trains it, harness lags learnt
    beside it); None without rows."""
    rows = np.flatnonzero(ts.ops.op_class == "gemm")
    nets = _fit_members(ts, rows, "gemm_times", members=members, seed=seed, cap=cap)
    return (KernelNetwork(GEMM_NETWORK_PRICES, GEMM_NETWORK_MODES, nets, "gemm_times", kernel_floor_s(ts, rows))
            if nets else None)


def _fit_members(ts: TrainingSet, rows: np.ndarray, inputs: str, *, members: int, seed: int,
                 cap: int) -> tuple[MonoNet, ...]:
    """``members`` monotone networks of the kind of inputs ``inputs`` on ``rows`` (capped per source, GPU, class,
    kernel and mode), each with its harness lags learnt beside it; empty with too few rows."""
    if rows.size < MIN_CLASS_ROWS:
        return ()
    sub = ts.take(balanced_rows(ts, rows, cap=cap, seed=seed, by_kernel=True))
    mono, free = feature_arrays(paired(sub.ops, sub.devices), inputs)
    names, group = harness_lag_groups(sub.source, sub.gpu)
    _, mono_names, free_names = INPUTS[inputs]
    return tuple(fit_mono(mono, free, sub.seconds, lag_group=group, lag_names=names, seed=seed + i,
                          mono_names=mono_names, free_names=free_names) for i in range(members))
