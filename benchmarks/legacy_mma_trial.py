"""Trial (issue 38): Hopper's half-precision convolutions at the legacy MMA rate, chosen on Lambda's steps, judged on
the H200's.

    python benchmarks/legacy_mma_trial.py --variant none|conv|conv+tf32|conv+attention [--json OUT]

The mechanism: a Hopper SM reaches its dense tensor peak only through the warpgroup MMA (``wgmma``) of sm_90a kernels;
the warp-level ``mma.sync`` of kernels built for Ampere issues at Ampere's rate per SM and clock, half of Hopper's
(Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", arXiv:2402.13499). cuBLAS runs
sm_90a GEMMs; the convolution kernels of the cuDNN builds in Lambda's containers and FlashAttention-2 (PyTorch's
SDPA flash kernel) are Ampere-family implicit GEMMs. So on compute capability 9.x the variant prices those kernels
against half the catalog's peak of their mode: their roofline, and the time-at-peak input of the tiled-kernel network
(`predictor/kernel_features.py`), which is monotone in it. No figure is fitted: the factor is the ratio of the two
instructions' rates. Blackwell is left alone (no public rate of its legacy MMA). The predictor is patched in this
process only; the project's files are untouched.

Variants: ``conv`` (half-precision convolution kernels), ``conv+tf32`` (and TF32 ones: Ampere's TF32 mma.sync is
also half of Hopper's TF32 wgmma rate per SM and clock), ``conv+attention`` (and the GEMMs of fused SDPA kernels).

Development: Lambda's ResNet-50 and BERT tables, v1 and v2 (`projection_lambda.py`, `projection_lambda_bert.py`),
the steps of their Hopper rows (H100 PCIe and SXM5, GH200, H200) and the AMP speed-up over FP32 there. Held out: the
committed H200 steps (`estimate_h200.py`), which nothing here is chosen on.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HOPPER = (9.0, 10.0)           # compute capability range the legacy rate applies to
LEGACY_SHARE = 0.5             # Ampere's mma.sync rate per SM and clock over Hopper's wgmma rate (fp16/bf16, tf32)
ATTENTION_MARK = 7919.0        # a `kind` dim the trial gives the GEMMs of fused attention kernels
VARIANTS = ("none", "conv", "conv+tf32", "conv+attention")


def legacy_rows(cols, variant: str) -> np.ndarray:
    """Which virtual ops run Ampere-family MMA kernels under ``variant``."""
    from predictor_models.predictor.devices import MODES

    half = np.isin(cols.mode, [MODES.index("fp16"), MODES.index("bf16")])
    rows = (cols.op_class == "conv") & half
    if variant == "conv+tf32":
        rows |= (cols.op_class == "conv") & (cols.mode == MODES.index("tf32"))
    if variant == "conv+attention":
        rows |= (cols.op_class == "gemm") & half & (cols.dim("kind") == ATTENTION_MARK)
    return rows


def install(variant: str) -> None:
    """Patch the predictor's pair builder (and the attention expansion) in this process."""
    if variant == "none":
        return
    from dataclasses import replace

    from predictor_models.predictor import bound, expand, model

    shipped_matrix = bound.matrix

    def matrix(ops, devs):
        pairs = shipped_matrix(ops, devs)
        if devs.arch is None:
            return pairs
        hopper = (devs.arch >= HOPPER[0]) & (devs.arch < HOPPER[1])
        applies = legacy_rows(ops, variant)[:, None] & hopper[None, :]
        if not applies.any():
            return pairs
        return replace(pairs, peak=np.where(applies, pairs.peak * LEGACY_SHARE, pairs.peak))

    model.matrix = matrix
    if variant == "conv+attention":
        shipped_gemm = expand._gemm

        def gemm(op, b, m, n, k, *, name):
            spec = shipped_gemm(op, b, m, n, k, name=name)
            if name.startswith("attention."):
                spec = replace(spec, dims={**spec.dims, "kind": ATTENTION_MARK})
            return spec

        expand._gemm = gemm


def main(argv: list[str] | None = None) -> int:
    from benchmarks.hopper_trial_sets import run

    return run("legacy_mma_trial", __doc__, VARIANTS, install, argv, legacy_share=LEGACY_SHARE)


if __name__ == "__main__":
    raise SystemExit(main())
