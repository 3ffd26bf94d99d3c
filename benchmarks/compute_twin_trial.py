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
process only; the project's files are untouched.

Variants: ``half`` (fp16/bf16 ops of every class), ``half+tf32`` (and TF32 matmuls).

Development and held-out sets: as `benchmarks/legacy_mma_trial.py` (Lambda's v1 and v2 tables' Hopper rows; the
committed H200 steps).

Adopted on 2026-12-07 as ``half+tf32`` (`predictor_models/predictor/dominance.py`, ``twin_sets``; the model card). The
runs in `benchmarks/results/issue38_compute_twin/` were made before, at commit 072c988; run there to reproduce them
(after it, the patch would apply on top of the predictor's own rule).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

VARIANTS = ("none", "half", "half+tf32")
_TOLERANCE = 1e-6


def twins(devices, catalog, measured) -> dict[int, list]:
    """Per index of an unmeasured device in ``devices``: the measured catalog GPUs of its generation with its SM count and
    its peak in every math mode."""
    from predictor_models.predictor.devices import device_columns
    from predictor_models.predictor.dominance import generation

    pool = [d for d in catalog if d.name in measured]
    if not pool:
        return {}
    mine, theirs = device_columns(list(devices)), device_columns(pool)
    out = {}
    for i, d in enumerate(devices):
        if d.name in measured or not generation(d):
            continue
        same = [pool[j] for j in range(len(pool)) if generation(pool[j]) == generation(d)
                and mine.sms[i] == theirs.sms[j]
                and np.all(np.abs(mine.peaks[i] - theirs.peaks[j]) <= _TOLERANCE * theirs.peaks[j])]
        if same:
            out[i] = same
    return out


def held_rows(ops, variant: str) -> np.ndarray:
    """The ops the twin bound applies to under ``variant``."""
    half = np.array([op.dtype in ("float16", "bfloat16") for op in ops], dtype=bool)
    if variant == "half+tf32":
        half |= np.array([op.dtype == "float32" and bool(op.tf32) for op in ops], dtype=bool)
    return half


def install(variant: str) -> None:
    """Patch `Predictor.predict_matrix` in this process."""
    if variant == "none":
        return
    from predictor_models.predictor.bound import bound_seconds, matrix
    from predictor_models.predictor.devices import device_columns
    from predictor_models.predictor.model import Predictor, _catalog_devices
    from predictor_models.predictor.optable import op_columns

    shipped = Predictor.predict_matrix

    def predict_matrix(self, ops, devices):
        ops, devices = list(ops), list(devices)
        out = shipped(self, ops, devices)
        pairs = twins(devices, _catalog_devices(), set(self.metadata.get("trained_on") or ()))
        rows = held_rows(ops, variant) if ops else np.zeros(0, dtype=bool)
        if not pairs or not rows.any():
            return out
        held = [ops[i] for i in np.flatnonzero(rows)]
        others = list({t.name: t for ts in pairs.values() for t in ts}.values())
        theirs = shipped(self, held, others)
        cols = op_columns(held)
        mine_bound = bound_seconds(matrix(cols, device_columns(devices)))
        their_bound = bound_seconds(matrix(cols, device_columns(others)))
        where = {t.name: k for k, t in enumerate(others)}
        for j, ts in pairs.items():
            floor = np.max([theirs[:, where[t.name]] * mine_bound[:, j] / their_bound[:, where[t.name]] for t in ts],
                           axis=0)
            out[rows, j] = np.maximum(out[rows, j], floor)
        return out

    Predictor.predict_matrix = predict_matrix


def main(argv: list[str] | None = None) -> int:
    from benchmarks.hopper_trial_sets import evaluate, finish

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", required=True, choices=VARIANTS)
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    install(args.variant)
    return finish("compute_twin_trial", args.variant, {"variant": args.variant, **evaluate()}, argv, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
