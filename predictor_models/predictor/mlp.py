"""A small MLP regressor: fitted with scikit-learn, stored as plain arrays, evaluated with numpy.

Why an MLP and not trees: `predict_matrix` must score 10,000 ops on 40 devices (400k pairs) in
100 ms; a 2-hidden-layer MLP is three small matrix products, a tree ensemble is hundreds of
data-dependent gathers.
"""
from __future__ import annotations

import numpy as np

HIDDEN = (32, 16)


def fit_mlp(x: np.ndarray, y: np.ndarray, *, seed: int, hidden: tuple[int, ...] = HIDDEN, max_iter: int = 200,
            weight_decay: float = 1e-4) -> dict:
    """Fit on standardised ``x`` with L2 penalty ``weight_decay`` (scikit-learn's ``alpha``);
    returns ``{"mean", "scale", "layers": [(W, b), ...], "y_clip"}``."""
    from sklearn.neural_network import MLPRegressor

    mean = x.mean(axis=0)
    lo, hi = x.min(axis=0), x.max(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    model = MLPRegressor(hidden_layer_sizes=hidden, activation="relu", solver="adam", alpha=weight_decay,
                         batch_size=512, learning_rate_init=2e-3, max_iter=max_iter, early_stopping=True,
                         validation_fraction=0.1, n_iter_no_change=12, tol=1e-5, random_state=seed)
    model.fit((x - mean) / scale, y)
    layers = [(w.astype(np.float64), b.astype(np.float64)) for w, b in zip(model.coefs_, model.intercepts_)]
    return {"mean": mean, "scale": scale, "layers": layers, "y_clip": (float(y.min()), float(y.max())),
            "x_lo": lo, "x_hi": hi}


def predict_mlp(params: dict, x: np.ndarray) -> np.ndarray:
    """Forward pass in float32 (fast; the target is a log, float32 is ample), clipped to the trained range."""
    # features are clipped to the range seen in training: an MLP extrapolates linearly, and a device
    # beyond the data (fewer SMs, a higher ridge) must get the nearest learnt utilisation, not a wild one
    x = np.clip(x, params["x_lo"], params["x_hi"])
    h = ((x - params["mean"]) / params["scale"]).astype(np.float32)
    layers = params["layers"]
    for i, (w, b) in enumerate(layers):
        h = h @ np.asarray(w, dtype=np.float32) + np.asarray(b, dtype=np.float32)
        if i < len(layers) - 1:
            np.maximum(h, 0.0, out=h)
    lo, hi = params["y_clip"]
    return np.clip(h[:, 0].astype(np.float64), lo, hi)


def predict_mlp_columns(params: dict, cols: list[np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    """Forward pass for every op on every device without building the ``(n*d, features)`` matrix.

    The first layer is linear, so op-only columns (shape ``(n, 1)``) and device-only columns
    (``(1, d)``) are multiplied once per op and once per device; only the columns that mix both
    (``(n, d)``) are multiplied per pair. This is what makes 10k ops x 40 devices cheap.
    """
    return _forward(params, _normalised(params, cols, shape), shape)


def predict_ensemble_columns(members: list[dict], cols: list[np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    """The mean of `predict_mlp_columns` over ``members``, the same numbers: members fitted on one feature matrix
    share its standardisation and range, so its normalised columns (most of the work on many ops and devices)
    are built once for all of them."""
    shared = all(_same_scaling(members[0], m) for m in members[1:])
    parts = _normalised(members[0], cols, shape) if shared else None
    total = None
    for m in members:
        out = _forward(m, parts if shared else _normalised(m, cols, shape), shape)
        total = out if total is None else total + out
    return total / len(members)


def _same_scaling(a: dict, b: dict) -> bool:
    return all(np.array_equal(a[k], b[k]) for k in ("mean", "scale", "x_lo", "x_hi"))


def _normalised(params: dict, cols: list[np.ndarray], shape: tuple[int, int]) -> dict[str, tuple]:
    """The standardised, range-clipped feature columns in three groups: per pair ``(n*d, k)``, per op ``(n, k)``,
    per device ``(d, k)``, each with the indices of its columns."""
    n, d = shape
    mean, scale, lo, hi = params["mean"], params["scale"], params["x_lo"], params["x_hi"]
    groups: dict[str, list[int]] = {"op": [], "dev": [], "pair": []}
    for j, c in enumerate(cols):
        c_shape = np.shape(c)
        if c_shape == (n, 1) or c_shape == (n,) and d != n:
            groups["op"].append(j)
        elif c_shape == (1, d) or c_shape == (d,) and d != n:
            groups["dev"].append(j)
        else:
            groups["pair"].append(j)

    def part(idx: list[int], rows: int) -> np.ndarray | None:
        if not idx:
            return None
        z = np.empty((rows, len(idx)), dtype=np.float32)
        for i, j in enumerate(idx):
            col = (np.broadcast_to(cols[j], shape) if rows == n * d else np.asarray(cols[j])).reshape(-1)
            z[:, i] = (np.clip(col, lo[j], hi[j]) - mean[j]) / scale[j]
        return z

    return {"pair": (groups["pair"], part(groups["pair"], n * d)), "op": (groups["op"], part(groups["op"], n)),
            "dev": (groups["dev"], part(groups["dev"], d))}


PAIRS_PER_BLOCK = 4096   # hidden activations of one block (4096 x 32 float32) stay in the CPU's cache


def _forward(params: dict, parts: dict[str, tuple], shape: tuple[int, int]) -> np.ndarray:
    """The network on every (op, device) pair, a block of ops at a time: on 5,005 ops x 21 devices one pass
    over all pairs took 28 ms a member, blocks of 4,096 pairs 7.6 ms (their activations no longer leave the
    cache; benchmarks/results/issue38_speed/)."""
    n, d = shape
    step = max(1, PAIRS_PER_BLOCK // max(d, 1))
    if n <= step:
        return _forward_block(params, parts, shape)
    (pair_idx, pair), (op_idx, op), dev_part = parts["pair"], parts["op"], parts["dev"]
    out = np.empty(n * d)
    for start in range(0, n, step):
        stop = min(n, start + step)
        block = {"pair": (pair_idx, None if pair is None else pair[start * d:stop * d]),
                 "op": (op_idx, None if op is None else op[start:stop]), "dev": dev_part}
        out[start * d:stop * d] = _forward_block(params, block, (stop - start, d))
    return out


def _forward_block(params: dict, parts: dict[str, tuple], shape: tuple[int, int]) -> np.ndarray:
    n, d = shape
    w1 = np.asarray(params["layers"][0][0], dtype=np.float32)
    b1 = np.asarray(params["layers"][0][1], dtype=np.float32)
    (pair_idx, pair), (op_idx, op), (dev_idx, dev) = parts["pair"], parts["op"], parts["dev"]
    # the first layer's bias rides on the per-op part (n rows, not n x d): one pass fewer over the pairs' activations
    if op is not None:
        per_op = op @ w1[op_idx]
        per_op += b1
    else:
        per_op = np.broadcast_to(b1, (n, b1.shape[0]))
    if pair is None:
        h = np.empty((n, d, b1.shape[0]), dtype=np.float32)
        h[...] = per_op[:, None, :]
    else:
        h = (pair @ w1[pair_idx]).reshape(n, d, -1)
        h += per_op[:, None, :]
    if dev is not None:
        h += (dev @ w1[dev_idx])[None, :, :]
    h = h.reshape(n * d, -1)
    layers = params["layers"]
    np.maximum(h, 0.0, out=h)
    for i, (w, b) in enumerate(layers[1:], start=1):
        h = h @ np.asarray(w, dtype=np.float32)
        h += np.asarray(b, dtype=np.float32)
        if i < len(layers) - 1:
            np.maximum(h, 0.0, out=h)
    lo, hi = params["y_clip"]
    return np.clip(h[:, 0].astype(np.float64), lo, hi)


def to_json(params: dict) -> dict:
    return {"mean": params["mean"].tolist(), "scale": params["scale"].tolist(),
            "x_lo": params["x_lo"].tolist(), "x_hi": params["x_hi"].tolist(),
            "layers": [{"W": w.tolist(), "b": b.tolist()} for w, b in params["layers"]],
            "y_clip": list(params["y_clip"])}


def from_json(obj: dict) -> dict:
    """Rebuild params from JSON, checking shapes so that a corrupt file fails here, not mid-prediction."""
    mean = np.asarray(obj["mean"], dtype=np.float64)
    scale = np.asarray(obj["scale"], dtype=np.float64)
    layers = [(np.asarray(l["W"], dtype=np.float32), np.asarray(l["b"], dtype=np.float32)) for l in obj["layers"]]
    width = mean.shape[0]
    x_lo = np.asarray(obj["x_lo"], dtype=np.float64)
    x_hi = np.asarray(obj["x_hi"], dtype=np.float64)
    if scale.shape != mean.shape or x_lo.shape != mean.shape or x_hi.shape != mean.shape or not layers:
        raise ValueError("feature scaling and layers do not match")
    for w, b in layers:
        if w.ndim != 2 or w.shape[0] != width or b.shape != (w.shape[1],):
            raise ValueError("layer shapes do not chain")
        width = w.shape[1]
    if width != 1:
        raise ValueError("the last layer must have one output")
    lo, hi = (float(v) for v in obj["y_clip"])
    return {"mean": mean, "scale": scale, "layers": layers, "y_clip": (lo, hi), "x_lo": x_lo, "x_hi": x_hi}
