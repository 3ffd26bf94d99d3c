"""The shipped predictor on the H200's own kernel-timed op rows: a per-op check on a GPU no training source has.

    python benchmarks/h200_op_rows.py [--json OUT]

`prenet collect --quick` ran on the H200 of the acceptance run (`benchmarks/results/gpu/H200-SXM-collect-quick.csv`,
108 ops: GEMMs, convolutions, norms and pointwise ops in fp32 and bf16, kernel times). Nothing is trained or tuned
on them. Each class and dtype is scored as shipped, and without the kernel networks (the class models alone where a
network prices), so that what a network changes is read on a GPU it never saw.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402

H200_ROWS = ROOT / "benchmarks/results/gpu/H200-SXM-collect-quick.csv"


def scores(predicted: np.ndarray, measured: np.ndarray) -> dict:
    error = predicted / measured - 1.0
    return {"n": int(error.size), "mape": round(float(np.mean(np.abs(error))), 4),
            "median_error": round(float(np.median(error)), 4), "worst_abs_error": round(float(np.max(np.abs(error))), 4)}


def evaluate(path: Path = H200_ROWS) -> dict:
    from predictor_models.datasets.rows import read_rows
    from predictor_models.hardware import lookup_hardware
    from predictor_models.predictor import Predictor
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    samples = read_rows([path])
    device = lookup_hardware("H200-SXM")
    shipped, _ = default_predictor()
    class_models = Predictor(shipped.models, shipped.metadata, shipped.heldout, shipped.default_utilisation)
    ops = [s.op for s in samples]
    measured = np.array([s.seconds for s in samples])
    times = {"shipped": shipped.predict_matrix(ops, [device])[:, 0],
             "class_models": class_models.predict_matrix(ops, [device])[:, 0]}
    out: dict = {}
    for key in sorted({(op.op_class, op.dtype) for op in ops}):
        rows = np.array([(op.op_class, op.dtype) == key for op in ops])
        out["/".join(key)] = {name: scores(t[rows], measured[rows]) for name, t in times.items()}
    out["all"] = {name: scores(t, measured) for name, t in times.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the scores here")
    args = parser.parse_args(argv)
    result = evaluate()
    for key, by in result.items():
        print(f"{key:24s} n={by['shipped']['n']:3d}  shipped {100 * by['shipped']['mape']:6.1f}% MAPE "
              f"(median {100 * by['shipped']['median_error']:+6.1f}%)  class models {100 * by['class_models']['mape']:6.1f}%")
    if args.json:
        write_result(args.json, "h200_op_rows", argv, rows=str(H200_ROWS.relative_to(ROOT)), scores=result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
