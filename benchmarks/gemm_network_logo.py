"""The GEMM network's held-out half-precision GEMM error beside the shipped class models', on the same rows.

    python benchmarks/gemm_network_logo.py [--json OUT]

Reads two committed files, fits nothing: the GEMM network's leave-one-GPU-out folds
(`benchmarks/gemm_work_network_folds.py --inputs scaled-roofline-nopower`, one member, trained on every other GPU's
GEMM rows; ``network+floor`` is what ships) and `predictor_models/pretrained/heldout_eval.json` (`python -m
predictor_models.evaluate`: three class-model members per fold, ``shipped_mape`` as a projection priced it until the
network). Both score the same half-precision GEMM rows of the GPUs `evaluate` holds out (the A100 SXM4, A40, H100 and
B200: every fp16 and bf16 GEMM the class models learn from; DeepBench's pre-Ampere fp16 GEMMs train only the networks
and are in the folds file alone). Pooled MAPE weights each GPU by its rows, as `evaluate` does.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402

FOLDS = ROOT / "benchmarks/results/issue38_gemm_scaled_network/folds_roofline_nopower.json"
EVALUATION = ROOT / "predictor_models/pretrained/heldout_eval.json"


def compare(folds: dict, evaluation: dict) -> dict:
    """Per GPU and pooled: rows, the network's MAPE (with its floor) and the class models' (alone and as shipped)."""
    network = {f["gpu"]: f["half"] for f in folds["folds"] if "half" in f}
    rows = {}
    for entry in evaluation["heldout"]:
        half = entry.get("by_precision", {}).get("half")
        if entry["op"] != "gemm" or not half or entry["gpu"] not in network:
            continue
        if network[entry["gpu"]]["n"] != half["n"]:
            raise ValueError(f"{entry['gpu']}: the folds score {network[entry['gpu']]['n']} half-precision GEMMs, "
                             f"evaluate {half['n']}: not the same rows")
        rows[entry["gpu"]] = {"n": half["n"], "network": network[entry["gpu"]]["network+floor"],
                              "class_models": round(half["mape"], 4), "class_models_shipped": round(half["shipped_mape"], 4)}
    total = sum(r["n"] for r in rows.values())
    pooled = {key: round(sum(r[key] * r["n"] for r in rows.values()) / total, 4)
              for key in ("network", "class_models", "class_models_shipped")}
    worst = {key: max(rows.values(), key=lambda r: r[key])[key] for key in pooled}
    # every class's held-out rows as a projection prices them, with these GEMMs' error the network's instead
    by_precision = evaluation["summary"]["by_precision"]
    every = sum(by_precision[p]["all"]["n"] for p in ("fp32", "half"))
    shipped = evaluation["summary"]["shipped_mape"]
    with_network = shipped + (pooled["network"] - pooled["class_models_shipped"]) * total / every
    return {"by_gpu": rows, "pooled": {"n": total, **pooled}, "worst_gpu": worst,
            "every_class": {"n": every, "shipped_before": round(shipped, 4), "with_network": round(with_network, 4)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the comparison here")
    args = parser.parse_args(argv)
    result = compare(json.loads(FOLDS.read_text()), json.loads(EVALUATION.read_text()))
    for gpu, r in result["by_gpu"].items():
        print(f"{gpu:16s} n={r['n']:6d}  network {r['network']:.1%}  class models {r['class_models']:.1%} "
              f"(as shipped {r['class_models_shipped']:.1%})")
    p = result["pooled"]
    print(f"pooled           n={p['n']:6d}  network {p['network']:.1%}  class models {p['class_models']:.1%} "
          f"(as shipped {p['class_models_shipped']:.1%}); worst GPU {result['worst_gpu']}")
    e = result["every_class"]
    print(f"every class      n={e['n']:6d}  shipped {e['shipped_before']:.1%} -> with the network {e['with_network']:.1%}")
    if args.json:
        write_result(args.json, "gemm_network_logo", argv, **result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
