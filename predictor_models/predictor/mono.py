"""A network whose output never decreases when a monotone input grows: stored as plain arrays, run with numpy.

    h1 = act(zm @ W1m + xf @ W1f + b1)           W1m >= 0
    h2 = act(h1 @ W2 + xf @ W2f + b2)             W2 >= 0
    y  = h2 @ w3 + zm @ ws + xf @ w3f + b3        w3 >= 0, ws >= 0

with ``zm`` the monotone inputs standardised (a positive scale keeps their direction), ``xf`` the free inputs
and ``act`` non-decreasing (half the units tanh, half softplus: bounded and convex shapes both). Every path
from a monotone input to the output has non-negative weights through non-decreasing activations, so ``y`` is
non-decreasing in each monotone input for every input, not only where it was trained; the free inputs only
move the units' thresholds. ``y`` is the log of a kernel's device seconds (`kernel_features.py` says what the
inputs are). Nothing in the stored form is executed: it is arrays and two numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


ROWS_PER_BLOCK = 4096   # rows a call computes at once: a block's hidden activations stay in the CPU's cache


# the arguments' range: beyond it each unit is constant to the last bit (tanh is +-1.0, softplus 0.0 below and
# x itself above, where 1 + exp(x) rounds to exp(x)); exp never overflows nor reaches its slow subnormal results
TANH_RANGE = (-20.0, 20.0)
SOFTPLUS_RANGE = (-40.0, 40.0)


def tanh(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """tanh(x) = 1 - 2 / (exp(2x) + 1), into ``out``: one exp and a few cheap passes, twice as fast as NumPy's tanh
    on this machine (which has no vectorised float64 tanh without AVX-512). Each step is non-decreasing in x in
    floating point too (exp, adding, 2/y then negated), so a unit never falls as its input grows; absolute error
    ~1e-16."""
    np.clip(x, *TANH_RANGE, out=out)
    out *= 2.0
    np.exp(out, out=out)
    out += 1.0
    np.divide(-2.0, out, out=out)
    out += 1.0
    return out


def softplus(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """softplus(x) = max(x, log(1 + exp(x clipped to its range))), into ``out`` (not ``x``: the last step reads
    it): exp and log, 1.7x as fast as NumPy's logaddexp here, and non-decreasing step by step in floating point
    (logaddexp fell at the last bit 5 times on a fine sweep of 200,000 points)."""
    np.clip(x, *SOFTPLUS_RANGE, out=out)
    np.exp(out, out=out)
    out += 1.0
    np.log(out, out=out)
    np.maximum(out, x, out=out)
    return out


def activate(h: np.ndarray) -> np.ndarray:
    """Half the units tanh, half softplus (both non-decreasing), for ``h`` of shape ``(units, rows)``: each half is
    one contiguous block, so every pass runs over it at once (on rows of 16 units a pass paid its per-row cost
    4,096 times a block and took twice as long)."""
    half = h.shape[0] // 2
    out = np.empty_like(h)
    tanh(h[:half], out=out[:half])
    softplus(h[half:], out=out[half:])
    return out


@dataclass(frozen=True)
class MonoNet:
    """Trained arrays of one network (see the module docstring); ``lags`` are the harness lags learnt beside it
    (``{"source|device": seconds}``), kept for the record and never added to a prediction."""

    mean: np.ndarray      # (m,) of the monotone inputs
    scale: np.ndarray     # (m,) > 0
    w1m: np.ndarray       # (m, h1) >= 0
    w1f: np.ndarray       # (f, h1)
    b1: np.ndarray        # (h1,)
    w2: np.ndarray        # (h1, h2) >= 0
    w2f: np.ndarray       # (f, h2)
    b2: np.ndarray        # (h2,)
    w3: np.ndarray        # (h2,) >= 0
    ws: np.ndarray        # (m,) >= 0
    w3f: np.ndarray       # (f,)
    b3: float
    mono_names: tuple[str, ...] = ()
    free_names: tuple[str, ...] = ()
    lags: dict | None = None

    def check(self) -> None:
        """The signs the guarantee rests on (a hand-edited or corrupt file is refused)."""
        if not (np.all(self.scale > 0) and np.all(self.w1m >= 0) and np.all(self.w2 >= 0)
                and np.all(self.w3 >= 0) and np.all(self.ws >= 0)):
            raise ValueError("monotone network weights break their signs (scale > 0, monotone weights >= 0)")
        m, h1 = self.w1m.shape
        f = self.w1f.shape[0]
        if (self.mean.shape != (m,) or self.w1f.shape != (f, h1) or self.w2.shape[0] != h1
                or self.w2f.shape != (f, self.w2.shape[1]) or self.w3.shape != (self.w2.shape[1],)
                or self.ws.shape != (m,) or self.w3f.shape != (f,)):
            raise ValueError("monotone network arrays do not fit together")

    def __call__(self, mono: np.ndarray, free: np.ndarray) -> np.ndarray:
        """log seconds for rows of ``mono`` ``(n, m)`` and ``free`` ``(n, f)``, `ROWS_PER_BLOCK` rows at a time (each
        block's hidden activations stay in the CPU's cache: 130,000 rows took 139 ms so against 224 ms in one pass,
        2026-12-07; every row's arithmetic is the same either way)."""
        inputs = np.concatenate([mono, free], axis=1)   # one product a block for both kinds of input
        n = inputs.shape[0]
        if n <= ROWS_PER_BLOCK:
            return self._rows(inputs)
        out = np.empty(n)
        for start in range(0, n, ROWS_PER_BLOCK):
            stop = min(n, start + ROWS_PER_BLOCK)
            out[start:stop] = self._rows(inputs[start:stop])
        return out

    def __post_init__(self) -> None:
        # every layer's part from the inputs (the monotone ones standardised, the free ones), and the skip path,
        # folded into one product per block, units first: ``(h1 + h2 + 1, m + f)``; scale > 0, so the monotone
        # inputs' weights keep their signs
        h1, h2 = self.w2.shape
        m, f = self.mean.shape[0], self.w1f.shape[0]
        from_inputs = np.zeros((h1 + h2 + 1, m + f))
        from_inputs[:h1, :m] = (self.w1m / self.scale[:, None]).T
        from_inputs[-1, :m] = self.ws / self.scale
        from_inputs[:, m:] = np.concatenate([self.w1f, self.w2f, self.w3f[:, None]], axis=1).T
        shift = self.mean / self.scale
        bias = np.concatenate([self.b1 - shift @ self.w1m, self.b2, [self.b3 - shift @ self.ws]])
        object.__setattr__(self, "_fused", (from_inputs, bias[:, None], np.ascontiguousarray(self.w2.T)))

    def _rows(self, inputs: np.ndarray) -> np.ndarray:
        # units along the first axis, rows along the second: each layer's tanh and softplus halves are contiguous
        from_inputs, bias, w2_t = self._fused
        h1 = w2_t.shape[1]
        pre = from_inputs @ inputs.T
        pre += bias
        hidden = w2_t @ activate(pre[:h1])
        hidden += pre[h1:-1]
        return self.w3 @ activate(hidden) + pre[-1]

    def to_json(self) -> dict:
        arrays = {k: getattr(self, k).tolist() for k in ("mean", "scale", "w1m", "w1f", "b1", "w2", "w2f", "b2",
                                                          "w3", "ws", "w3f")}
        return {**arrays, "b3": float(self.b3), "mono_names": list(self.mono_names),
                "free_names": list(self.free_names), "lags": dict(self.lags or {})}

    @classmethod
    def from_json(cls, doc: dict) -> "MonoNet":
        arrays = {k: np.asarray(doc[k], dtype=np.float64) for k in ("mean", "scale", "w1m", "w1f", "b1", "w2",
                                                                     "w2f", "b2", "w3", "ws", "w3f")}
        net = cls(**arrays, b3=float(doc["b3"]), mono_names=tuple(doc.get("mono_names", ())),
                  free_names=tuple(doc.get("free_names", ())), lags=dict(doc.get("lags") or {}))
        net.check()
        return net
