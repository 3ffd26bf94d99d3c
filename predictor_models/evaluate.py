"""Leave-one-GPU-out evaluation of the predictor beside the PreNeT-paper baseline, same folds, same run.

    python -m predictor_models.evaluate --json OUT.json [--update-card predictor_models/pretrained] [--data ../shared/data]

For each GPU in the data, both models are trained on every other GPU and scored on that one's ops,
per op class. Then NeuSight's per-node transformer-layer labels (forward and backward, FP32) on
H100, A100, L4 and V100 are predicted by the fold that never saw that GPU and compared with the
measured sums. MAPE is reported as a fraction.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from predictor_models.baseline import RAW_PARAMS, baseline_features, fit_baseline, predict_baseline
from predictor_models.predictor.bound import paired
from predictor_models.predictor.model import Predictor
from predictor_models.predictor.training import NETWORK_ONLY_SOURCES, SEED, balanced_rows, class_xy, fit_models

CLASSES = ("gemm", "conv", "norm", "elementwise")


def _mape(pred: np.ndarray, true: np.ndarray) -> float:
    return float(np.mean(np.abs(pred / true - 1.0)))


def _time_weighted(pred: np.ndarray, true: np.ndarray) -> float:
    """Absolute error summed over the ops / their measured time summed (WAPE): each op counts as much
    as the time it takes, which is what a training-time prediction is made of (MAPE counts every
    few-microsecond op, dominated by launch overhead, as much as a 30 ms GEMM)."""
    return float(np.sum(np.abs(pred - true)) / np.sum(true))


def _precision(dtype: str) -> str:
    return "half" if dtype in ("float16", "bfloat16") else "fp32"


def _scores(pred: np.ndarray, true: np.ndarray) -> dict:
    return {"n": int(true.size), "mape": _mape(pred, true), "time_weighted": _time_weighted(pred, true)}


def evaluate_folds(ts, *, gpus: Sequence[str] | None = None, members: int = 1, baseline: bool = True,
                   weight_decay: dict[str, float] | None = None, log=print) -> tuple[list[dict], dict[str, Predictor]]:
    """Per (op class, held-out GPU): n, our MAPE, baseline MAPE. Also returns each fold's predictor.

    ``mape`` scores the class models alone (log(measured / bound) from the MLP ensemble); ``shipped_mape`` scores
    what a projection prices with the same fold's models: `Predictor.predict_matrix` on the held-out GPU, with its
    kernel expansion, the half-precision work ladder and the device envelope over the fold's trained GPUs. Both
    are split by precision (``by_precision``: fp32 with TF32, and half: fp16/bf16).

    The class models' own rows only: rows of `NETWORK_ONLY_SOURCES` (DeepBench) train the tiled-kernel network and
    are scored by `benchmarks/network_folds.py`; neither the class models nor the baseline learn from them."""
    from predictor_models.hardware import lookup_hardware

    ts = class_model_rows(ts)
    rows_out: list[dict] = []
    fold_models: dict[str, Predictor] = {}
    available = sorted(set(map(str, ts.gpu)))
    missing = [gpu for gpu in gpus or () if gpu not in available]
    if missing:
        raise ValueError(f"no measurements on {missing[0]!r} in this data; GPUs in the data: {', '.join(available)}")
    for gpu in gpus or available:
        start = time.time()
        train = ts.take(np.flatnonzero(ts.gpu != gpu))
        test = ts.take(np.flatnonzero(ts.gpu == gpu))
        models = fit_models(train, members=members, weight_decay=weight_decay)
        predictor = Predictor(models, {"heldout_gpu": gpu, "trained_on": sorted(set(map(str, train.gpu)))})
        fold_models[gpu] = predictor
        for op_class in CLASSES:
            rows = np.flatnonzero(test.ops.op_class == op_class)
            if rows.size == 0 or op_class not in models:
                continue
            sub, ours = class_model_seconds(models, test, op_class, rows)
            shipped = predictor.predict_matrix([sample.op for sample in sub.samples], [lookup_hardware(gpu)])[:, 0]
            entry = {"op": op_class, "gpu": gpu, "n": int(rows.size), "mape": _mape(ours, sub.seconds),
                     "time_weighted": _time_weighted(ours, sub.seconds),
                     "shipped_mape": _mape(shipped, sub.seconds),
                     "shipped_time_weighted": _time_weighted(shipped, sub.seconds),
                     "bound_only_mape": _mape(sub.bound, sub.seconds)}
            precision = np.array([_precision(sample.op.dtype) for sample in sub.samples])
            entry["by_precision"] = {
                name: {**_scores(ours[mask], sub.seconds[mask]),
                       **{f"shipped_{k}": v for k, v in _scores(shipped[mask], sub.seconds[mask]).items() if k != "n"}}
                for name in sorted(set(precision)) for mask in [precision == name]}
            if baseline and op_class in RAW_PARAMS:
                fit_rows = balanced_rows(train, np.flatnonzero(train.ops.op_class == op_class))
                tr = train.take(fit_rows)
                model = fit_baseline(op_class, baseline_features(op_class, paired(tr.ops, tr.devices)),
                                     tr.seconds * 1e3, seed=SEED)
                base = predict_baseline(model, baseline_features(op_class, paired(sub.ops, sub.devices))) * 1e-3
                entry["baseline_mape"] = _mape(base, sub.seconds)
                entry["baseline_time_weighted"] = _time_weighted(base, sub.seconds)
            entry["by_source"] = {
                src: {"n": int((sub.source == src).sum()),
                      "mape": _mape(ours[sub.source == src], sub.seconds[sub.source == src])}
                for src in sorted(set(sub.source))}
            rows_out.append(entry)
            log(f"  {gpu:16s} {op_class:12s} n={entry['n']:6d} mape={entry['mape']:.3f} shipped={entry['shipped_mape']:.3f} "
                f"time-weighted={entry['time_weighted']:.3f} "
                f"baseline={entry.get('baseline_mape', float('nan')):.3f} bound-only={entry['bound_only_mape']:.3f}")
        log(f"fold {gpu}: {time.time() - start:.0f} s")
    return rows_out, fold_models


def class_model_rows(ts):
    """The rows the class models learn from and are scored on: all but `NETWORK_ONLY_SOURCES` (DeepBench)."""
    return ts.take(np.flatnonzero(~np.isin(ts.source, list(NETWORK_ONLY_SOURCES))))


def class_model_seconds(models: dict, test, op_class: str, rows: np.ndarray) -> tuple:
    """``test``'s rows ``rows`` (all of ``op_class``) and the class models' seconds for them: the bound times
    e^max(0, the ensemble's log-ratio), utilisation at most 1."""
    x, _ = class_xy(test, op_class, rows)
    sub = test.take(rows)
    return sub, sub.bound * np.exp(np.maximum(Predictor._ensemble(models[op_class], x), 0.0))


def evaluate_labels(labels, fold_models: dict[str, Predictor], lookup) -> list[dict]:
    """Transformer layer 0: predicted vs measured forward / backward sums (ms) over kernel-launching nodes."""
    out = []
    for label in labels:
        device = lookup(label.device)
        predictor = fold_models.get(device.name)
        if predictor is None:
            continue
        gpu_nodes = [n for n in label.nodes if n.kind != "host"]
        entry = {"gpu": device.name, "model": label.model, "heldout_fold": True}
        for phase in ("forward", "backward"):
            ops = [op for n in gpu_nodes for op in getattr(n, phase)]
            measured = sum(n.fw_ms if phase == "forward" else n.bw_ms for n in gpu_nodes)
            predicted = float(predictor.predict_seconds(ops, device).sum() * 1e3) if ops else 0.0
            entry[f"{phase}_measured_ms"] = measured
            entry[f"{phase}_predicted_ms"] = predicted
        total_m = entry["forward_measured_ms"] + entry["backward_measured_ms"]
        total_p = entry["forward_predicted_ms"] + entry["backward_predicted_ms"]
        entry["total_error"] = total_p / total_m - 1.0
        entry["host_only_measured_ms"] = sum(n.fw_ms + n.bw_ms for n in label.nodes if n.kind == "host")
        out.append(entry)
    return out


def summarise(heldout: list[dict]) -> dict:
    """Sample-weighted MAPE overall and per class, for ours and the baseline (rows that have both)."""
    def weighted(rows, key):
        n = sum(r["n"] for r in rows if key in r)
        return sum(r[key] * r["n"] for r in rows if key in r) / n if n else None
    by_class = {}
    for op_class in sorted({r["op"] for r in heldout}):
        rows = [r for r in heldout if r["op"] == op_class]
        by_class[op_class] = {"n": sum(r["n"] for r in rows), "mape": weighted(rows, "mape"),
                              "shipped_mape": weighted(rows, "shipped_mape"),
                              "baseline_mape": weighted(rows, "baseline_mape"),
                              "gpu_mean_mape": float(np.mean([r["mape"] for r in rows]))}
        if all("time_weighted" in r for r in rows):  # mean over held-out GPUs, each GPU's ops by time
            by_class[op_class]["gpu_mean_time_weighted"] = float(np.mean([r["time_weighted"] for r in rows]))
            base = [r["baseline_time_weighted"] for r in rows if "baseline_time_weighted" in r]
            if base:
                by_class[op_class]["baseline_gpu_mean_time_weighted"] = float(np.mean(base))
    by_precision: dict[str, dict] = {}
    for op_class in sorted(by_class):
        for name in ("fp32", "half"):
            parts = [r["by_precision"][name] for r in heldout if r["op"] == op_class and name in r.get("by_precision", {})]
            if parts:
                by_precision.setdefault(name, {})[op_class] = {
                    "n": sum(p["n"] for p in parts), "mape": weighted(parts, "mape"),
                    "shipped_mape": weighted(parts, "shipped_mape"),
                    "gpus": sum(1 for p in parts if p["n"])}
    for name, classes in by_precision.items():
        parts = list(classes.values())
        classes["all"] = {"n": sum(p["n"] for p in parts), "mape": weighted(parts, "mape"),
                          "shipped_mape": weighted(parts, "shipped_mape")}
    return {"mape": weighted(heldout, "mape"), "shipped_mape": weighted(heldout, "shipped_mape"),
            "baseline_mape": weighted(heldout, "baseline_mape"), "by_class": by_class, "by_precision": by_precision}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The evaluate options (shared with ``prenet evaluate``)."""
    parser.set_defaults(prog=parser.prog)  # errors name the command as typed ("prenet evaluate" or "python -m ...")
    from predictor_models.train import add_data_argument, add_weight_decay_argument

    add_data_argument(parser)
    parser.add_argument("--json", required=True, help="where to write the results")
    parser.add_argument("--gpus", nargs="*", help="evaluate only these held-out GPUs (catalog names)")
    parser.add_argument("--sources", nargs="*", help="data sources (default: the training defaults)")
    parser.add_argument("--members", type=int, default=None, help="MLPs per class (default: as train)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the paper baseline")
    parser.add_argument("--update-card", metavar="DIR", help="write heldout_errors.json and the model card's table there")
    add_weight_decay_argument(parser)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m predictor_models.evaluate", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def _catalog_name(name: str) -> str:
    """The catalog name of a --gpus entry; an unknown name lists the closest catalog names."""
    from predictor_models.hardware import lookup_hardware

    try:
        return lookup_hardware(name).name
    except ValueError as error:
        raise ValueError(f"--gpus: {error}") from None


def run(args) -> int:
    from threadpoolctl import threadpool_limits

    from predictor_models.train import (DEFAULT_MEMBERS, TrainError, check_members, check_sources,
                                        check_weight_decay, load_training_set)
    from predictor_models.predictor.training import weight_decays
    from predictor_models.hardware import lookup_hardware
    from predictor_models.paths import check_output_path

    try:  # bad options fail here, before the data is loaded and the folds are trained
        members = DEFAULT_MEMBERS if args.members is None else check_members(args.members)
        check_sources(args.sources)
        decays = check_weight_decay(args.weight_decay)
        check_output_path(args.json, "--json", directory=False)
        if args.update_card:
            check_output_path(args.update_card, "--update-card", directory=True)
        gpus = [_catalog_name(name) for name in args.gpus] if args.gpus else None
        ts, reports = load_training_set(args.data, args.sources, extra=None)
        if gpus:
            available = sorted(set(map(str, ts.gpu)))
            missing = [gpu for gpu in gpus if gpu not in available]
            if missing:
                raise ValueError(f"--gpus: no measurements on {missing[0]!r} in {args.data or 'the shipped rows'}; GPUs in the data: "
                                 f"{', '.join(available)}")
    except (TrainError, ValueError) as error:
        print(f"{getattr(args, 'prog', 'evaluate')}: error: {error}", file=sys.stderr)
        return 2
    from predictor_models.datasets.neusight_labels import load_labels

    with threadpool_limits(1):
        heldout, folds = evaluate_folds(ts, gpus=gpus, members=members, baseline=not args.no_baseline,
                                        weight_decay=decays)
        labels = evaluate_labels(load_labels(args.data), folds, lookup_hardware)
    result = {"heldout": heldout, "summary": summarise(heldout), "transformer_layers": labels,
              "data": [r.as_dict() for r in reports], "excluded_at_training": dict(ts.excluded), "members": members,
              "weight_decay": weight_decays(decays)}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1, sort_keys=True))
    s = result["summary"]
    nan = float("nan")
    print(f"summary: mape={nan if s['mape'] is None else s['mape']:.3f} "
          f"as shipped={nan if s.get('shipped_mape') is None else s['shipped_mape']:.3f} "
          f"baseline={nan if s['baseline_mape'] is None else s['baseline_mape']:.3f} -> {args.json}")
    for entry in labels:
        print(f"  layer {entry['gpu']:16s} {entry['model']:28s} fw {entry['forward_predicted_ms']:.2f}/{entry['forward_measured_ms']:.2f}"
              f" bw {entry['backward_predicted_ms']:.2f}/{entry['backward_measured_ms']:.2f} total err {entry['total_error']:+.3f}")
    if args.update_card:
        from predictor_models.predictor.card import write_card

        write_card(Path(args.update_card), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
