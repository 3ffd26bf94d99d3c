"""Shared pieces of the predictor tests' synthetic data."""
from __future__ import annotations

from predictor_models.op_spec import OpSpec
from predictor_models.predictor.bound import LAUNCH_S


def roofline_s(op: OpSpec, device, peak: float) -> float:
    """The op's roofline time on ``device`` at ``peak`` FLOP/s, launch included: what a synthetic sample is slower than."""
    return max(op.flops / peak, op.bytes_moved / (device.memory_bandwidth_gbs * 1e9)) + LAUNCH_S
