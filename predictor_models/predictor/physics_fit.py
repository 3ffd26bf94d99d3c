"""Fitting the kernel constants (`kernels.KernelParams`) to measured op times.

Each constant is a shared base value plus a per-generation (and, for e_c, per math mode and generation)
offset held towards zero by a ridge penalty: a generation with few measurements borrows from the others,
one with none (a GPU family no source measured) takes the base. Every constant passes through a transform
that keeps it inside its physical range (a sigmoid for efficiencies, exp for the rest), so no fitted value
can break the guarantees of `kernels.py`.

The fit minimises robust (soft-L1) log errors with SciPy's trust-region least squares. Sources whose
latencies include the host's issue of the op (`training.HOST_LAG_SOURCES`) get one extra additive constant
per GPU and class, the harness's lag (a convolution's cuDNN set-up costs the host more than a GEMM's), at
most the group's fastest measured op; it is fitted and then dropped: the predictor prices device time only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bound import LAUNCH_S, paired
from .devices import MODES
from .kernels import GENERATIONS, TILED, UNKNOWN_GENERATION, KernelParams, generation_slot, kernel_seconds

RIDGE = 0.3            # penalty on a generation's offset from the base (log / logit units)
LOSS_SCALE = 0.1       # soft-L1 scale in log units: errors beyond ~10% count linearly, not squared
# a mode no measurement of the class has borrows another's efficiency (same tensor-core path)
MODE_DONOR = {"tf32": "fp16", "bf16": "fp16", "fp16": "bf16", "fp8": "bf16", "fp64": "fp32"}
_G = len(GENERATIONS) + 1


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@dataclass
class _Layout:
    """Where each constant sits in the parameter vector."""

    gens: list[int]              # generation slots present in the rows
    modes: list[int]             # mode indices present
    pairs: list[tuple[int, int]]  # (mode, slot) present
    lag_keys: list[tuple[str, str]]

    @property
    def size(self) -> int:
        return 3 * (1 + len(self.gens)) + len(self.modes) + len(self.pairs) + 4 + len(self.lag_keys)


def _decode(theta: np.ndarray, lay: _Layout) -> tuple[KernelParams, np.ndarray, np.ndarray]:
    i = 0

    def per_gen():
        nonlocal i
        base = theta[i]
        out = np.full(_G, base)
        for j, g in enumerate(lay.gens):
            out[g] = base + theta[i + 1 + j]
        i += 1 + len(lay.gens)
        return out, theta[i - len(lay.gens):i]

    floor_raw, d1 = per_gen()
    em_raw, d2 = per_gen()
    wave_raw, d3 = per_gen()
    base_mode = {m: theta[i + j] for j, m in enumerate(lay.modes)}
    i += len(lay.modes)
    ec_raw = np.zeros((len(MODES), _G))
    for m in range(len(MODES)):
        donor = m if m in base_mode else MODES.index(MODE_DONOR.get(MODES[m], "fp32"))
        ec_raw[m] = base_mode.get(donor, base_mode.get(0, next(iter(base_mode.values()))))
    offsets = theta[i:i + len(lay.pairs)]
    for (m, g), d in zip(lay.pairs, offsets):
        ec_raw[m, g] += d
    i += len(lay.pairs)
    reuse, q = np.exp(theta[i]), np.exp(theta[i + 1])
    watts = (float(np.exp(theta[i + 2])), float(np.exp(theta[i + 3])))
    lags = _sigmoid(theta[i + 4:])     # share of the group's fastest op (`fit_kernel_class`)
    params = KernelParams(LAUNCH_S + np.exp(floor_raw), _sigmoid(em_raw), _sigmoid(ec_raw), np.exp(wave_raw),
                          float(reuse), float(q), watts)
    return params, np.concatenate([d1, d2, d3, offsets]), lags


def _initial(lay: _Layout, kind: str) -> np.ndarray:
    theta = np.zeros(lay.size)
    i = 0
    for value in (np.log(3e-6), 1.0, np.log(1e-6 if kind in TILED else 1e-9)):
        theta[i] = value
        i += 1 + len(lay.gens)
    # streaming kernels start where their per-element issue cost binds (an eager PyTorch pointwise kernel
    # spends tens of instructions per element): a half-precision op moves half the bytes per element, so
    # it can be element-bound where its fp32 twin is memory-bound; started unbound, the fit never sees it
    theta[i:i + len(lay.modes)] = 1.0 if kind in TILED else -4.5
    i += len(lay.modes) + len(lay.pairs)
    theta[i], theta[i + 1] = np.log(8.0), np.log(2.0)
    # W per TFLOP/s (vector units, tensor cores), started where the 70 W cards bind so the fit can move them
    theta[i + 2], theta[i + 3] = np.log(12.0), np.log(0.6)
    theta[i + 4:] = 0.0
    return theta


def fit_kernel_class(kind: str, ts, rows: np.ndarray, *, lag_sources: frozenset[str] = frozenset(),
                     max_nfev: int = 60) -> tuple[KernelParams, dict]:
    """Constants of one kernel class from the training rows ``rows`` of ``ts`` (a `training.TrainingSet`)."""
    from scipy.optimize import least_squares

    sub = ts.take(rows)
    pairs = paired(sub.ops, sub.devices)
    slots = generation_slot(sub.devices.arch)
    modes = np.asarray(sub.ops.mode)
    keys = [(str(s), str(g)) for s, g in zip(sub.source, sub.gpu)]
    lag_keys = sorted({k for k in keys if k[0] in lag_sources})
    lay = _Layout(sorted(set(slots.tolist()) - {UNKNOWN_GENERATION}), sorted(set(modes.tolist())),
                  sorted(set(zip(modes.tolist(), slots.tolist()))), lag_keys)
    lag_index = np.array([lag_keys.index(k) if k in lag_keys else -1 for k in keys])
    measured = np.log(sub.seconds)
    # a lag is at most the group's fastest measured op: the harness's cost cannot exceed the shortest call
    fastest = np.array([sub.seconds[lag_index == j].min() for j in range(len(lag_keys))])

    def residuals(theta):
        params, offsets, lags = _decode(theta, lay)
        predicted = kernel_seconds(kind, pairs, params)
        if lag_keys:
            predicted = predicted + np.where(lag_index >= 0, (fastest * lags)[np.maximum(lag_index, 0)], 0.0)
        return np.concatenate([np.log(predicted) - measured, np.sqrt(RIDGE) * offsets])

    result = least_squares(residuals, _initial(lay, kind), loss="soft_l1", f_scale=LOSS_SCALE, max_nfev=max_nfev,
                           method="trf")
    params, _, lags = _decode(result.x, lay)
    lags = fastest * lags
    error = np.abs(np.exp(result.fun[:len(measured)]) - 1.0)
    info = {"rows": int(len(rows)), "mape": float(error.mean()), "median_abs": float(np.median(error)),
            "host_lag_s": {f"{s}|{g}": float(v) for (s, g), v in zip(lag_keys, lags)}, "evaluations": int(result.nfev)}
    return params, info


MIN_ROWS = 50          # fewer measurements than this: the class borrows a donor's constants (kernels.DONOR)
FIT_CAP = 3000         # rows per (source, GPU) and class, so one large source does not drown the rest


def fit_kernels(ts, *, classes=None, cap: int = FIT_CAP, lag_sources: frozenset[str] | None = None,
                log=None) -> tuple[dict[str, KernelParams], dict[str, dict]]:
    """`KernelParams` for every kernel class with at least `MIN_ROWS` rows in ``ts``, and each fit's summary."""
    from .kernels import KERNEL_CLASSES, kernel_class
    from .training import HOST_LAG_SOURCES, balanced_rows

    lag_sources = HOST_LAG_SOURCES if lag_sources is None else lag_sources
    kinds = kernel_class(ts.ops)
    models, info = {}, {}
    for kind in classes or KERNEL_CLASSES:
        rows = np.flatnonzero(kinds == kind)
        if rows.size < MIN_ROWS:
            continue
        models[kind], info[kind] = fit_kernel_class(kind, ts, balanced_rows(ts, rows, cap=cap), lag_sources=lag_sources)

        if log is not None:
            log(f"  {kind:15s} {info[kind]['rows']:6d} rows, training MAPE {info[kind]['mape']:.3f}")
    return models, info


def harness_lag(info: dict[str, dict], source: str, kind: str | None = None) -> float:
    """The median host lag the fits of class ``kind`` (default: every class) found for a harness over its GPUs,
    to compare with that harness's measurements on a new GPU."""
    values = [v for cls, entry in info.items() if kind is None or cls == kind
              for key, v in entry.get("host_lag_s", {}).items() if key.split("|", 1)[0] == source]
    return float(np.median(values)) if values else 0.0


def predict_paired(models: dict[str, KernelParams], ops, devices) -> np.ndarray:
    """Device seconds of kernel-level ops ``ops[i]`` on ``devices[i]`` (measured rows; no expansion, no envelope)."""
    from .bound import bound_seconds
    from .kernels import price_kernels
    from .model import DEFAULT_UTILISATION

    out = np.array(bound_seconds(paired(ops, devices))) / DEFAULT_UTILISATION
    return price_kernels(models, ops, out, lambda rows: paired(ops.take(rows), devices.take(rows)))
