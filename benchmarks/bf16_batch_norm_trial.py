"""Trial (issue 38): how much of the H200's bf16 ResNet-50 gap a bf16 batch norm priced at its fp32 time would close.

    python benchmarks/bf16_batch_norm_trial.py [--json OUT]

PyTorch sends a batch norm to cuDNN in fp32, and in fp16 with fp32 weights, but never in bf16
(`_select_batch_norm_backend` in ATen's `Normalization.cpp`): a bf16 batch norm runs ATen's own kernels, whose NCHW
statistics and backward reductions launch one block per channel (`Normalization.cuh`). The predictor prices it from
its bytes, half of fp32's. This replays `benchmarks/estimate_h200.py` with every bf16 batch norm priced as its fp32
twin (the same op at fp32's bytes): the upper end of what the mechanism could explain if ATen's kernels ran at an
element rate rather than a byte rate. Only the H200's bf16 ResNet-50 rows move (no other development set has a bf16
batch norm). The magnitude is a guess until `gpu_probes.py`'s ``batch_norm_over_fp32`` rows measure it, so nothing
here is shipped.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402


def fp32_twin(spec):
    """A bf16 batch norm as its fp32 twin (bytes doubled); any other op unchanged."""
    if spec.op_class == "norm" and "batch_norm" in spec.name and spec.dtype == "bfloat16":
        return replace(spec, dtype="float32", bytes_read=spec.bytes_read * 2, bytes_written=spec.bytes_written * 2)
    return spec


def run(variant: str) -> dict:
    from benchmarks import estimate_h200
    from predictor_models.predictor.model import Predictor

    original = Predictor.predict_matrix
    if variant == "bf16_batch_norm_at_fp32":
        Predictor.predict_matrix = lambda self, ops, devices: original(self, [fp32_twin(o) for o in ops], devices)
    try:
        table = estimate_h200.rows()
    finally:
        Predictor.predict_matrix = original
    return {"variant": variant, "rows": table, "summary": estimate_h200.summary(table)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write both variants here")
    args = parser.parse_args(argv)
    variants = {v: run(v) for v in ("shipped", "bf16_batch_norm_at_fp32")}
    for name, v in variants.items():
        print(name, {k: {f: s[f] for f in ("median_abs_error", "worst_abs_error", "inside_band")}
                     for k, s in v["summary"].items()})
        for r in v["rows"]:
            if r["model"] == "resnet50":
                print(f"   {r['model']} {r['batch']} {r['precision']}: {r['error']:+.1%}")
    if args.json:
        write_result(args.json, "bf16_batch_norm_trial", argv, variants=variants)
    return 0


if __name__ == "__main__":
    sys.exit(main())
