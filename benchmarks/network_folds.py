"""Leave-one-GPU-out error of the tiled-kernel network against the per-class models, per math mode.

    python benchmarks/network_folds.py [--gpus V100-SXM2-16GB T4 ...] [--json benchmarks/results/network_folds.json]

For each GPU with half-precision GEMM or convolution measurements (DeepBench's V100 and T4 convolutions, Vidur's
and OpenXLA's GEMMs), the network and the per-class GEMM/convolution models are trained without that GPU, as
`python -m predictor_models.train` trains them (the network on every source, the class models without
DeepBench), and both price its measured GEMM and convolution kernels: MAPE and time-weighted error per op
class and math mode. The network prices half-precision convolutions in the shipped predictor; its other rows
are reported for what the joint training learns. Nothing is fitted to these figures.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from predictor_models.predictor import Predictor  # noqa: E402
from predictor_models.predictor.devices import MODES  # noqa: E402
from predictor_models.predictor.model import KernelNetwork  # noqa: E402

GPUS = ("V100-SXM2-16GB", "T4", "A100-SXM4-80GB", "A40", "H100-SXM5", "B200")
CLASSES = ("gemm", "conv")


def _errors(pred: np.ndarray, true: np.ndarray) -> dict:
    return {"n": int(true.size), "mape": round(float(np.mean(np.abs(pred / true - 1))), 4),
            "time_weighted": round(float(np.abs(pred - true).sum() / true.sum()), 4),
            "median_ratio": round(float(np.median(pred / true)), 4)}


def fold(ts, gpu: str) -> list[dict]:
    """Both models trained without ``gpu``, scored on its GEMM and convolution kernels."""
    import torch

    from predictor_models.predictor.training import fit_models, fit_network

    torch.set_num_threads(1)
    train = ts.take(np.flatnonzero(ts.gpu != gpu))
    test = ts.take(np.flatnonzero((ts.gpu == gpu) & np.isin(ts.ops.op_class, CLASSES)))
    network = fit_network(train)
    classes = fit_models(train, classes=list(CLASSES))
    device = test.samples[0].device
    from predictor_models.hardware import lookup_hardware

    acc = lookup_hardware(device)
    network_only = Predictor(classes, {"version": "fold"},
                             networks=[KernelNetwork(CLASSES, tuple(MODES), network.members)])
    class_only = Predictor(classes, {"version": "fold"})
    ops = [s.op for s in test.samples]
    ours, theirs = network_only.predict_seconds(ops, acc), class_only.predict_seconds(ops, acc)
    rows = []
    for cls in CLASSES:
        for mode in sorted(set(test.ops.mode[test.ops.op_class == cls].tolist())):
            for source in sorted(set(test.source.tolist())):
                m = (test.ops.op_class == cls) & (test.ops.mode == mode) & (test.source == source)
                if not m.any():
                    continue
                kinds = test.ops.dim("grad")[m]
                rows.append({"gpu": gpu, "class": cls, "mode": MODES[mode], "source": source,
                             "kinds": {k: int((kinds == i).sum()) for i, k in enumerate(("fwd", "dgrad", "wgrad"))
                                       if cls == "conv"},
                             "network": _errors(ours[m], test.seconds[m]),
                             "class_model": _errors(theirs[m], test.seconds[m])})
    return rows


def run_folds(gpus, fold_of, line) -> list[dict]:
    """``fold_of(training set, gpu)``'s rows for each held-out GPU in turn, on one BLAS thread, each printed by
    ``line(row)`` as it comes, with the fold's time."""
    from threadpoolctl import threadpool_limits

    from predictor_models.train import load_training_set

    ts, _ = load_training_set(None, None, None)
    rows = []
    with threadpool_limits(1):
        for gpu in gpus:
            start = time.time()
            for r in fold_of(ts, gpu):
                rows.append(r)
                print(line(r), flush=True)
            print(f"fold {gpu}: {time.time() - start:.0f} s", flush=True)
    return rows


def fold_arguments(argv: list[str] | None, description: str, gpus: tuple[str, ...],
                   default_json: Path) -> argparse.Namespace:
    """A leave-one-GPU-out benchmark's command line: the held-out GPUs (``--gpus``, default ``gpus``) and the result
    file."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--gpus", nargs="*", default=list(gpus))
    parser.add_argument("--json", default=str(default_json))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = fold_arguments(argv, __doc__.splitlines()[0], GPUS, ROOT / "benchmarks/results/network_folds.json")
    rows = run_folds(args.gpus, fold, lambda r: (
        f"{r['gpu']:16s} {r['class']:5s} {r['mode']:5s} {r['source']:9s} n={r['network']['n']:6d} "
        f"network {r['network']['mape']:.3f} (tw {r['network']['time_weighted']:.3f}) "
        f"class model {r['class_model']['mape']:.3f} (tw {r['class_model']['time_weighted']:.3f})"))
    half = [r for r in rows if r["mode"] in ("fp16", "bf16")]
    summary = {}
    for cls in CLASSES:
        part = [r for r in half if r["class"] == cls]
        if part:
            n = sum(r["network"]["n"] for r in part)
            summary[f"{cls}_half"] = {
                "n": n, "folds": len(part),
                "network_mape": round(sum(r["network"]["mape"] * r["network"]["n"] for r in part) / n, 4),
                "class_model_mape": round(sum(r["class_model"]["mape"] * r["class_model"]["n"] for r in part) / n, 4)}
    result = {"benchmark": "network_folds", "command": "python benchmarks/network_folds.py",
              "date": time.strftime("%Y-%m-%d %H:%M"), "summary": summary, "rows": rows}
    Path(args.json).write_text(json.dumps(result, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
