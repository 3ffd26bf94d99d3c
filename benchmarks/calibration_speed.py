"""Timing of calibration: fitting from 1,000 rows (target <= 10 s on 2 cores) and the calibrated
predictor's speed on 10,000 mixed ops x 40 devices beside the shipped one's (target <= 100 ms).

    python -m benchmarks.calibration_speed [--gpu T4] [--rows 1000] [--ops 10000] [--devices 40] [--repeats 5]
                                           [--json benchmarks/results/calibration_speed.json]

The rows are the GPU's public rows (shipped with the package), chosen as `collect --quick` would;
the calibrated GPU is one of the devices predicted. Run it on a quiet machine: the figures are times.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np


def _median_time(fn, repeats: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2], times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="T4", help="the GPU whose public rows calibrate (must be in the shipped rows)")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--devices", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default="benchmarks/results/calibration_speed.json")
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    from benchmarks.calibration_value import quick_weights
    from benchmarks.predictor_speed import mixed_ops
    from predictor_models.calibration.fit import calibrate_samples
    from predictor_models.calibration.select import group_keys, spread_pick
    from predictor_models.hardware import list_hardware, lookup_hardware
    from predictor_models.predictor import load_predictor
    from predictor_models.train import load_training_set

    ts, _ = load_training_set(None, None, None)
    gpu = lookup_hardware(args.gpu)
    sub = ts.take(np.flatnonzero(ts.gpu == gpu.name))
    keys = group_keys(sub.ops)
    pick = spread_pick(keys, np.log(sub.bound), args.rows, seed=0, weights=quick_weights(keys))
    rows = [sub.samples[i] for i in pick]
    base = load_predictor()
    fit_s, fit_times = _median_time(lambda: calibrate_samples(rows, gpu, base=base, holdout=0.0),
                                    max(1, min(args.repeats, 3)))
    calibrated = calibrate_samples(rows, gpu, base=base, holdout=0.0)
    devices = [d for d in list_hardware() if d.memory_bandwidth_gbs][: args.devices]
    if gpu.name not in {d.name for d in devices}:
        devices = devices[:-1] + [gpu]
    ops = mixed_ops(args.ops)
    result = {"gpu": gpu.name, "rows": len(rows), "calibration_s": fit_s, "calibration_runs_s": fit_times,
              "ops": len(ops), "devices": len(devices), "targets": {"calibration_s": 10.0, "predict_ms": 100.0}}
    with threadpool_limits(1):   # as the callback and the benchmark of the shipped predictor run it
        for name, predictor in (("shipped", base), ("calibrated", calibrated)):
            predictor.predict_matrix(ops[:10], devices)
            median, times = _median_time(lambda p=predictor: p.predict_matrix(ops, devices), args.repeats)
            result[f"{name}_predict_ms"] = median * 1e3
            result[f"{name}_predict_runs_ms"] = [t * 1e3 for t in times]
    out = calibrated.predict_matrix(ops, devices)
    result["all_finite_positive"] = bool(np.all(np.isfinite(out) & (out > 0)))
    print(json.dumps({k: v for k, v in result.items() if not k.endswith("runs_s") and not k.endswith("runs_ms")}))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0 if fit_s <= 10.0 and result["calibrated_predict_ms"] <= 100.0 else 1


if __name__ == "__main__":
    sys.exit(main())
