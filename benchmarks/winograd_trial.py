"""Trial (issue 38): 3x3 FP32 convolutions at the lesser of their direct and Winograd price, and which Winograd tile.

    python benchmarks/winograd_trial.py [--variants off 2 4 6] [--json OUT]
    python benchmarks/winograd_trial.py --speed [--json OUT]     # the rule's cost on the speed benchmark

The development set is DeepBench's FP32 training convolutions (Apache-2.0, in the shipped row file): per kernel
(forward, data gradient, weight gradient), the time and, for the forward, the algorithm cuDNN's search chose. Its
eligible rows (3x3, stride 1, same padding) are the only per-kernel measurements of what the rule prices; the
direct-kernel network never fits those faster than 2/3 of the direct roofline (`training.MIN_RATIO` drops them), so
they judge the Winograd price without having trained it. DeepBench chose each algorithm by timing them (cuDNN's
``cudnnFind*``, what ``torch.backends.cudnn.benchmark`` turns on), so its rows are marked as searched. A variant is ``off`` (the direct price alone) or the output
tile edge m of F(m x m, 3 x 3); the choice is the variant with the least worst (GPU, kernel) MAPE. Each variant
also reports, in this process only, the host-bound CNN steps (ryujaehun, batch 12, cuDNN's search on) and Lambda's
ResNet-50 FP32 steps (v1 table), for the record; they do not choose.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from benchmarks.result_file import show_and_record  # noqa: E402

KERNELS = {0: "forward", 1: "data gradient", 2: "weight gradient"}


def install(variant: str) -> None:
    """The shipped rule with the ``variant``'s tile, or none (``off``), in this process."""
    from predictor_models.predictor import winograd

    if variant == "off":
        winograd.VENDORS = frozenset()
    else:
        winograd.TILE = int(variant)


def kernel_rows() -> list[tuple]:
    """(kernel op, device, seconds, cuDNN's forward algorithm) of DeepBench's FP32 convolutions the rule prices."""
    from predictor_models.datasets.shipped_files import load_shipped
    from predictor_models.predictor import winograd

    samples, _ = load_shipped(["deepbench"])
    out = []
    for s in samples:
        if s.op.op_class != "conv" or s.op.dtype != "float32":
            continue
        grad = int(s.op.dims.get("grad", 0) or 0)
        # DeepBench picks each algorithm by timing them (cudnnFind*, as torch.backends.cudnn.benchmark does); a
        # backward sample is one kernel: its data gradient or its weight gradient alone
        dims = {**s.op.dims, "algorithm_search": 1}
        op = replace(s.op, dims={**dims, "grad_input": int(grad == 1), "grad_weight": int(grad == 2)} if grad else dims)
        if winograd.eligible(op):
            algorithm = s.op.name.split(" ", 1)[1] if grad == 0 and " " in s.op.name else ""
            out.append((op, s.device, s.seconds, grad, algorithm))
    return out


def kernel_scores(rows: list[tuple], predictor) -> dict:
    from predictor_models.hardware import lookup_hardware

    ratios: dict[tuple[str, str], list[float]] = defaultdict(list)
    by_algorithm: dict[str, list[float]] = defaultdict(list)
    for device in sorted({r[1] for r in rows}):
        mine = [r for r in rows if r[1] == device]
        times = predictor.predict_matrix([r[0] for r in mine], [lookup_hardware(device)])[:, 0]
        for (op, _, seconds, grad, algorithm), t in zip(mine, times):
            ratios[(device, KERNELS[grad])].append(t / seconds)
            if algorithm:
                by_algorithm[algorithm].append(t / seconds)

    def score(values: list[float]) -> dict:
        a = np.asarray(values)
        return {"n": int(a.size), "median_predicted_over_measured": round(float(np.median(a)), 3),
                "mape": round(float(np.mean(np.abs(a - 1))), 4)}
    groups = {f"{device} / {kernel}": score(v) for (device, kernel), v in sorted(ratios.items())}
    return {"groups": groups, "worst_group_mape": max(g["mape"] for g in groups.values()),
            "pooled": score([x for v in ratios.values() for x in v]),
            "forward_by_cudnn_algorithm": {a: score(v) for a, v in sorted(by_algorithm.items())}}


def step_scores(predictor) -> dict:
    import projection_hostbound
    import projection_lambda

    hostbound = projection_hostbound.hostbound_rows(predictor)
    out = {}
    for precision in ("32-true", "16-true"):
        errors = [r["predicted_s"] / r["measured_s"] - 1 for r in hostbound if r["precision"] == precision]
        out[f"hostbound_{precision}"] = {"n": len(errors), "mape": round(statistics.fmean(map(abs, errors)), 4),
                                         "median_signed": round(statistics.median(errors), 4),
                                         "worst": round(max(map(abs, errors)), 4)}
    fp32 = {r["gpu"]: round(r["predicted_s"] / r["measured_s"] - 1, 4) for r in projection_lambda.rows()
            if r["precision"] == "32-true"}
    out["lambda_resnet50_v1_fp32"] = {"median_abs": round(statistics.median(map(abs, fp32.values())), 4),
                                      "worst_abs": round(max(map(abs, fp32.values())), 4), "signed": fp32}
    return out


def paired_speed(repeats: int = 7) -> dict:
    """The rule's cost on the speed benchmark's 10,000 ops x 40 devices, alternated in one process: its
    convolutions marked as searched (every FP32 3x3 eligible) with the rule on and off, and as the benchmark builds
    them (unsearched: no Winograd priced)."""
    import statistics
    import time

    from benchmarks.predictor_speed import mixed_ops
    from predictor_models.hardware import list_hardware
    from predictor_models.predictor import load_predictor, winograd
    from prenet_callbacks.projection.ops.precision import searched

    predictor = load_predictor()
    plain = mixed_ops(10_000)
    marked = [searched(op, True) if op.op_class == "conv" else op for op in plain]
    devices = [d for d in list_hardware() if d.memory_bandwidth_gbs][:40]
    shipped = winograd.VENDORS
    runs: dict[str, list[float]] = {"searched_rule_on": [], "searched_rule_off": [], "unsearched": []}
    predictor.predict_matrix(marked, devices)
    try:
        for _ in range(repeats):
            for name, times in runs.items():
                winograd.VENDORS = frozenset() if name == "searched_rule_off" else shipped
                start = time.perf_counter()
                predictor.predict_matrix(plain if name == "unsearched" else marked, devices)
                times.append(time.perf_counter() - start)
    finally:
        winograd.VENDORS = shipped

    def ratio(a: str, b: str) -> dict:
        r = [x / y for x, y in zip(runs[a], runs[b])]
        return {"median": round(statistics.median(r), 3), "min": round(min(r), 3), "max": round(max(r), 3)}
    return {"eligible_ops": sum(winograd.eligible(op) for op in marked),
            "median_ms": {k: round(statistics.median(v) * 1e3, 1) for k, v in runs.items()},
            "on_over_off": ratio("searched_rule_on", "searched_rule_off"),
            "unsearched_over_off": ratio("unsearched", "searched_rule_off")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", default=["off", "2", "4", "6"])
    parser.add_argument("--no-steps", action="store_true", help="the DeepBench kernels only")
    parser.add_argument("--speed", action="store_true", help="only the rule's cost on the speed benchmark, paired")
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    if args.speed:
        return show_and_record(paired_speed(), args.json, "winograd_trial", argv)
    from predictor_models.predictor import winograd
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor = default_predictor()[0]
    rows = kernel_rows()
    shipped = (winograd.TILE, winograd.VENDORS)
    result: dict = {"eligible_kernels": len(rows), "variants": {}}
    for variant in args.variants:
        install(variant)
        try:
            entry = {"deepbench_kernels": kernel_scores(rows, predictor)}
            if not args.no_steps:
                entry.update(step_scores(predictor))
        finally:
            winograd.TILE, winograd.VENDORS = shipped
        result["variants"][variant] = entry
        print(variant, json.dumps({k: v for k, v in entry["deepbench_kernels"].items() if k != "groups"}))
    result["chosen_by_worst_group"] = min(result["variants"],
                                          key=lambda v: result["variants"][v]["deepbench_kernels"]["worst_group_mape"])
    return show_and_record(result, args.json, "winograd_trial", argv)


if __name__ == "__main__":
    raise SystemExit(main())
