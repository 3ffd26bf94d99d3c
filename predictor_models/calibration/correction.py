"""The per-device correction: log(measured / predicted) per op class, as an offset plus a smooth
function of the op, learnt from the rows measured on that device.

Per class, the correction of an op is ``offset + k(x) . alpha``: ``offset`` the median log ratio of
the class's rows, ``k(x)`` a Gaussian kernel between the op's features and those of the fitted rows
(kernel ridge regression, the usual model of a simulator's discrepancy), so ops like the measured
ones get their residual and ops unlike any of them fall back to the offset. The features are the
base model's own scale-free features of the class on that device (`predictor.features`, those that
vary between the rows) plus the log of the predicted time, standardised and clipped to the fitted
range. The kernel width and the ridge penalty are chosen per class by exact leave-one-out error, and
the kernel is dropped where it does not beat the offset alone out of sample.
Held-out comparisons (benchmarks/calibration_value.py, docs/calibration.md) chose this over an
offset alone, an offset and slope in log time, and ridge on features or on the MLPs' hidden units.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from predictor_models.predictor.bound import matrix
from predictor_models.predictor.devices import DeviceColumns
from predictor_models.predictor.features import FEATURES, feature_matrix
from predictor_models.predictor.optable import OpColumns

MIN_KERNEL_ROWS = 8      # fewer rows in a class: the offset alone
MIN_ROWS = 3             # fewer: no correction for the class
WIDTHS = (0.5, 1.0, 2.0, 4.0)          # kernel width, times the median squared distance between rows
PENALTIES = (0.03, 0.1, 0.3, 1.0, 3.0)  # ridge penalty (the kernel's diagonal is 1)
EXTRA_FEATURES = ["log10_predicted_s"]


def class_features(op_class: str, cols: OpColumns, device: DeviceColumns, predicted: np.ndarray) -> np.ndarray:
    """``(ops, features)``: the class's model features on the (one) device, then log10 of the predicted time."""
    return np.column_stack([feature_matrix(op_class, matrix(cols, device)), np.log10(predicted)])


@dataclass
class ClassFit:
    """One class's correction; ``support`` empty means the offset alone."""

    offset: float
    rows: int
    columns: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))   # feature columns used
    mean: np.ndarray = field(default_factory=lambda: np.zeros(0))
    scale: np.ndarray = field(default_factory=lambda: np.zeros(0))
    lo: np.ndarray = field(default_factory=lambda: np.zeros(0))
    hi: np.ndarray = field(default_factory=lambda: np.zeros(0))
    support: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # standardised fitted rows
    alpha: np.ndarray = field(default_factory=lambda: np.zeros(0))
    width: float = 1.0

    def log_ratio(self, x: np.ndarray) -> np.ndarray:
        """log(corrected / predicted) for feature rows ``x`` (all class features, in order)."""
        out = np.full(x.shape[0], self.offset)
        if self.alpha.size and x.shape[0]:
            z = (np.clip(x[:, self.columns], self.lo, self.hi) - self.mean) / self.scale
            out += np.exp(-_sq_dist(z, self.support) / self.width) @ self.alpha
        return out

    def to_json(self) -> dict:
        return {"offset": self.offset, "rows": self.rows, "columns": self.columns.tolist(), "mean": self.mean.tolist(),
                "scale": self.scale.tolist(), "lo": self.lo.tolist(), "hi": self.hi.tolist(),
                "support": self.support.tolist(), "alpha": self.alpha.tolist(), "width": self.width}

    @classmethod
    def from_json(cls, doc: dict, n_features: int) -> "ClassFit":
        columns = np.asarray(doc["columns"], dtype=int).reshape(-1)
        vectors = [np.asarray(doc[k], dtype=np.float64).reshape(-1) for k in ("mean", "scale", "lo", "hi", "alpha")]
        support = np.asarray(doc["support"], dtype=np.float64)
        k = columns.size
        if np.any(columns < 0) or np.any(columns >= n_features) or any(v.shape != (k,) for v in vectors[:4]):
            raise ValueError("correction columns do not match the class's features")
        if vectors[4].size and support.shape != (vectors[4].size, k) or not vectors[4].size and support.size:
            raise ValueError("correction support rows do not match their weights")
        values = [float(doc["offset"]), float(doc["width"]), *vectors, support]
        if not all(np.all(np.isfinite(v)) for v in values) or np.any(vectors[1] <= 0) or float(doc["width"]) <= 0:
            raise ValueError("correction values are not finite and positive where they must be")
        return cls(float(doc["offset"]), int(doc["rows"]), columns, *vectors[:4], support, vectors[4],
                   float(doc["width"]))


def _sq_dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum((a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T, 0.0)


def fit_class(x: np.ndarray, y: np.ndarray) -> ClassFit:
    """Median offset plus kernel ridge on the varying feature columns; the kernel's width and penalty
    by exact leave-one-out error, and the kernel kept only where its leave-one-out mean absolute error
    beats the offset's (log ratios are skewed: a median and absolute errors follow MAPE)."""
    offset = float(np.median(y))
    n = y.size
    if n < MIN_KERNEL_ROWS:
        return ClassFit(offset, n)
    spread = x.std(axis=0)
    columns = np.flatnonzero(spread > 1e-9 * np.maximum(1.0, np.abs(x).max(axis=0)))
    if columns.size == 0:
        return ClassFit(offset, n)
    lo, hi = x[:, columns].min(axis=0), x[:, columns].max(axis=0)
    mean, scale = x[:, columns].mean(axis=0), spread[columns]
    z = (x[:, columns] - mean) / scale
    d2 = _sq_dist(z, z)
    median = float(np.median(d2[d2 > 0])) if np.any(d2 > 0) else 1.0
    r = y - offset
    best = None
    for w in WIDTHS:
        values, vectors = np.linalg.eigh(np.exp(-d2 / (w * median)))
        projected = vectors.T @ r
        for lam in PENALTIES:
            shrink = values / (values + lam)
            fitted = vectors @ (shrink * projected)
            leverage = np.einsum("ij,j,ij->i", vectors, shrink, vectors)
            loo = np.abs((r - fitted) / np.maximum(1.0 - leverage, 1e-6))
            if best is None or np.mean(loo) < best[0]:
                best = (float(np.mean(loo)), w, lam, vectors, values, projected)
    score, w, lam, vectors, values, projected = best
    if score >= np.mean(np.abs(r)):          # the kernel does not beat the offset out of sample
        return ClassFit(offset, n)
    alpha = vectors @ (projected / (values + lam))
    return ClassFit(offset, n, columns, mean, scale, lo, hi, z, alpha, w * median)


@dataclass
class Correction:
    """Per-class fits for one device; a class without a fit keeps the base prediction."""

    device: str
    fits: dict[str, ClassFit] = field(default_factory=dict)

    def log_ratio(self, cols: OpColumns, device: DeviceColumns, predicted: np.ndarray) -> np.ndarray:
        """log(corrected / predicted) for the ops ``cols`` on the calibrated ``device`` (one device)."""
        out = np.zeros(len(cols))
        for op_class, fit in self.fits.items():
            rows = np.flatnonzero(cols.op_class == op_class)
            if rows.size:
                out[rows] = fit.log_ratio(class_features(op_class, cols.take(rows), device, predicted[rows]))
        return out

    def to_json(self) -> dict:
        return {cls: {"features": FEATURES[cls][1] + EXTRA_FEATURES, **fit.to_json()}
                for cls, fit in sorted(self.fits.items())}

    @classmethod
    def from_json(cls, device: str, doc: dict) -> "Correction":
        fits = {}
        for op_class, entry in doc.items():
            if op_class not in FEATURES:
                raise ValueError(f"unknown op class {op_class!r}")
            names = FEATURES[op_class][1] + EXTRA_FEATURES
            if list(entry["features"]) != names:
                raise ValueError(f"{op_class}: features differ from this code's")
            fits[op_class] = ClassFit.from_json(entry, len(names))
        return cls(device, fits)


def fit_correction(device: str, cols: OpColumns, dev: DeviceColumns, predicted: np.ndarray, measured: np.ndarray,
                   index: np.ndarray | None = None) -> Correction:
    """Fit every class with at least `MIN_ROWS` rows among ``index`` (default: all)."""
    index = np.arange(measured.size) if index is None else np.asarray(index)
    y = np.log(measured / predicted)
    correction = Correction(device)
    for op_class in sorted(set(cols.op_class[index])):
        rows = index[cols.op_class[index] == op_class]
        if rows.size < MIN_ROWS or op_class not in FEATURES:
            continue
        correction.fits[op_class] = fit_class(class_features(op_class, cols.take(rows), dev, predicted[rows]), y[rows])
    return correction
