"""3x3 FP32 convolutions of a run whose cuDNN does not time its algorithms: a note, not a forecast.

With ``torch.backends.cudnn.benchmark = True`` (Lightning's ``Trainer(benchmark=True)``) cuDNN times its algorithms
and a 3x3, stride-1 FP32 convolution runs Winograd's kernels where they are faster, which the projection prices
(`predictor_models/predictor/winograd.py`). Without the search PyTorch takes cuDNN's heuristic pick, which no public
measurement the predictor has shows: such convolutions keep their direct price. Where they carry a good part of the
step's convolution work the notes say so, and how to turn the search on; what it would save is not projected.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from predictor_models.op_spec import OpSpec
from predictor_models.predictor import winograd

from prenet_callbacks.projection.ops.precision import Precision, searched

# Below this share of the step's convolution FLOPs the search changes the step by too little to mention.
MIN_SHARE = 0.2


def conv_search_note(ops: Iterable[tuple[OpSpec, float]], precision: Precision) -> str | None:
    """A sentence when cuDNN's search is off and at least `MIN_SHARE` of the FP32 convolution work could run
    Winograd's kernels with it on, else None."""
    if precision.conv_search or precision.compute_dtype != "float32":
        return None
    total = candidates = 0.0
    for spec, count in ops:
        if spec.op_class != "conv" or spec.dtype != "float32":
            continue
        total += spec.flops * count
        # as it runs where TF32 does not exist (before Ampere, AMD GPUs): the flag cleared
        if winograd.eligible(searched(replace(spec, tf32=False), True)):
            candidates += spec.flops * count
    if not total or candidates / total < MIN_SHARE:
        return None
    return (f"cuDNN's algorithm search is off (torch.backends.cudnn.benchmark): 3x3 FP32 convolutions "
            f"({candidates / total:.0%} of the convolution work) are priced at their direct kernels; where they run "
            f"in FP32 (before Ampere, AMD GPUs, TF32 off) Trainer(benchmark=True) lets cuDNN pick Winograd kernels, "
            f"a quarter of the multiplies")

