"""Trial (issue 38): FP32 and TF32 GEMMs priced by the monotone GEMM network, levelled per device by the class model.

    python benchmarks/gemm_levelled_network_folds.py [--gpus ...] [--min-bound S] [--inputs VARIANT] [--fp32-only]
                                                        [--json OUT]

The class model's FP32 and TF32 GEMMs break "more work is never faster" (`predictor_physics.py`: 540 and 345 grid
steps); the shipped GEMM network (`kernel_features.gemm_time_features`, monotone in b, m, n and k by construction)
prices only half-precision GEMMs, because held out one GPU at a time it prices FP32 GEMMs worse than the class model
(`issue38_gemm_scaled_network/folds_roofline_nopower.json`: 28.5% against 23.6% with the other GPUs' median lag).

The mechanism tried here: the *shape* of a GEMM's time from the network, the *level* on a device and math mode from
the class model. The level is one number per (device, mode): the median ratio of the class model's price to the
network's over a fixed set of canonical GEMMs (`canonical_gemms`: b = 1, m, n, k powers of two from 256 to 8,192),
counting only those whose roofline bound is at least ``--min-bound`` (so NeuSight's harness lag, which the class
model carries into small ops, does not set it). A positive constant times a monotone function is monotone, so the
product keeps the network's property for every input; the canonical set depends on no measured time and on no op
of the step, so an op's price does not depend on what else its step holds.

Per fold, as `gemm_work_network_folds.py` does: the network and the class model (one member each) trained on every
other GPU's GEMM rows, scored on the held-out GPU's; ``levelled`` is the network times the level, ``levelled+lag``
adds the other GPUs' median NeuSight lag on NeuSight's rows (the class model carries the lag; the network does not).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.gemm_work_network_folds import features, fit_on, mape, pooled  # noqa: E402

SHIPPED_INPUTS = "scaled-roofline-nopower"    # the shipped GEMM network's inputs
INPUTS = SHIPPED_INPUTS                       # the inputs of this run (``--inputs``)
SIDES = tuple(2 ** e for e in range(8, 14))
WIDE_SIDES = tuple(2 ** e for e in range(4, 16))


def canonical_gemms(tf32: bool, sides=SIDES) -> list:
    """b = 1 GEMMs with m, n, k in ``sides`` (256 ... 8,192: 216 shapes), in FP32 (``tf32``: with TF32 allowed)."""
    from predictor_models.op_spec import OpSpec

    return [OpSpec("gemm", "float32", 2.0 * m * n * k, 4.0 * (m * k + k * n), 4.0 * m * n,
                   {"b": 1, "m": m, "n": n, "k": k}, tf32, "aten::mm")
            for m in sides for n in sides for k in sides]


def canonical_prices(net, class_model, gpu: str, tf32: bool, lo, hi, sides=SIDES):
    """(bound, network, class model) seconds of the canonical GEMMs on ``gpu``."""
    from predictor_models.hardware import lookup_hardware
    from predictor_models.predictor.bound import bound_seconds, matrix
    from predictor_models.predictor.devices import device_columns
    from predictor_models.predictor.features import feature_matrix
    from predictor_models.predictor.mlp import predict_mlp
    from predictor_models.predictor.optable import op_columns

    pairs = matrix(op_columns(canonical_gemms(tf32, sides)), device_columns([lookup_hardware(gpu)]))
    bound = bound_seconds(pairs).reshape(-1)
    mono, free = features(pairs, INPUTS)
    free[:, 5:] = np.clip(free[:, 5:], lo, hi)
    network = np.maximum(bound, np.exp(net(mono, free)))
    by_class = bound * np.exp(np.maximum(predict_mlp(class_model, feature_matrix("gemm", pairs)), 0.0))
    return bound, network, by_class


def level(net, class_model, gpu: str, tf32: bool, min_bound: float, lo, hi) -> float:
    """The class model's price over the network's on ``gpu``: the median ratio over the canonical GEMMs."""
    bound, network, by_class = canonical_prices(net, class_model, gpu, tf32, lo, hi)
    keep = bound >= min_bound
    return float(np.exp(np.median(np.log(by_class[keep] / network[keep]))))


def rearrangement(net, class_model, gpu: str, tf32: bool, lo, hi):
    """A non-decreasing map from the network's log-seconds to the class model's on ``gpu``: the isotonic regression
    of the class model's log time on the network's over the wide canonical GEMMs (16 ... 32,768 a side), linear
    between its knots, flat below the first, and of slope one past the last (time proportional to the network's)."""
    from sklearn.isotonic import IsotonicRegression

    _, network, by_class = canonical_prices(net, class_model, gpu, tf32, lo, hi, WIDE_SIDES)
    x, y = np.log(network), np.log(by_class)
    fitted = IsotonicRegression().fit(x, y)
    knots_x, knots_y = fitted.X_thresholds_, fitted.y_thresholds_

    def apply(log_net: np.ndarray) -> np.ndarray:
        inside = np.interp(log_net, knots_x, knots_y)
        return np.where(log_net > knots_x[-1], knots_y[-1] + log_net - knots_x[-1], inside)
    return apply


def fold(ts, gpu: str, seed: int, min_bound: float, fp32_only: bool = False) -> dict:
    from predictor_models.predictor.bound import paired
    from predictor_models.predictor.features import feature_matrix
    from predictor_models.predictor.mlp import predict_mlp
    from predictor_models.predictor.training import HOST_LAG_SOURCES, fit_models

    gemm = ts.ops.op_class == "gemm"
    train = np.flatnonzero(gemm & (ts.gpu != gpu))
    test = np.flatnonzero(gemm & (ts.gpu == gpu) & np.isin(ts.ops.mode, [0, 1]))
    if not test.size:
        return {"gpu": gpu}
    started = time.perf_counter()
    net_rows = train[np.isin(ts.ops.mode[train], [0, 1])] if fp32_only else train
    net, free = fit_on(ts, net_rows, INPUTS, seed)
    lo, hi = free[:, 5:].min(axis=0), free[:, 5:].max(axis=0)
    class_model = fit_models(ts.take(train), classes=["gemm"], seed=seed)["gemm"][0]
    held = ts.take(test)
    hp = paired(held.ops, held.devices)
    hm, hf = features(hp, INPUTS)
    hf[:, 5:] = np.clip(hf[:, 5:], lo, hi)
    network = np.maximum(held.bound, np.exp(net(hm, hf)))
    by_class = held.bound * np.exp(np.maximum(predict_mlp(class_model, feature_matrix("gemm", hp)), 0.0))
    levels = {mode: level(net, class_model, gpu, mode == 1, min_bound, lo, hi) for mode in (0, 1)}
    levelled = network * np.where(held.ops.mode == 1, levels[1], levels[0])
    maps = {mode: rearrangement(net, class_model, gpu, mode == 1, lo, hi) for mode in (0, 1)}
    rearranged = np.exp(np.where(held.ops.mode == 1, maps[1](np.log(network)), maps[0](np.log(network))))
    lag = statistics.median(net.lags.values()) if net.lags else 0.0
    lagged = np.isin(held.source, list(HOST_LAG_SOURCES))
    out = {"gpu": gpu, "fit_s": round(time.perf_counter() - started, 1),
           "level": {"fp32": round(levels[0], 4), "tf32": round(levels[1], 4)}}
    for name, rows in (("fp32", held.ops.mode == 0), ("tf32", held.ops.mode == 1)):
        if rows.any():
            s = held.seconds[rows]
            out[name] = {"n": int(rows.sum()),
                         "network+lag": round(mape((network + lag * lagged)[rows], s), 4),
                         "levelled": round(mape(levelled[rows], s), 4),
                         "levelled+lag": round(mape((levelled + lag * lagged)[rows], s), 4),
                         "rearranged": round(mape(rearranged[rows], s), 4),
                         "class_model": round(mape(by_class[rows], s), 4)}
    return out


def main(argv: list[str] | None = None) -> int:
    from predictor_models.train import load_training_set

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", nargs="*", help="held-out GPUs (default: every GPU with FP32 or TF32 GEMM rows)")
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--min-bound", type=float, default=1e-4,
                        help="canonical GEMMs with a shorter roofline bound do not set the level (seconds)")
    parser.add_argument("--inputs", default=SHIPPED_INPUTS, choices=("scaled-roofline-nopower", "scaled-roofline"),
                        help="the network's inputs (`gemm_work_network_folds.py`): scaled-roofline adds the FLOPs per "
                             "board watt, which the low-power cards' FP32 GEMMs may need")
    parser.add_argument("--fp32-only", action="store_true",
                        help="train the network on the other GPUs' FP32 and TF32 GEMM rows only (the class model on all)")
    parser.add_argument("--json", help="write the folds here")
    args = parser.parse_args(argv)
    global INPUTS
    INPUTS = args.inputs
    ts, _ = load_training_set(None, None, None)
    fp32 = (ts.ops.op_class == "gemm") & np.isin(ts.ops.mode, [0, 1])
    gpus = args.gpus or sorted(set(ts.gpu[fp32].tolist()))
    folds = []
    for gpu in gpus:
        folds.append(fold(ts, gpu, args.seed, args.min_bound, args.fp32_only))
        print(json.dumps(folds[-1]), flush=True)
    summary = pooled(folds, ("fp32", "tf32"), ("network+lag", "levelled", "levelled+lag", "rearranged", "class_model"))
    for part, figures in summary.items():
        figures["worst_gpu"] = {k: max(f[part][k] for f in folds if part in f)
                                for k in ("levelled+lag", "rearranged", "class_model")}
    print(json.dumps(summary))
    if args.json:
        Path(args.json).write_text(json.dumps({"benchmark": "gemm_levelled_network_folds", "seed": args.seed,
                                               "inputs": INPUTS, "min_bound_s": args.min_bound,
                                               "fp32_only": args.fp32_only, "folds": folds,
                                               "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
