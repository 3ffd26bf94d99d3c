"""The legacy-MMA trial's patch (benchmarks/legacy_mma_trial.py): which kernels and devices get half the peak."""
from __future__ import annotations

import numpy as np

from benchmarks import legacy_mma_trial as trial
from predictor_models.datasets.common import conv_op, gemm_op
from predictor_models.hardware import lookup_hardware
from predictor_models.predictor import bound, expand, model
from predictor_models.predictor.devices import device_columns
from predictor_models.predictor.optable import op_columns


def _ops():
    return [conv_op(64, 256, 256, 14, 14, 3, 3, 1, 1, "bfloat16"), conv_op(64, 256, 256, 14, 14, 3, 3, 1, 1, "float32"),
            gemm_op(1, 4096, 4096, 4096, "bfloat16")]


def test_only_half_precision_convolutions_on_hopper_get_the_legacy_peak(monkeypatch):
    monkeypatch.setattr(model, "matrix", model.matrix)   # restored after the test: install patches the module
    monkeypatch.setattr(expand, "_gemm", expand._gemm)
    cols = op_columns(_ops())
    devs = device_columns([lookup_hardware("H100-SXM5"), lookup_hardware("A100-SXM4-80GB")])
    shipped = bound.matrix(cols, devs).peak
    trial.install("conv")
    patched = model.matrix(cols, devs).peak
    assert patched[0, 0] == shipped[0, 0] * trial.LEGACY_SHARE    # bf16 convolution on the H100: half
    assert patched[0, 1] == shipped[0, 1]                          # on the A100 (Ampere): as shipped
    assert (patched[1:] == shipped[1:]).all()                      # an fp32 convolution, a GEMM: as shipped


def test_the_variants_pick_their_kernels():
    ops = _ops()
    tf32 = conv_op(64, 256, 256, 14, 14, 3, 3, 1, 1, "float32")
    tf32 = type(tf32)(**{**tf32.__dict__, "tf32": True})
    cols = op_columns(ops + [tf32])
    assert trial.legacy_rows(cols, "conv").tolist() == [True, False, False, False]
    assert trial.legacy_rows(cols, "conv+tf32").tolist() == [True, False, False, True]
    assert not np.any(trial.legacy_rows(cols, "conv+attention")[2:])   # an unmarked GEMM is cuBLAS's
