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


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def activate(h: np.ndarray) -> np.ndarray:
    """Half the units tanh, half softplus (both non-decreasing)."""
    half = h.shape[-1] // 2
    out = np.empty_like(h)
    out[..., :half] = np.tanh(h[..., :half])
    out[..., half:] = softplus(h[..., half:])
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
        n = mono.shape[0]
        if n <= ROWS_PER_BLOCK:
            return self._rows(mono, free)
        out = np.empty(n)
        for start in range(0, n, ROWS_PER_BLOCK):
            stop = min(n, start + ROWS_PER_BLOCK)
            out[start:stop] = self._rows(mono[start:stop], free[start:stop])
        return out

    def _rows(self, mono: np.ndarray, free: np.ndarray) -> np.ndarray:
        z = (mono - self.mean) / self.scale
        h1 = activate(z @ self.w1m + free @ self.w1f + self.b1)
        h2 = activate(h1 @ self.w2 + free @ self.w2f + self.b2)
        return h2 @ self.w3 + z @ self.ws + free @ self.w3f + self.b3

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
