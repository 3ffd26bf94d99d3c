"""Would a NeuSight-style wave model price held-out GPUs' GEMMs better than the per-class GEMM model? A trial.

    python benchmarks/wave_gemm_folds.py [--tile 128] [--steps 3000] [--json OUT]

Issue 38 points at NeuSight's tile and wave physics (Lee et al., ASPLOS'25; read in github.com/sitar-lab/NeuSight,
`neusight/Model/mlp_wave.py`, for the structure only): a kernel runs ``waves = ceil(tiles / SMs)`` waves of tiles, each
wave at the roofline rate of the op times a utilisation ``gamma - alpha / waves`` (gamma and alpha in (0, 1), from a
small network), whose inputs are the tile's work and bytes relative to one SM's share of the device (its peak, bandwidth,
L2), so that what one GPU teaches carries to another through per-SM figures rather than the device's name.

Here the utilisation is ``gamma x (1 - alpha / waves)`` (never negative); tiles are ``--tile`` x ``--tile`` outputs
(the op's real kernel tile is not in the public rows); time = ``waves x tiles-per-wave x tile FLOPs / (roofline rate x
utilisation) + 2 us``; inputs log2 of [tile FLOPs / per-SM peak, tile bytes / per-SM bandwidth, waves x tile bytes /
per-SM L2, waves, blocks per SM], the tensor-core flag and the dtype's width, clipped at prediction to the range seen
in training; NeuSight's harness lag is learnt per (source, GPU) beside it and, on a held-out GPU, the median of the
other GPUs' lags is added (as `network_fp32_folds.py` does). Trained on every GEMM row of every GPU but one (mean
absolute log error, Adam, seeded, one thread) and scored on that GPU's rows; beside it the shipped per-class GEMM
model's fold as `python -m predictor_models.evaluate` scored it (``predictor_models/pretrained/heldout_eval.json``).
Nothing ships.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402

SHIPPED = ROOT / "predictor_models/pretrained/heldout_eval.json"


def wave_inputs(ts, tile: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: the network's inputs, the waves, and the wave-quantised roofline time (s)."""
    from predictor_models.predictor.bound import paired

    ops, pairs = ts.ops, paired(ts.ops, ts.devices)
    b, m, n, k = (np.maximum(ops.dim(key), 1.0) for key in "bmnk")
    peak = np.asarray(pairs.peak, float).reshape(-1)
    bandwidth, sms = np.asarray(pairs.dev.bandwidth, float).reshape(-1), np.asarray(pairs.dev.sms, float).reshape(-1)
    l2 = np.asarray(pairs.dev.l2_bytes, float).reshape(-1)
    tensor = np.asarray(pairs.tensor, float).reshape(-1) * np.ones(len(ts))
    blocks = b * np.ceil(m / tile) * np.ceil(n / tile)
    waves = np.ceil(blocks / sms)
    tile_flops, tile_bytes = 2.0 * tile * tile * k, ops.esize * (2.0 * tile * k + tile * tile)
    rate = np.minimum(peak, 2.0 * blocks * tile * tile * k / ops.bytes * bandwidth)   # roofline of the padded work
    quantised = waves * np.minimum(blocks, sms) * tile_flops / rate
    x = np.stack([np.log2(tile_flops / (peak / sms)), np.log2(tile_bytes / (bandwidth / sms)),
                  np.log2(waves * tile_bytes / (l2 / sms)), np.log2(waves), np.log2(blocks / sms), tensor, ops.esize], 1)
    return x, waves, quantised


def fit_fold(x, waves, quantised, seconds, lag_group, groups: int, *, steps: int, seed: int):
    """The utilisation network and the per-group harness lags (log seconds), by mean absolute log error."""
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 32), torch.nn.ReLU(), torch.nn.Linear(32, 16),
                              torch.nn.ReLU(), torch.nn.Linear(16, 2))
    log_lag = torch.nn.Parameter(torch.full((max(groups, 1),), -11.0))
    optimiser = torch.optim.Adam([*net.parameters(), log_lag], lr=3e-3)
    xt, wt, qt = (torch.tensor(a, dtype=torch.float32) for a in (x, waves, quantised))
    target = torch.tensor(np.log(seconds), dtype=torch.float32)
    has_lag, group = torch.tensor(lag_group >= 0), torch.tensor(np.maximum(lag_group, 0))
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        batch = torch.tensor(rng.integers(0, len(xt), 4096))
        kernel = qt[batch] / utilisation(net, xt[batch], wt[batch]) + 2e-6
        lag = torch.where(has_lag[batch], torch.exp(log_lag[group[batch]]), torch.zeros(()))
        loss = torch.mean(torch.abs(torch.log(kernel + lag) - target[batch]))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return net, np.exp(log_lag.detach().numpy())


def utilisation(net, x, waves):
    """NeuSight's form, gamma x (1 - alpha / waves), floored at 2% so no row is priced 50x its roofline."""
    out = net(x)
    gamma, alpha = torch.sigmoid(out[:, 0]), torch.sigmoid(out[:, 1])
    return torch.clamp(gamma * (1.0 - alpha / waves), min=0.02)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tile", type=float, default=128.0)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/issue38_wave_trial/wave_gemm_folds.json"))
    args = parser.parse_args(argv)
    from predictor_models.predictor.training import HOST_LAG_SOURCES, NETWORK_ONLY_SOURCES, harness_lag_groups
    from predictor_models.train import load_training_set

    torch.set_num_threads(1)
    ts, _ = load_training_set(None, None, None)
    ts = ts.take(np.flatnonzero(~np.isin(ts.source, list(NETWORK_ONLY_SOURCES)) & (ts.ops.op_class == "gemm")))
    x, waves, quantised = wave_inputs(ts, args.tile)
    shipped = {r["gpu"]: r for r in json.loads(SHIPPED.read_text())["heldout"] if r["op"] == "gemm"}
    folds = []
    for gpu in sorted(set(map(str, ts.gpu))):
        train, test = np.flatnonzero(ts.gpu != gpu), np.flatnonzero(ts.gpu == gpu)
        names, group = harness_lag_groups(ts.source[train], ts.gpu[train])
        lo, hi = x[train].min(0), x[train].max(0)
        mean, scale = x[train].mean(0), x[train].std(0) + 1e-9
        net, lags = fit_fold((x[train] - mean) / scale, waves[train], quantised[train], ts.seconds[train], group,
                             len(names), steps=args.steps, seed=args.seed)
        with torch.no_grad():
            u = utilisation(net, torch.tensor((np.clip(x[test], lo, hi) - mean) / scale, dtype=torch.float32),
                            torch.tensor(waves[test], dtype=torch.float32)).numpy()
        lag = np.where(np.isin(ts.source[test], list(HOST_LAG_SOURCES)), float(np.median(lags)) if names else 0.0, 0.0)
        ratio = (quantised[test] / u + 2e-6 + lag) / ts.seconds[test]
        fold = {"gpu": gpu, "n": int(test.size), "mape": float(np.mean(np.abs(ratio - 1))),
                "median_ratio": float(np.median(ratio)), "shipped_mape": shipped.get(gpu, {}).get("mape")}
        folds.append(fold)
        print(f"{gpu:16s} n={fold['n']:6d} wave model {fold['mape']:.3f} (median ratio {fold['median_ratio']:.2f})"
              f"  shipped class model {fold['shipped_mape'] or float('nan'):.3f}", flush=True)
    total = sum(f["n"] for f in folds)
    pooled = {key: sum(f[key] * f["n"] for f in folds if f[key] is not None) / total for key in ("mape", "shipped_mape")}
    print(f"pooled: wave model {pooled['mape']:.3f}, shipped class model {pooled['shipped_mape']:.3f}")
    write_result(args.json, "wave_gemm_folds", argv, tile=args.tile, steps=args.steps, seed=args.seed, folds=folds,
                 pooled=pooled)
    return 0


if __name__ == "__main__":
    sys.exit(main())
