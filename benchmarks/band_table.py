"""The regime band table (`prenet_callbacks/projection/rows/bands.py`) from the committed evaluation results.

    python benchmarks/band_table.py            # reads benchmarks/results/, writes prenet_callbacks/projection/rows/band_table.json

Rows: every measured step of ``projection_accuracy.json`` (absolute steps on public GPUs, the
host-bound CNN set, the transformer set, data-parallel steps; the anchored relative-speed set), of Lambda's tables
(``projection_lambda.json``: ResNet-50 AMP and FP32 steps on twelve GPUs; ``projection_lambda_bert.json``: BERT-base
and -large SQuAD on the same GPUs; their ``_v2`` files: both on the H100 PCIe and SXM5, GH200, H200 and B200) and of
``estimate_h200.json`` (the H200 acceptance run's steps). Each gets its regime (precision, method,
host-bound) and ``|log(predicted / measured)|``. The table is the 90th percentile per regime. Beside
it, for each evaluation set, the coverage of bands built from the *other* sets only: the share of
that set's measured steps inside ``predicted / e^w .. predicted x e^w``.

``bias`` holds, per precision and the target's architecture generation, the absolute device-bound steps' median
signed error (predicted / measured - 1) and each set's and each GPU's own median: `bands.bias_note` tells a projected
row where they all agree.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from predictor_models.hardware import lookup_hardware  # noqa: E402
from predictor_models.predictor.dominance import generation  # noqa: E402
from prenet_callbacks.projection.rows.bands import (QUANTILE, TABLE_PATH, build_bias, build_table,  # noqa: E402
                                                     has_matrix_units, width_from)

RESULTS = ROOT / "benchmarks/results"
# Lambda's whole-step tables (issue 38's development sets): set name -> committed result of its benchmark
LAMBDA_SETS = {"lambda_resnet50": "projection_lambda.json", "lambda_resnet50_v2": "projection_lambda_v2.json",
               "lambda_bert": "projection_lambda_bert.json", "lambda_bert_v2": "projection_lambda_bert_v2.json"}


def _row(set_name: str, gpu: str, half: bool, method: str, host_bound: bool, predicted: float,
         measured: float) -> dict:
    name = gpu.split("x ", 1)[-1] if "x " in gpu else gpu     # "4x A100-SXM4-40GB"
    accelerator = lookup_hardware(name)
    return {"set": set_name, "gpu": gpu, "half": half, "method": method, "host_bound": bool(host_bound),
            "matrix_units": has_matrix_units(accelerator), "generation": generation(accelerator),
            "log_error": math.log(predicted / measured)}


def evaluation_rows() -> list[dict]:
    acc = json.loads((RESULTS / "projection_accuracy.json").read_text())
    rows = [_row("absolute", r["gpu"], False, "absolute", False, r["predicted_s"], r["measured_s"]) for r in acc["absolute"]]
    rows += [_row("relative_anchored", r["gpu"], False, "anchored", False, r["predicted_ratio"], r["measured_ratio"])
             for r in acc["relative_anchored"]]
    rows += [_row("hostbound", r["gpu"], r["precision"] != "32-true", "absolute", r["host_bound"], r["predicted_s"],
                  r["measured_s"]) for r in acc["hostbound"]]
    rows += [_row("transformers", r["gpu"], True, "absolute", r["host_bound"], r["predicted_s"], r["measured_s"])
             for r in acc["transformers"]]
    rows += [_row("data_parallel", r["gpu"], False, "absolute", False, r["predicted_s"], r["measured_s"])
             for r in acc["data_parallel"]]
    for name, file in LAMBDA_SETS.items():
        if (RESULTS / file).exists():
            rows += [_row(name, r["gpu"], r["precision"] != "32-true", "absolute", r["host_bound"], r["predicted_s"],
                          r["measured_s"]) for r in json.loads((RESULTS / file).read_text())["rows"]]
    h200 = RESULTS / "estimate_h200.json"
    if h200.exists():
        rows += [_row("estimate_h200", "H200-SXM", r["precision"] != "32-true", "absolute", bool(r.get("host_bound")),
                      r["predicted_step_s"], r["measured_step_s"]) for r in json.loads(h200.read_text())["rows"]]
    return rows


def coverage(rows: list[dict], table: dict) -> float:
    inside = [abs(r["log_error"]) <= width_from(table, r["half"], r["method"], r["matrix_units"], r["host_bound"])
              for r in rows]
    return sum(inside) / len(inside) if inside else float("nan")


def table_document() -> dict:
    """``band_table.json`` as the committed evaluation results give it (what `main` writes)."""
    rows = evaluation_rows()
    table = build_table(rows)
    sets = sorted({r["set"] for r in rows})
    held_out = {}
    for name in sets:
        own = [r for r in rows if r["set"] == name]
        others = build_table([r for r in rows if r["set"] != name])
        held_out[name] = {"n": len(own), "coverage_without_it": round(coverage(own, others), 3),
                          "coverage_in_sample": round(coverage(own, table), 3),
                          "median_abs_error": round(sorted(math.expm1(abs(r["log_error"])) for r in own)[len(own) // 2], 4)}
    doc = {"about": "bands.py: 90th percentile of |log(predicted/measured)| per regime; written by "
                    "benchmarks/band_table.py from benchmarks/results/projection_accuracy.json, projection_lambda.json, "
                    "projection_lambda_v2.json, projection_lambda_bert.json, projection_lambda_bert_v2.json and "
                    "estimate_h200.json",
           "quantile": QUANTILE, "cells": table, "sets": held_out, "bias": build_bias(rows),
           "coverage_all_in_sample": round(coverage(rows, table), 3)}
    return doc


def main() -> int:
    doc = table_document()
    table, held_out = doc["cells"], doc["sets"]
    TABLE_PATH.write_text(json.dumps(doc, indent=1) + "\n")
    for key, cell in table.items():
        print(f"{key:24s} n={cell['n']:4d}  band +-{math.expm1(cell['width']):.1%}")
    for name, info in held_out.items():
        print(f"{name:18s} n={info['n']:3d}  coverage without it {info['coverage_without_it']:.0%}, in sample "
              f"{info['coverage_in_sample']:.0%}, median error {info['median_abs_error']:.1%}")
    for key, cell in doc["bias"].items():
        sets = ", ".join(f"{name} {median:+.0%}" for name, median in cell["sets"].items())
        print(f"bias {key:22s} n={cell['n']:3d}  median {cell['median_error']:+.1%}  ({sets})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
