"""Issue 38 trials: does board power explain the class models' leave-one-GPU-out error? (Both were rejected.)

    python benchmarks/power_trials.py --trial none|gemm_power_feature|power_cap [--members 3] [--gpus P4 T4 ...]
        [--json OUT]

The largest share of the class models' leave-one-GPU-out error is NeuSight's fp32 GEMMs on a held-out P4, T4, P100,
V100 or L4, and on those GPUs the large GEMMs deliver a fraction of the datasheet peak that does not follow from the
figures the models read: the 70-75 W cards (P4, T4, L4) cannot hold their boost clock under sustained matrix work.
Two ways of telling the models, each scored on the same folds as `python -m predictor_models.evaluate` (the class
models alone, its ``mape``; the trial ``none`` gives its figures back):

- ``gemm_power_feature``: the GEMM model also reads board power per TFLOP of the op's math mode, as the convolution
  model does (`features._power`).
- ``power_cap``: a physical bound instead: the fp32 peak every class model's bound and features read is
  min(datasheet peak, board power x eta), eta per architecture generation from the training GPUs (the best GPU of
  the generation: the 95th percentile of FLOP/s over board power on its fp32 GEMMs of at least 1e11 FLOPs). A
  held-out GPU takes its generation's eta from the other GPUs, and none where it is its generation's only one.

Training data: the rows shipped with prenet (`load_training_set`), NETWORK_ONLY_SOURCES left out as the evaluation
does. Single-threaded; about 30 s a fold with three members on the 2-core development machine.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from predictor_models.evaluate import NETWORK_ONLY_SOURCES  # noqa: E402
from predictor_models.predictor import features  # noqa: E402
from predictor_models.predictor.bound import bound_seconds, paired  # noqa: E402
from predictor_models.predictor.dominance import generation  # noqa: E402

TRIALS = ("none", "gemm_power_feature", "power_cap")
GPUS = ["P4", "T4", "P100-PCIe-16GB", "V100-PCIe-32GB", "A100-PCIe-40GB", "L4", "H100-SXM5", "A100-SXM4-80GB", "A40",
        "A100-PCIe-80GB"]
CLASSES = ("gemm", "conv", "norm", "elementwise")
LARGE_GEMM_FLOPS = 1e11
FP32 = 0   # index of fp32 in `devices.MODES`


def generation_eta(train, accelerators: dict) -> dict[str, tuple[float, str]]:
    """Per architecture generation: (FLOP/s per board watt on large fp32 GEMMs, the training GPU it comes from), the
    generation's best GPU (95th percentile over its GEMMs of at least `LARGE_GEMM_FLOPS`; 50 rows or more)."""
    large = (train.ops.op_class == "gemm") & (train.ops.mode == FP32) & (train.ops.flops >= LARGE_GEMM_FLOPS)
    best: dict[str, tuple[float, str]] = {}
    for gpu in sorted(set(map(str, train.gpu[large]))):
        rows = large & (train.gpu == gpu)
        if rows.sum() < 50:
            continue
        device = accelerators[gpu]
        eta = float(np.percentile(train.ops.flops[rows] / train.seconds[rows], 95)) / device.tdp_w
        gen = generation(device)
        best[gen] = max(best.get(gen, (0.0, "")), (eta, gpu))
    return best


def power_capped(part, eta: dict[str, tuple[float, str]], accelerators: dict):
    """The rows with their fp32 peak at min(peak, board power x eta of their generation), bounds recomputed."""
    cap = np.array([eta.get(generation(accelerators[str(gpu)]), (np.inf, ""))[0] for gpu in part.gpu])
    peaks = part.devices.peaks.copy()
    peaks[:, FP32] = np.minimum(peaks[:, FP32], cap * part.devices.tdp_w)
    devices = dataclasses.replace(part.devices, peaks=peaks)
    return dataclasses.replace(part, devices=devices,
                               bound=np.asarray(bound_seconds(paired(part.ops, devices)), dtype=float))


def run(trial: str, gpus: list[str], members: int, log=print) -> dict:
    from threadpoolctl import threadpool_limits

    from predictor_models.hardware import lookup_hardware
    from predictor_models.predictor.model import Predictor
    from predictor_models.predictor.training import class_xy, fit_models
    from predictor_models.train import load_training_set

    if trial == "gemm_power_feature":   # the registry the class models are built and scored from
        features.FEATURES["gemm"] = (lambda p: features.gemm_features(p) + features._power(p),
                                     features.COMMON_NAMES + features.GEMM_NAMES + features.POWER_NAMES)
    ts, _ = load_training_set(None, None, extra=None)
    ts = ts.take(np.flatnonzero(~np.isin(ts.source, list(NETWORK_ONLY_SOURCES))))
    accelerators = {gpu: lookup_hardware(gpu) for gpu in set(map(str, ts.gpu))}
    folds, pooled = {}, {c: [0.0, 0] for c in CLASSES}
    with threadpool_limits(1):
        for gpu in gpus:
            train, test = ts.take(np.flatnonzero(ts.gpu != gpu)), ts.take(np.flatnonzero(ts.gpu == gpu))
            eta = None
            if trial == "power_cap":
                eta = generation_eta(train, accelerators)
                train, test = power_capped(train, eta, accelerators), power_capped(test, eta, accelerators)
            models = fit_models(train, members=members)
            for op_class in CLASSES:
                rows = np.flatnonzero(test.ops.op_class == op_class)
                if not rows.size or op_class not in models:
                    continue
                x, _ = class_xy(test, op_class, rows)
                sub = test.take(rows)
                predicted = sub.bound * np.exp(np.maximum(Predictor._ensemble(models[op_class], x), 0.0))
                error = np.abs(predicted / sub.seconds - 1.0)
                folds[f"{gpu}/{op_class}"] = {
                    "n": int(rows.size), "mape": round(float(error.mean()), 4),
                    "time_weighted": round(float(np.abs(predicted - sub.seconds).sum() / sub.seconds.sum()), 4)}
                pooled[op_class][0] += float(error.sum())
                pooled[op_class][1] += int(rows.size)
                log(f"{gpu:16s} {op_class:12s} {folds[f'{gpu}/{op_class}']}")
            if eta is not None:
                folds[f"{gpu}/eta_gflops_per_watt"] = {gen: [round(v / 1e9, 1), src] for gen, (v, src) in eta.items()}
    summary = {c: round(total / n, 4) for c, (total, n) in pooled.items() if n}
    summary["all"] = round(sum(t for t, _ in pooled.values()) / max(1, sum(n for _, n in pooled.values())), 4)
    return {"trial": trial, "members": members, "gpus": gpus, "folds": folds, "pooled_mape": summary}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trial", choices=TRIALS, required=True)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--gpus", nargs="*", default=GPUS)
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    result = run(args.trial, list(args.gpus), args.members)
    print(json.dumps(result["pooled_mape"]))
    if args.json:
        from benchmarks.result_file import write_result

        write_result(args.json, "power_trials", argv, **result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
