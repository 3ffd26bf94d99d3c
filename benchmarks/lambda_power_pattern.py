"""Does a Lambda step's error follow its GPU's board power per TFLOP? An analysis of committed results, nothing fitted.

    python benchmarks/lambda_power_pattern.py [--json OUT]

Issue 38's Hopper question (`gpu_clocks.py`): isolated kernels, which the per-op data times one at a time on an idle
GPU, may run at a clock that a sustained training step cannot hold where the board's power is small for its tensor
peak. If so, the signed error of whole steps (predicted over measured, minus one) would fall as board watts per TFLOP
of the step's math mode fall: too fast where power is short. This reads the committed development-set results of
`projection_lambda.py` and `projection_lambda_bert.py` (v1 and v2 tables, `benchmarks/results/`), pairs each row with
its catalog GPU's ``tdp_w`` over its peak (fp16 tensor for 16-bit rows, TF32 else FP32 for 32-bit ones), and reports
Spearman's rank correlation overall and within each architecture generation, with each generation's GPUs in order.
A correlation across generations is confounded with them (newer GPUs have less power per TFLOP); the within-generation
rows are what a power mechanism must also explain. Rows without a catalog board power (the GH200's is its module's)
are listed and left out.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SETS = {"resnet50_v1": "projection_lambda.json", "resnet50_v2": "projection_lambda_v2.json",
        "bert_v1": "projection_lambda_bert.json", "bert_v2": "projection_lambda_bert_v2.json"}


def _ranks(values: list[float]) -> np.ndarray:
    """Ranks from 1, ties sharing their mean rank."""
    distinct, inverse = np.unique(np.asarray(values, dtype=float), return_inverse=True)
    first = np.cumsum(np.bincount(inverse, minlength=distinct.size)) - np.bincount(inverse)   # ranks below each value
    return (first + (np.bincount(inverse) + 1) / 2.0)[inverse]


def spearman(x: list[float], y: list[float]) -> float | None:
    """Spearman's rank correlation (Pearson's on average ranks); None with fewer than 3 rows or no spread."""
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return round(float(np.corrcoef(_ranks(x), _ranks(y))[0, 1]), 3)


def rows() -> tuple[list[dict], list[dict]]:
    """Every development-set row with its GPU's watts per TFLOP of its mode, and the rows without a board power."""
    from predictor_models.hardware import lookup_hardware

    kept, skipped = [], []
    for name, file in SETS.items():
        for r in json.loads((RESULTS / file).read_text())["rows"]:
            gpu = lookup_hardware(r["gpu"])
            half = "16" in r["precision"]
            peak = gpu.fp16_tflops if half else (gpu.tf32_tflops or gpu.fp32_tflops)
            row = {"set": name, "model": r.get("model", "resnet50"), "gpu": r["gpu"], "precision": r["precision"],
                   "bits": 16 if half else 32, "error": r["error"],
                   "generation": str(gpu.architecture).split(" (")[0], "tdp_w": gpu.tdp_w, "peak_tflops": peak}
            if not (gpu.tdp_w and peak):
                skipped.append(row)
                continue
            row["watts_per_tflop"] = round(gpu.tdp_w / peak, 3)
            kept.append(row)
    return kept, skipped


def summary(kept: list[dict]) -> dict:
    """Per precision: the overall rank correlation, and per generation its correlation and its GPUs in order of
    watts per TFLOP with their median error."""
    out: dict = {}
    for bits in (16, 32):
        mine = [r for r in kept if r["bits"] == bits]
        per_gen: dict = {}
        by_gen: dict[str, list[dict]] = defaultdict(list)
        for r in mine:
            by_gen[r["generation"]].append(r)
        for gen, group in sorted(by_gen.items()):
            gpus: dict[str, list[dict]] = defaultdict(list)
            for r in group:
                gpus[r["gpu"]].append(r)
            per_gen[gen] = {
                "n": len(group),
                "spearman": spearman([r["watts_per_tflop"] for r in group], [r["error"] for r in group]),
                "gpus": [{"gpu": g, "watts_per_tflop": rs[0]["watts_per_tflop"], "n": len(rs),
                          "median_error": round(statistics.median(r["error"] for r in rs), 3)}
                         for g, rs in sorted(gpus.items(), key=lambda kv: kv[1][0]["watts_per_tflop"])]}
        out[f"{bits}-bit"] = {"n": len(mine),
                              "spearman": spearman([r["watts_per_tflop"] for r in mine], [r["error"] for r in mine]),
                              "by_generation": per_gen}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    kept, skipped = rows()
    found = summary(kept)
    for precision, block in found.items():
        print(f"{precision}: {block['n']} rows, Spearman(watts per TFLOP, signed error) = {block['spearman']}")
        for gen, g in block["by_generation"].items():
            gpus = ", ".join(f"{x['gpu']} {x['watts_per_tflop']:.2f} W/TF {x['median_error']:+.1%}" for x in g["gpus"])
            print(f"  {gen} (n={g['n']}, rho={g['spearman']}): {gpus}")
    if args.json:
        write_result(args.json, "lambda_power_pattern", argv, sets=SETS, summary=found,
                     left_out=[f"{r['set']} {r['gpu']} {r['precision']}: no catalog board power" for r in skipped],
                     rows=kept)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
