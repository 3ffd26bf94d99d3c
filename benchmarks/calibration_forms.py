"""Why the calibration is a kernel ridge: the held-out comparison of correction forms (no timing).

    python -m benchmarks.calibration_forms [--gpus L4 P4 T4 B200 H100-SXM5] [--rows 200] [--cache DIR]
                                           [--json benchmarks/results/calibration_forms.json]

For each held-out GPU, the fold trained without it is corrected with ``--rows`` of its rows (chosen as
in `calibration_value`) in four ways, per op class, and scored by MAPE on the GPU's other rows:
an offset (median log ratio), an offset and a slope in log predicted time, ridge regression on the
class's features (leave-one-out penalty), and the shipped form (offset plus Gaussian-kernel ridge).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

PENALTIES = (0.1, 1.0, 3.0, 10.0, 30.0, 100.0)


def linear_ridge(x: np.ndarray, y: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Ridge on standardised columns with an unpenalised offset, penalty by leave-one-out; predicts ``xs``."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    a = np.hstack([np.ones((len(y), 1)), (x - mean) / scale])
    best = None
    for lam in PENALTIES:
        penalty = np.eye(a.shape[1]) * lam
        penalty[0, 0] = 0.0
        hat = a @ np.linalg.solve(a.T @ a + penalty, a.T)
        loo = np.mean(((y - hat @ y) / np.maximum(1 - np.diag(hat), 1e-6)) ** 2)
        if best is None or loo < best[0]:
            best = (loo, penalty)
    beta = np.linalg.solve(a.T @ a + best[1], a.T @ y)
    return np.hstack([np.ones((len(xs), 1)), (xs - mean) / scale]) @ beta


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", nargs="*", default=["L4", "P4", "T4", "B200", "H100-SXM5"])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--cache", help="fold predictors kept by calibration_value --cache")
    parser.add_argument("--json", default="benchmarks/results/calibration_forms.json")
    args = parser.parse_args(argv)
    from benchmarks.calibration_value import fold_predictor, quick_weights
    from predictor_models.calibration.correction import class_features
    from predictor_models.calibration.fit import calibrate_samples
    from predictor_models.calibration.select import group_keys, spread_pick
    from predictor_models.datasets.shipped import read_manifest
    from predictor_models.hardware import lookup_hardware
    from predictor_models.predictor import load_predictor
    from predictor_models.predictor.devices import device_columns
    from predictor_models.predictor.training import SEED, weight_decays
    from predictor_models.train import load_training_set

    ts, _ = load_training_set(None, None, None)
    stamp = {"rows_sha256": read_manifest()["rows_sha256"], "members": 3, "seed": SEED, "weight_decay": weight_decays()}
    shipped = load_predictor()
    results = []
    for name in args.gpus:
        gpu = lookup_hardware(name).name
        fold = fold_predictor(ts, gpu, Path(args.cache) if args.cache else None, stamp, print)
        sub = ts.take(np.flatnonzero(ts.gpu == gpu))
        device, dev = lookup_hardware(gpu), device_columns([lookup_hardware(gpu)])
        ops, measured = [s.op for s in sub.samples], sub.seconds
        keys = group_keys(sub.ops)
        pick = spread_pick(keys, np.log(sub.bound), args.rows, seed=0, weights=quick_weights(keys))
        rest = np.setdiff1d(np.arange(len(ops)), pick)
        predicted = fold.predict_seconds(ops, device)
        kernel = calibrate_samples([sub.samples[i] for i in pick], device, base=fold, holdout=0.0)
        shipped_form = kernel.predict_seconds([ops[i] for i in rest], device)
        in_sample = shipped.predict_seconds(ops, device)
        y = np.log(measured / predicted)
        classes = np.asarray(sub.ops.op_class).astype(str)
        entry = {"gpu": gpu, "rows": int(args.rows), "classes": {}}
        for cls in sorted(set(classes)):
            fit, test = pick[classes[pick] == cls], rest[classes[rest] == cls]
            if fit.size < 8 or not test.size:
                continue
            rows = np.flatnonzero(classes == cls)
            x = np.zeros((len(ops), len(class_features(cls, sub.ops.take(rows[:1]), dev, predicted[rows[:1]])[0])))
            x[rows] = class_features(cls, sub.ops.take(rows), dev, predicted[rows])
            log_t = np.log10(predicted)[:, None]
            mape = lambda log_ratio: float(np.mean(np.abs(predicted[test] * np.exp(log_ratio) / measured[test] - 1)))  # noqa: E731
            entry["classes"][cls] = {
                "fit_rows": int(fit.size),
                "uncalibrated": mape(0.0), "offset": mape(np.median(y[fit])),
                "offset_and_slope": mape(linear_ridge(log_t[fit], y[fit], log_t[test])),
                "ridge_on_features": mape(linear_ridge(x[fit], y[fit], x[test])),
                "kernel_ridge": float(np.mean(np.abs(shipped_form[classes[rest] == cls] / measured[test] - 1))),
                "in_sample": float(np.mean(np.abs(in_sample[test] / measured[test] - 1)))}
        results.append(entry)
        print(gpu, json.dumps({c: {k: round(v, 3) for k, v in e.items()} for c, e in entry["classes"].items()}))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"benchmark": "calibration_forms", "results": results}, indent=1,
                                          sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
