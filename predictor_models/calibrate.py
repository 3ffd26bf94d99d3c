"""Calibrate the shipped predictor on one GPU from ops measured there (no public data needed, seconds).

    python -m predictor_models.calibrate --rows DIR --out my_predictor          # rows from `collect --out DIR`
    python -m predictor_models.calibrate --from-report run.json --out my_predictor   # a GPU run's per-op times

Writes ``predictor.json`` (the correction, naming the shipped predictor it applies to) and
``MODEL_CARD.md`` (device, rows, error on held-back rows before and after). Every ``predictor=``
argument and ``--predictor`` option takes the folder. Bad input exits 2 with one line; nothing is
written then.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Sequence


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The calibrate options (shared with ``prenet calibrate``)."""
    parser.set_defaults(prog=parser.prog)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--rows", metavar="DIR", help="folder (or file) of rows written by `prenet collect` on one GPU")
    source.add_argument("--from-report", metavar="REPORT", help="a GPU run's prenet_report.json (measured.op_samples)")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder to write the calibrated predictor into")
    parser.add_argument("--device", default=None, help="the GPU the rows must come from (default: the one they name)")
    parser.add_argument("--catalog", metavar="FILE", default=None,
                        help="hardware override file for a GPU the catalog lacks (default: the rows' hardware.toml)")
    parser.add_argument("--holdout", type=float, default=0.25,
                        help="fraction of rows held back from the fit to score it (default 0.25)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the held-back choice")


def run(args) -> int:
    from predictor_models.calibration import calibrate_report, calibrate_rows
    from predictor_models.predictor import PredictorLoadError

    start = time.perf_counter()
    try:
        if not 0 <= args.holdout < 1:
            raise ValueError(f"--holdout must be in [0, 1), got {args.holdout:g}; pass e.g. --holdout 0.25")
        call = calibrate_rows if args.rows else calibrate_report
        predictor = call(args.rows or args.from_report, args.out, device=args.device, catalog=args.catalog,
                         holdout=args.holdout, seed=args.seed)
    except (ValueError, PredictorLoadError) as error:
        print(f"{getattr(args, 'prog', 'calibrate')}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    s = predictor.summary
    print(f"calibrated {s['device']} from {s['rows_used']} rows ({s['rows_fit']} fitted, {s['rows_heldback']} held back) "
          f"in {time.perf_counter() - start:.1f} s -> {args.out}")
    for cls, e in s["heldback"].items():
        print(f"  {cls:12s} held-back MAPE {e['mape_before']:6.1%} -> {e['mape_after']:6.1%}  (n={e['n']})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m predictor_models.calibrate", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
