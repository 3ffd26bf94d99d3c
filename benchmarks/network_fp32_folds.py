"""Would the monotone tiled-kernel network price FP32 GEMMs and convolutions as well as the per-class models?

    python benchmarks/network_fp32_folds.py [--gpus T4 V100-PCIe-32GB ...] [--json OUT]

Issue 38 asks for time that never falls as work grows, for every input. The network (`mono.py`) is monotone by
construction but prices half-precision convolutions only; FP32 GEMMs and convolutions, most of the public rows and
most of the leave-one-GPU-out error, are the per-class MLPs', which `predictor_physics.py` finds breaking that
order on 353 of 2,080 GEMM steps. This trial measures what moving them to the network would cost in accuracy.

For each GPU with FP32 GEMM or convolution rows (NeuSight's, DeepBench's), the network and the per-class GEMM and
convolution models are trained without it (as `python -m predictor_models.train` trains them, the network on
every mode) and both price its FP32 rows (`tf32` off). NeuSight times each call between two CUDA events, so its
rows carry a host lag of 6-56 us per GPU (`metadata.networks[*].lags`) that the network learns beside it and drops:
to score against those rows the network's kernel time gets the median of the lags it learnt on the other GPUs
(``network+lag``; what a harness of unknown lag would add), and is reported without it too (``network``). The class
models learnt the lag inside their utilisation. MAPE, time-weighted error and the median ratio per GPU, class and
source. Nothing is fitted to these figures.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.network_folds import _errors, fold_arguments, run_folds  # noqa: E402
from benchmarks.result_file import write_result  # noqa: E402
from predictor_models.predictor import Predictor  # noqa: E402
from predictor_models.predictor.bound import bound_seconds, matrix  # noqa: E402
from predictor_models.predictor.devices import MODES, device_columns  # noqa: E402
from predictor_models.predictor.model import KernelNetwork  # noqa: E402
from predictor_models.predictor.optable import op_columns  # noqa: E402

GPUS = ("A100-PCIe-40GB", "A100-PCIe-80GB", "A100-SXM4-80GB", "A40", "H100-SXM5", "L4", "P100-PCIe-16GB", "P4", "T4",
        "V100-PCIe-32GB", "V100-SXM2-16GB")
CLASSES = ("gemm", "conv")
FP32 = MODES.index("fp32")


def network_seconds(network: KernelNetwork, ops: list, acc) -> np.ndarray:
    """Each op's kernel seconds by the network on ``acc`` in any mode (a convolution as the kernels it runs)."""
    pricer = Predictor({}, {"version": "trial"}, networks=[KernelNetwork(CLASSES, tuple(MODES), network.members)])
    virtual, parent, mult, _ = pricer._expand(ops)
    pairs = matrix(op_columns(virtual), device_columns([acc]))
    kernel = np.maximum(bound_seconds(pairs), np.exp(network.log_seconds(pairs)))[:, 0]
    return np.bincount(parent, weights=kernel * mult, minlength=len(ops))


def fold(ts, gpu: str) -> list[dict]:
    """Both models trained without ``gpu``, scored on its FP32 GEMM and convolution rows."""
    import torch

    from predictor_models.hardware import lookup_hardware
    from predictor_models.predictor.training import fit_models, fit_network

    torch.set_num_threads(1)
    test = ts.take(np.flatnonzero((ts.gpu == gpu) & np.isin(ts.ops.op_class, CLASSES) & (ts.ops.mode == FP32)))
    if not len(test):
        return []
    train = ts.take(np.flatnonzero(ts.gpu != gpu))
    network = fit_network(train)
    lags = [lag for member in network.members for lag in (member.lags or {}).values()]
    lag = float(np.median(lags)) if lags else 0.0
    classes = fit_models(train, classes=list(CLASSES))
    acc = lookup_hardware(test.samples[0].device)
    ops = [s.op for s in test.samples]
    theirs = Predictor(classes, {"version": "fold"}).predict_seconds(ops, acc)
    kernel = network_seconds(network, ops, acc)
    rows = []
    for cls in CLASSES:
        for source in sorted(set(test.source.tolist())):
            m = (test.ops.op_class == cls) & (test.source == source)
            if not m.any():
                continue
            carried = lag if source == "neusight" else 0.0
            rows.append({"gpu": gpu, "class": cls, "source": source, "median_lag_s": carried,
                         "network": _errors(kernel[m], test.seconds[m]),
                         "network+lag": _errors(kernel[m] + carried, test.seconds[m]),
                         "class_model": _errors(theirs[m], test.seconds[m])})
    return rows


def pooled(rows: list[dict], key: str) -> float:
    n = sum(r[key]["n"] for r in rows)
    return round(sum(r[key]["mape"] * r[key]["n"] for r in rows) / n, 4) if n else float("nan")


def main(argv: list[str] | None = None) -> int:
    args = fold_arguments(argv, __doc__.splitlines()[0], GPUS,
                          ROOT / "benchmarks/results/issue38_network_fp32/network_fp32_folds.json")
    rows = run_folds(args.gpus, fold, lambda r: (
        f"{r['gpu']:16s} {r['class']:5s} {r['source']:9s} n={r['network']['n']:6d} network "
        f"{r['network']['mape']:.3f} +lag {r['network+lag']['mape']:.3f} (ratio {r['network+lag']['median_ratio']:.2f}) "
        f"class model {r['class_model']['mape']:.3f} (ratio {r['class_model']['median_ratio']:.2f})"))
    summary = {cls: {key: pooled([r for r in rows if r["class"] == cls], key)
                     for key in ("network", "network+lag", "class_model")} | {
                         "n": sum(r["network"]["n"] for r in rows if r["class"] == cls)} for cls in CLASSES}
    write_result(args.json, "network_fp32_folds", argv, summary=summary, rows=rows)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
