"""Trial (issue 38): FP32 pointwise ops and norms held monotone in their work from above.

    python benchmarks/stream_descending_trial.py --variant none|descending|descending_all [--json OUT]

FP32 pointwise ops and norms are the class models' and are not held: their training rows carry NeuSight's harness
lag (~20-40 us before a small kernel), and holding them from below (a running maximum over a family's grid of
sizes, as half-precision ones are held) carried that lag up to mid-size ops (`results/issue38_fp32_grid_trial/`).
``descending`` holds them from above instead: on its family's grid each size takes the least time of any larger
size (`work_grid._envelope`), since the larger op's kernel could do the smaller one's work. A small op priced
above a larger one is lowered to it, not the larger op raised; where the models do not dip nothing moves. The
grid of a descending family reaches `work_grid.LARGEST_OP_BYTES`, so an op's price does not depend on the other ops
of its step. ``descending_all`` holds half-precision families from above too. The default predictor is patched in this process
only.

Development sets as `stream_lag_free_trial.py` (its `evaluate`): `estimate_h200.py`, `projection_lambda.py`,
`projection_lambda_bert.py`, `projection_accuracy.py`'s steps and the physics grids of `predictor_physics.py`.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import show_and_write  # noqa: E402

# ``none``: as shipped before 2026-12-07 (its run is ``trial_shipped.json``, the variant's name then); ``descending``:
# as shipped since
VARIANTS = {"none": frozenset(), "descending": frozenset({"float32"}),
            "descending_all": frozenset({"float32", "bfloat16", "float16"})}


def install(variant: str) -> None:
    """Hold the variant's dtypes from above in the default predictor (this process only)."""
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    default_predictor()[0].descending = VARIANTS[variant]


def main(argv: list[str] | None = None) -> int:
    from benchmarks.stream_lag_free_trial import evaluate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=sorted(VARIANTS), required=True)
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data"))
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    install(args.variant)
    result = {"benchmark": "stream_descending_trial", "variant": args.variant, **evaluate(Path(args.data))}
    return show_and_write(result, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
