"""What the predictor prices for the speed benchmark's step: its distinct ops, the held ones' grid rows, and the
rungs the work ladder priced for them before (pointwise ops and norms held along their numel / rows, until
2026-12-06).

    python benchmarks/work_grid_rows.py [--layers 500] [--json benchmarks/results/issue38_work_grid/grid_rows.json]

Counts only (no timing): the distinct virtual ops of `projection_speed.synthetic_report`'s step as the predictor
expands them, how many a family grid holds (`predictor/work_grid.py`), its rows, and the old ladder's distinct rungs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.projection_speed import synthetic_report  # noqa: E402
from benchmarks.result_file import write_result  # noqa: E402


def counts(layers: int) -> dict:
    from predictor_models.predictor import monotone
    from predictor_models.predictor.model import _distinct
    from predictor_models.predictor.optable import op_columns
    from predictor_models.predictor.work_grid import work_grid
    from prenet_callbacks.projection.from_report import workload_from_report
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()
    specs = workload_from_report(synthetic_report(layers)).flat().specs
    virtual = predictor._expand(specs)[0]
    cols = op_columns(virtual)
    first, _ = _distinct(cols)
    distinct = [virtual[i] for i in first.tolist()]
    unique = cols.take(first)
    hold = np.array([op.dtype in predictor.monotone for op in distinct])
    grid = work_grid(unique, hold)
    ladder_dims = dict(monotone.WORK_DIMS)
    try:   # the ladder as it held pointwise ops and norms
        monotone.WORK_DIMS.update({"elementwise": ("numel",), "norm": ("rows",)})
        ladder, _ = monotone.ladder_columns(distinct, unique, predictor.monotone)
    finally:
        monotone.WORK_DIMS.clear()
        monotone.WORK_DIMS.update(ladder_dims)
    rungs = 0 if ladder is None else len(_distinct(ladder)[0])
    return {"layers": layers, "distinct_ops": len(distinct), "held_ops": 0 if grid is None else int(grid.held.size),
            "families": 0 if grid is None else int(grid.family_starts.size),
            "grid_rows": 0 if grid is None else len(grid.cols), "ladder_rungs": rungs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=500)
    parser.add_argument("--json", default=str(HERE / "results/issue38_work_grid/grid_rows.json"))
    args = parser.parse_args(argv)
    result = counts(args.layers)
    print(result)
    write_result(args.json, "work_grid_rows", argv, **result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
