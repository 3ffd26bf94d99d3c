"""The PreNeT paper's method (Pourali et al., ICPE 2025) as our baseline, for side-by-side evaluation.

Per layer type, the paper's best regressor -- random forest for dense (GEMM) and convolution, an MLP
(hidden 32, 64, 128, 128, 128, 128, ReLU, Adam lr 1e-3, batch 128, up to 300 epochs) for the rest --
on raw layer parameters, GPU spec features (memory bandwidth, clock, CUDA cores, memory size, tensor
cores) and the computational features CO, CM and CT, predicting the time itself (ms).
Deviations, all to keep it runnable on 2 cores and comparable: the forest has 30 trees with at least 2 samples per leaf; the MLP has
no dropout (scikit-learn has none) and stops early on a 10% validation split; no GPU one-hot (it is
all zeros for the held-out GPU anyway); it is trained on the same balanced rows as our model.
"""
from __future__ import annotations

import numpy as np

from predictor_models.predictor.bound import Pairs

# raw layer parameters the paper's feature set has, per op class (our dims naming)
RAW_PARAMS = {
    "gemm": ("b", "m", "n", "k"),
    "conv": ("n", "c_in", "c_out", "h_in", "kh", "stride", "groups"),
    "norm": ("rows", "cols"),
    "elementwise": ("numel", "inputs"),
    "embedding": ("indices", "dim", "vocab"),
}
FOREST_CLASSES = frozenset({"gemm", "conv"})


def _co_cm(op_class: str, p: Pairs) -> tuple[np.ndarray, np.ndarray]:
    """Computational operations (CO) and memory (CM, elements) as the paper defines them per layer type."""
    d = p.dim
    if op_class == "gemm":
        b, m, n, k = (np.maximum(d(x), 1.0) for x in "bmnk")
        return b * m * n * k, b * (m * k + k * n + m * n)
    if op_class == "conv":
        co = d("n") * d("h_out") * d("w_out") * d("kh") * d("kw") * d("c_in") * d("c_out") / np.maximum(d("groups"), 1)
        cm = d("c_in") * d("c_out") * d("kh") * d("kw") + d("n") * d("c_in") * d("h_in") * d("w_in") \
            + d("n") * d("c_out") * d("h_out") * d("w_out")
        return co, cm
    if op_class == "norm":
        return d("rows") * d("cols"), 2 * d("rows") * d("cols") + 2 * d("cols")
    if op_class == "elementwise":
        return d("numel"), (d("inputs") + 1) * d("numel")
    if op_class == "embedding":
        return d("indices") * d("dim"), d("vocab") * d("dim") + d("indices") * (d("dim") + 1)
    raise KeyError(op_class)


def baseline_features(op_class: str, p: Pairs) -> np.ndarray:
    """Raw parameters + GPU specs + CO, CM, CT as a ``(pairs, features)`` matrix."""
    co, cm = _co_cm(op_class, p)
    cores = p.dev.peaks[..., 0] / (2e6 * p.dev.clock_mhz)  # FP32 FLOP/s = 2 x cores x clock
    cols = [p.dim(k) for k in RAW_PARAMS[op_class]] + [
        p.ops.esize, p.tensor,
        p.dev.bandwidth / 1e9, p.dev.clock_mhz, cores, p.dev.memory_gb,
        co, cm, co / p.peak * 1e3,
    ]
    return np.stack([np.broadcast_to(c, p.shape).reshape(-1) for c in cols], axis=1)


def fit_baseline(op_class: str, x: np.ndarray, ms: np.ndarray, *, seed: int):
    """The paper's best regressor for the layer type, fitted to time in ms."""
    if op_class in FOREST_CLASSES:
        from sklearn.ensemble import RandomForestRegressor

        model = RandomForestRegressor(n_estimators=30, min_samples_leaf=2, random_state=seed, n_jobs=1)
        return model.fit(x, ms)
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    mlp = MLPRegressor(hidden_layer_sizes=(32, 64, 128, 128, 128, 128), activation="relu", solver="adam",
                       learning_rate_init=1e-3, batch_size=128, max_iter=300, early_stopping=True,
                       n_iter_no_change=10, random_state=seed)
    return make_pipeline(StandardScaler(), mlp).fit(x, ms)


def predict_baseline(model, x: np.ndarray) -> np.ndarray:
    """Predicted ms, floored at 1 us (a regressor on raw time can go negative)."""
    return np.maximum(model.predict(x), 1e-3)
