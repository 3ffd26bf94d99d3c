"""Trial (issue 38): what prices an FP32 convolution on a GPU without TF32 (before Ampere), judged on whole steps.

    python benchmarks/tf32_before_ampere_trial.py --variant flag|fp32|tf32 [--json OUT]

Before Ampere there is no TF32: ``torch.backends.cudnn.allow_tf32`` (on by default) changes no kernel on a V100, T4,
P100 or RTX 2080 Ti. The predictor priced such an op by its flag all the same: a TF32-flagged FP32 convolution (as a
step captured with PyTorch's defaults has it) with the class model, the same convolution with the flag off with the
tiled-kernel network, which has priced FP32 convolutions with TF32 off since 2026-12-07 (model card, "FP32
convolutions with TF32 off"). One kernel, two prices; the GEMMs already agreed (the class model either way).

- ``flag``: the flag decides, as before this change;
- ``fp32``: before Ampere a TF32-flagged op is priced as its FP32 op (the network, for convolutions);
- ``tf32``: before Ampere every FP32 matmul-class op is priced as its TF32-flagged twin (the class model).

Each runs, in this process only, `projection_accuracy.py` (the public steps with TF32 off, the host-bound CNN steps
as captured with the defaults, the transformer steps), Lambda's ResNet-50 tables v1 and v2 and the physics grids,
and reports their summaries.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import show_and_record  # noqa: E402

ACCURACY_KEYS = ("relative_speed_gavel", "relative_speed_all", "relative_speed_nvidia_pascal_and_newer",
                 "absolute_gavel", "absolute_all", "hostbound_step", "hostbound_relative_pairs", "transformer_step")


def install(variant: str) -> None:
    """Make the shipped predictor's rule for GPUs without TF32 the ``variant``'s, in this process."""
    from predictor_models.predictor import model

    if variant == "fp32":
        return
    before_tf32, predict = model._before_tf32, model.Predictor.predict_matrix
    model._before_tf32 = lambda device: False      # the flag decides everywhere
    if variant == "flag":
        return

    def predict_matrix(self, ops, devices):
        """Before Ampere, every FP32 convolution priced as its TF32-flagged twin."""
        ops, devices = list(ops), list(devices)
        out = predict(self, ops, devices)
        older = [j for j, device in enumerate(devices) if before_tf32(device)]
        plain = [i for i, op in enumerate(ops) if op.op_class == "conv" and op.dtype == "float32" and not op.tf32]
        if older and plain:
            out[np.ix_(plain, older)] = predict(self, [replace(ops[i], tf32=True) for i in plain],
                                                [devices[j] for j in older])
        return out
    model.Predictor.predict_matrix = predict_matrix


def evaluate(data: Path) -> dict:
    import torch

    from benchmarks import predictor_physics, projection_accuracy, projection_lambda

    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        default = torch.backends.cudnn.allow_tf32
        try:   # projection_accuracy turns cuDNN's TF32 off for its public steps; Lambda's ran with the default
            projection_accuracy.main(["--data", str(data), "--out", f"{tmp}/accuracy.json"])
        finally:
            torch.backends.cudnn.allow_tf32 = default
        summary = json.loads(Path(f"{tmp}/accuracy.json").read_text())["summary"]
        out["projection_accuracy"] = {key: summary[key] for key in ACCURACY_KEYS}
        for table in ("v1", "v2"):
            projection_lambda.main(["--table", table, "--json", f"{tmp}/lambda_{table}.json"])
            out[f"lambda_resnet50_{table}"] = json.loads(Path(f"{tmp}/lambda_{table}.json").read_text())["summary"]
        predictor_physics.main(["--json", f"{tmp}/physics.json"])
        physics = json.loads(Path(f"{tmp}/physics.json").read_text())
        out["physics_tf32_convolutions"] = {key: physics[group][key]["violations"]
                                           for group, key in (("work", "conv_n/tf32"), ("work", "conv_channels/tf32"),
                                                              ("work_other_classes", "conv_backward_n/float32"))}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("flag", "fp32", "tf32"), required=True)
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data"))
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    install(args.variant)
    result = {"variant": args.variant, **evaluate(Path(args.data))}
    return show_and_record(result, args.json, "tf32_before_ampere_trial", argv)


if __name__ == "__main__":
    raise SystemExit(main())
