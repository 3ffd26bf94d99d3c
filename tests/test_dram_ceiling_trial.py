"""The DRAM-ceiling trial's floor (benchmarks/dram_ceiling_trial.py): which ops and devices it holds, and to what."""
from __future__ import annotations

import numpy as np

from benchmarks.dram_ceiling_trial import ceiling_times
from predictor_models.datasets.common import elementwise_op
from predictor_models.hardware import lookup_hardware
from predictor_models.op_spec import OpSpec
from predictor_models.predictor.devices import device_columns
from predictor_models.predictor.optable import op_columns


def test_the_floor_holds_only_large_streaming_ops_on_hopper():
    big = elementwise_op(400e6, 2, "bfloat16", name="aten::add")   # 2.4 GB moved: far beyond any L2
    small = elementwise_op(1e5, 2, "bfloat16", name="aten::add")
    gemm = OpSpec("gemm", "bfloat16", 2 * 8192**3, 3 * 2 * 8192**2, 2 * 8192**2, {"b": 1, "m": 8192, "n": 8192, "k": 8192})
    cols = op_columns([big, small, gemm])
    devs = device_columns([lookup_hardware("H100-SXM5"), lookup_hardware("A100-SXM4-80GB")])
    times = np.full((3, 2), 1e-9)
    out = ceiling_times(cols, devs, times, 0.7)
    assert out[0, 0] == cols.bytes[0] / (0.7 * devs.bandwidth[0])    # the big add on the H100: held at the floor
    assert out[0, 1] == times[0, 1]                                   # an Ampere GPU: untouched
    assert (out[1:] == times[1:]).all()                               # a small add, a GEMM: untouched
    assert (ceiling_times(cols, devs, np.full((3, 2), 10.0), 0.7) == 10.0).all()   # a floor, never a cap
