"""What holding half-precision ops monotone in their work costs on GPUs the models never saw, and on the GPUs they
were trained on: pointwise ops and norms on their work grid (`predictor_models/predictor/work_grid.py`; the work
ladder of `monotone.py` until 2026-12-06), as shipped (``ladder``) and not held (``no_ladder``).

    python benchmarks/pointwise_ladder_folds.py [--steps-per-octave N] [--json OUT]

For each GPU with half-precision pointwise rows (Vidur's fp16: A100-SXM4-80GB, A40, H100-SXM5), the class models are
trained on every other GPU (as `python -m predictor_models.evaluate` does) and the held-out GPU's fp16/bf16
pointwise, norm and GEMM rows are priced as shipped (`Predictor.predict_matrix`), once with the ladder and once
without (``rows``). The shipped predictor prices the same GPUs' own rows both ways too (``in_sample``): a ladder
whose rungs leave the measured shapes raises the measured ops themselves (a norm's lattice over its columns did).
About 2 minutes on one core. Writes ``benchmarks/results/pointwise_ladder_folds.json``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GPUS = ("A100-SXM4-80GB", "A40", "H100-SXM5")
CLASSES = ("elementwise", "norm", "gemm")


def _both_ways(predictor, ops, device, seconds: np.ndarray, entry: dict) -> dict:
    """``entry`` with the predictor's errors on ``ops`` with its ladder (``ladder``) and without (``no_ladder``)."""
    from predictor_models.evaluate import _mape, _time_weighted

    shipped = predictor.monotone
    try:
        for name, ladder in (("ladder", shipped), ("no_ladder", frozenset())):
            predictor.monotone = ladder
            predicted = predictor.predict_matrix(ops, [device])[:, 0]
            entry[name] = {"mape": _mape(predicted, seconds), "time_weighted": _time_weighted(predicted, seconds)}
    finally:
        predictor.monotone = shipped
    return entry


def run() -> dict:
    from threadpoolctl import threadpool_limits

    from predictor_models.hardware import lookup_hardware
    from predictor_models.predictor.model import Predictor
    from predictor_models.predictor.training import NETWORK_ONLY_SOURCES, fit_models
    from predictor_models.train import DEFAULT_MEMBERS, load_training_set
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    ts, _ = load_training_set(None, None, extra=None)
    ts = ts.take(np.flatnonzero(~np.isin(ts.source, list(NETWORK_ONLY_SOURCES))))
    half = np.array([s.op.dtype in ("float16", "bfloat16") for s in ts.samples])
    rows_out, in_sample = [], []
    shipped = default_predictor()[0]
    with threadpool_limits(1):
        for gpu in GPUS:
            train = ts.take(np.flatnonzero(ts.gpu != gpu))
            predictor = Predictor(fit_models(train, members=DEFAULT_MEMBERS),
                                  {"heldout_gpu": gpu, "trained_on": sorted(set(map(str, train.gpu)))})
            device = lookup_hardware(gpu)
            for op_class in CLASSES:
                rows = np.flatnonzero((ts.gpu == gpu) & (ts.ops.op_class == op_class) & half)
                if not rows.size:
                    continue
                sub = ts.take(rows)
                ops = [s.op for s in sub.samples]
                entry = _both_ways(predictor, ops, device, sub.seconds, {"gpu": gpu, "op": op_class, "n": int(rows.size)})
                rows_out.append(entry)
                print(json.dumps(entry), flush=True)
                own = _both_ways(shipped, ops, device, sub.seconds, {"gpu": gpu, "op": op_class, "n": int(rows.size)})
                in_sample.append(own)
                print("in sample:", json.dumps(own), flush=True)
    return {"benchmark": "pointwise_ladder_folds", "rows": rows_out, "in_sample": in_sample}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/pointwise_ladder_folds.json"))
    parser.add_argument("--steps-per-octave", type=int, default=None,
                        help="grid points per doubling of the work (work_grid.STEPS_PER_OCTAVE; default: as shipped)")
    args = parser.parse_args(argv)
    if args.steps_per_octave:
        from predictor_models.predictor import work_grid

        work_grid.STEPS_PER_OCTAVE = args.steps_per_octave
    result = {"command": "python benchmarks/pointwise_ladder_folds.py" + (
        f" --steps-per-octave {args.steps_per_octave}" if args.steps_per_octave else ""), **run()}
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
