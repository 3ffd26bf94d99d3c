"""Fitting a `MonoNet` to measured kernel times with PyTorch (training only; prediction is numpy).

The loss is the squared log error of the measured seconds against ``exp(net) + lag``, where ``lag`` is a
harness's host lag on one GPU (`HOST_LAG_SOURCES`: NeuSight times one call between two CUDA events, so its
latencies hold the host's issue of the op before the kernel, ~20-35 us). Each (source, GPU) of those sources
gets one learnt lag >= 0; the network learns kernel times, and the lags are kept in the file for the record and
never added to a prediction (the host's per-op cost is the host model's, counted once).

Monotone weights are the softplus of free parameters, so the signs `MonoNet.check` asks for hold by
construction. Training is a few Adam epochs, then full-batch L-BFGS (a monotone network trained by Adam alone
stayed at ~30% in-sample error where L-BFGS reaches ~10%); seeded and single-threaded, so a run repeats.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .mono import MonoNet

HIDDEN = (32, 16)
ADAM_EPOCHS = 10
LBFGS_STEPS = 300
BATCH = 1024
LEARNING_RATE = 1e-2
WEIGHT_DECAY = 1e-4        # on the free inputs' weights
LAG_INIT_S = 20e-6
INIT_POSITIVE = -1.0       # monotone weights start at softplus(-1) ~ 0.31


def fit_mono(mono: np.ndarray, free: np.ndarray, seconds: np.ndarray, *, lag_group: np.ndarray | None = None,
             lag_names: Sequence[str] = (), seed: int = 0, hidden: tuple[int, int] = HIDDEN,
             adam_epochs: int = ADAM_EPOCHS, lbfgs_steps: int = LBFGS_STEPS,
             mono_names: Sequence[str] = (), free_names: Sequence[str] = ()) -> MonoNet:
    """Fit one network. ``lag_group``: per row, the index into ``lag_names`` of its harness lag, or -1."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    n, m = mono.shape
    f = free.shape[1]
    mean = mono.mean(axis=0)
    scale = mono.std(axis=0)
    scale[scale < 1e-9] = 1.0
    as_tensor = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float32)  # noqa: E731
    zm, xf = as_tensor((mono - mean) / scale), as_tensor(free)
    log_s = np.log(seconds)
    mu, sigma = float(log_s.mean()), float(max(log_s.std(), 1e-6))
    target = as_tensor((log_s - mu) / sigma)   # standardised log seconds; sigma folds into the last layer
    groups = torch.as_tensor(lag_group if lag_group is not None else -np.ones(n, dtype=np.int64), dtype=torch.long)
    h1, h2 = hidden
    g = torch.Generator().manual_seed(seed)
    p = {
        "w1m": torch.randn(m, h1, generator=g) * 0.5 + INIT_POSITIVE, "w1f": torch.zeros(f, h1),
        "b1": torch.randn(h1, generator=g) * 0.5,
        "w2": torch.randn(h1, h2, generator=g) * 0.5 + INIT_POSITIVE - np.log(h1 / 8), "w2f": torch.zeros(f, h2),
        "b2": torch.randn(h2, generator=g) * 0.5,
        "w3": torch.randn(h2, generator=g) * 0.5 + INIT_POSITIVE - np.log(h2 / 4), "ws": torch.full((m,), -3.0),
        "w3f": torch.zeros(f), "b3": torch.tensor(0.0),
        "lag": torch.full((max(len(lag_names), 1),), float(np.log(np.expm1(LAG_INIT_S / 1e-5)))),
    }
    for value in p.values():
        value.requires_grad_(True)
    sp = torch.nn.functional.softplus

    def forward(zb, fb):
        a = zb @ sp(p["w1m"]) + fb @ p["w1f"] + p["b1"]
        a = torch.cat([torch.tanh(a[:, :h1 // 2]), sp(a[:, h1 // 2:])], dim=1)
        b = a @ sp(p["w2"]) + fb @ p["w2f"] + p["b2"]
        b = torch.cat([torch.tanh(b[:, :h2 // 2]), sp(b[:, h2 // 2:])], dim=1)
        return b @ sp(p["w3"]) + zb @ sp(p["ws"]) + fb @ p["w3f"] + p["b3"]

    def loss_of(idx):
        y = forward(zm[idx], xf[idx])
        gi = groups[idx]
        lag = torch.where(gi >= 0, sp(p["lag"])[gi.clamp(min=0)] * 1e-5, torch.zeros_like(y))
        # log(kernel + lag) in standardised units, without overflow
        pred = (torch.logaddexp(y * sigma + mu, torch.log(lag)) - mu) / sigma
        decay = sum((p[k] ** 2).sum() for k in ("w1f", "w2f", "w3f"))
        return ((pred - target[idx]) ** 2).mean() + WEIGHT_DECAY * decay

    adam = torch.optim.Adam(list(p.values()), lr=LEARNING_RATE)
    for _ in range(adam_epochs):
        order = torch.as_tensor(rng.permutation(n))
        for start in range(0, n, BATCH):
            loss = loss_of(order[start:start + BATCH])
            adam.zero_grad()
            loss.backward()
            adam.step()
    if lbfgs_steps:
        everything = torch.arange(n)
        lbfgs = torch.optim.LBFGS(list(p.values()), lr=1.0, max_iter=lbfgs_steps, history_size=20,
                                  line_search_fn="strong_wolfe", tolerance_grad=1e-9, tolerance_change=1e-12)

        def closure():
            lbfgs.zero_grad()
            value = loss_of(everything)
            value.backward()
            return value
        lbfgs.step(closure)
    arr = {k: v.detach().double().numpy() for k, v in p.items()}
    pos = lambda a: np.logaddexp(0.0, a)  # noqa: E731
    net = MonoNet(mean=mean, scale=scale, w1m=pos(arr["w1m"]), w1f=arr["w1f"], b1=arr["b1"], w2=pos(arr["w2"]),
                  w2f=arr["w2f"], b2=arr["b2"], w3=pos(arr["w3"]) * sigma, ws=pos(arr["ws"]) * sigma,
                  w3f=arr["w3f"] * sigma, b3=float(arr["b3"]) * sigma + mu, mono_names=tuple(mono_names),
                  free_names=tuple(free_names),
                  lags={name: float(pos(arr["lag"][i]) * 1e-5) for i, name in enumerate(lag_names)})
    net.check()
    return net
