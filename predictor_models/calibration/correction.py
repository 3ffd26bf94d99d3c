"""The per-device correction: log(measured / predicted) as a small linear function per op group.

A group is an op class and its math (``gemm/tensor``, ``gemm/fp32``, ``norm/half``, ...); each gets
``log(measured / predicted) = coef . basis`` over a few named basis terms of the op on the device
(an offset, the log of the predicted time, ...), fitted by ridge least squares on the calibration
rows, with each term clipped at prediction time to the range the fit saw (no extrapolation). A
group with few rows fits fewer terms; an op whose group was not measured uses its class's fit
(all maths together), and a class that was not measured is left as the base predicts it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from predictor_models.predictor.bound import LAUNCH_S, Pairs, compute_seconds, memory_seconds
from predictor_models.predictor.devices import MODES

TENSOR_MODES = np.array([m in ("tf32", "fp16", "bf16", "fp8") for m in MODES])
ALL = "*"
RIDGE = 1.0            # penalty on the non-offset terms (standardised), in rows: light shrinkage
MIN_ROWS = {1: 3, 2: 8, 3: 16}   # rows a group needs to fit that many basis terms


@dataclass(frozen=True)
class Context:
    """What the basis terms are computed from: the ops on one device, and the base prediction."""

    pairs: Pairs
    predicted: np.ndarray   # seconds, base predictor
    bound: np.ndarray       # seconds


BASIS: dict[str, Callable[[Context], np.ndarray]] = {
    "offset": lambda c: np.ones_like(c.predicted),
    "log_predicted": lambda c: np.log10(c.predicted),
    "log_utilisation": lambda c: np.log10(c.bound / c.predicted),
    "log_intensity": lambda c: np.clip(np.log10((compute_seconds(c.pairs) + 1e-12) / (memory_seconds(c.pairs) + 1e-12)),
                                       -6, 6).reshape(-1) * np.ones_like(c.predicted),
    "log_launches": lambda c: np.log10(c.bound / LAUNCH_S),
}
DEFAULT_TERMS = ("offset", "log_predicted")


def math_of(pairs: Pairs) -> np.ndarray:
    """``tensor`` (TF32/FP16/BF16/FP8 matrix math), ``half`` (2-byte vector math) or ``fp32``."""
    mode = np.asarray(pairs.ops.mode).reshape(-1)
    esize = np.asarray(pairs.ops.esize).reshape(-1)
    return np.where(TENSOR_MODES[mode], "tensor", np.where(esize <= 2, "half", "fp32")).astype(object)


def group_keys(pairs: Pairs) -> np.ndarray:
    classes = np.asarray(pairs.ops.op_class).reshape(-1).astype(object)
    return np.array([f"{c}/{m}" for c, m in zip(classes, math_of(pairs))], dtype=object)


@dataclass
class GroupFit:
    """One group's correction: ``coef`` over ``terms``, each term clipped to [lo, hi]."""

    terms: tuple[str, ...]
    coef: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    rows: int

    def log_ratio(self, ctx: Context, index: np.ndarray) -> np.ndarray:
        x = np.column_stack([BASIS[t](ctx)[index] for t in self.terms])
        return np.clip(x, self.lo, self.hi) @ self.coef

    def to_json(self) -> dict:
        return {"terms": list(self.terms), "coef": self.coef.tolist(), "lo": self.lo.tolist(), "hi": self.hi.tolist(),
                "rows": self.rows}

    @classmethod
    def from_json(cls, doc: dict) -> "GroupFit":
        terms = tuple(doc["terms"])
        unknown = [t for t in terms if t not in BASIS]
        if unknown:
            raise ValueError(f"unknown correction term {unknown[0]!r}")
        arrays = [np.asarray(doc[k], dtype=np.float64).reshape(-1) for k in ("coef", "lo", "hi")]
        if any(a.shape != (len(terms),) for a in arrays) or not all(np.all(np.isfinite(a)) for a in arrays):
            raise ValueError("correction coefficients do not match their terms")
        return cls(terms, *arrays, int(doc["rows"]))


def fit_group(x: np.ndarray, y: np.ndarray, terms: tuple[str, ...], ridge: float = RIDGE) -> GroupFit:
    """Ridge least squares of ``y`` on the columns of ``x`` (the first is the offset, not penalised)."""
    lo, hi = x.min(axis=0), x.max(axis=0)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    mean[0], scale[0] = 0.0, 1.0
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    penalty = np.full(x.shape[1], ridge)
    penalty[0] = 0.0
    beta = np.linalg.solve(z.T @ z + np.diag(penalty), z.T @ y)
    coef = beta / scale
    coef[0] = beta[0] - float(np.sum(beta[1:] * mean[1:] / scale[1:]))
    return GroupFit(terms, coef, lo, hi, int(len(y)))


@dataclass
class Correction:
    """Group fits for one device (``fits[key]`` with key ``class/math`` or ``class/*``)."""

    device: str
    fits: dict[str, GroupFit] = field(default_factory=dict)

    def log_ratio(self, ctx: Context) -> np.ndarray:
        """log(corrected / base) per op: its group's fit, else its class's, else 0."""
        keys = group_keys(ctx.pairs)
        out = np.zeros(keys.size)
        for key in np.unique(keys):
            fit = self.fits.get(key) or self.fits.get(key.split("/")[0] + "/" + ALL)
            if fit is not None:
                index = np.flatnonzero(keys == key)
                out[index] = fit.log_ratio(ctx, index)
        return out


def fit_correction(device: str, ctx: Context, measured: np.ndarray, index: np.ndarray | None = None,
                   terms: tuple[str, ...] = DEFAULT_TERMS, ridge: float = RIDGE) -> Correction:
    """Fit every group with enough rows among ``index`` (default: all), and every class as a whole
    (the fallback for a math that was not measured)."""
    index = np.arange(measured.size) if index is None else np.asarray(index)
    y = np.log(measured / ctx.predicted)[index]
    keys = group_keys(ctx.pairs)[index]
    classes = np.array([k.split("/")[0] + "/" + ALL for k in keys], dtype=object)
    columns = {t: BASIS[t](ctx)[index] for t in terms}
    correction = Correction(device)
    for labels in (keys, classes):
        for key in np.unique(labels):
            rows = np.flatnonzero(labels == key)
            usable = max((n for n, need in MIN_ROWS.items() if rows.size >= need and n <= len(terms)), default=0)
            if usable == 0:
                continue
            chosen = terms[:usable]
            x = np.column_stack([columns[t][rows] for t in chosen])
            correction.fits[key] = fit_group(x, y[rows], chosen, ridge)
    return correction
