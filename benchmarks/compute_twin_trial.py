"""Trial (issue 38): a GPU is no faster than its measured compute twin beyond what its bandwidth buys, chosen on
Lambda's steps, judged on the H200's.

    python benchmarks/compute_twin_trial.py --variant none|half|half+tf32 [--json OUT]

The mechanism: two GPUs of one generation with the same SM count and the same peak in every math mode (the H200 and
GH200 against the H100 SXM5; an A100 40GB or an A800 against the A100s) run the same kernels on the same tensor and
vector units at the same clocks. More DRAM bandwidth speeds up the memory-bound part of a kernel, at most in proportion,
and the compute-bound part not at all. So a GPU the data does not measure takes at least its measured twin's time
scaled by the ratio of their roofline bounds, ``max(FLOPs / peak, bytes / bandwidth)``: equal on a compute-bound op,
``bandwidth ratio`` on a memory-bound one. The predictor read bandwidth, L2 and power through learned features and
priced the H200's TF32 GEMMs 2-8% and the GH200's bf16 and TF32 GEMMs 2-24% faster than the H100's, where their
tensor cores are the same. Measured GPUs keep their times; fp32 (non-TF32) ops are left alone, as the device envelope's up-sets
leave them (their public times carry each harness's host lag). Nothing is fitted. The predictor is patched in this
process only.

Variants: ``half`` (fp16/bf16 ops of every class), ``half+tf32`` (and TF32 matmuls).

Development and held-out sets: as `benchmarks/legacy_mma_trial.py` (Lambda's v1 and v2 tables' Hopper rows; the
committed H200 steps).

Adopted on 2026-12-07 as ``half+tf32`` (`predictor_models/predictor/dominance.py`, ``twin_sets``; the model card). The
runs in `benchmarks/results/issue38_compute_twin/` were made at commit 072c988 with this script's own patch; since then
the script switches the predictor's rule instead (``none`` takes the twins away, ``half`` the TF32 ops), which gives
the same step errors on these sets (the in-band counts follow the band table of the day).
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

VARIANTS = ("none", "half", "half+tf32")


def install(variant: str) -> None:
    """Set the predictor's own rule (`dominance.twin_sets`, `Predictor.predict_matrix`) to ``variant`` in this
    process: ``none`` without twins, ``half`` holding half-precision ops only, ``half+tf32`` as shipped."""
    from predictor_models.predictor import model

    if variant == "none":
        model.twin_sets = lambda *args, **kwargs: {}
    elif variant == "half":
        model.TWIN_MODES = ()


def main(argv: list[str] | None = None) -> int:
    from benchmarks.hopper_trial_sets import run

    return run("compute_twin_trial", __doc__, VARIANTS, install, argv)


if __name__ == "__main__":
    raise SystemExit(main())
