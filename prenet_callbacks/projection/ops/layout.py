"""The layout transforms cuDNN runs around half-precision convolutions of NCHW tensors.

cuDNN's tensor-core convolution kernels work on NHWC ("channels last") data. Given NCHW tensors in
FP16/BF16 it transposes each operand to NHWC and the result back (the ``nchwToNhwcKernel`` /
``nhwcToNchwKernel`` kernels of an AMP ResNet's profile): NVIDIA's "Convolutional Layers User's
Guide" (Tensor layouts in memory: NCHW vs NHWC) says so and recommends NHWC, and PyTorch's
channels-last tutorial reports the speed-up it brings under AMP. Each transform is one streaming
pass over a tensor: read it, write it.

Depthwise convolutions (as many groups as input channels) pay none: PyTorch runs a half-precision NCHW one with
its own NCHW kernel (``CudaDepthwise2d``: always in BF16, and in FP16 outside cuDNN's depthwise conditions) or,
in FP16, with cuDNN's NCHW depthwise kernels; neither transposes (``ConvParams::use_cudnn_depthwise`` in
PyTorch's ``aten/src/ATen/native/Convolution.cpp``: "Use cudnn for FP16 depthwise convolutions").

PyTorch picks channels-last for a cuDNN convolution when its input *or* its weight is channels-last
(``cudnn_conv_suggest_memory_format``), so ``model.to(memory_format=torch.channels_last)`` is enough.
Per convolution call that is, in the forward, the input and the output; in the backward (one
``convolution_backward`` call, which cuDNN runs as a data-gradient and a weight-gradient
convolution) the output gradient twice, the input once and the input gradient once. Channels-last
tensors (``model.to(memory_format=torch.channels_last)`` and a channels-last input) need none, and
neither do FP32 convolutions or GPUs without tensor cores for the dtype: the projection drops these
ops on such targets (`is_layout_op`).
"""
from __future__ import annotations

from math import prod
from typing import Any

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.ops.precision import esize

LAYOUT_NAME = "layout.nchw_nhwc"
_HALF = ("float16", "bfloat16")


def channels_last_flag(tensor: Any) -> int:
    """1 when a 4-D tensor is laid out channels-last (NHWC strides), else 0 (also for other ranks)."""
    try:
        import torch

        return int(tensor.dim() == 4 and tensor.is_contiguous(memory_format=torch.channels_last)
                   and not tensor.is_contiguous())
    except (AttributeError, RuntimeError):
        return 0


def layout_ops(call: Any, spec: OpSpec, channels_last: bool | None = None) -> list[OpSpec]:
    """The transforms a half-precision 2-D convolution `call` (an `OpCall`) of NCHW tensors pays;
    ``channels_last`` True/False overrides the memory format recorded with the call."""
    if spec.op_class != "conv" or spec.dtype not in _HALF or _depthwise(spec):
        return []
    if channels_last if channels_last is not None else call.scalar("channels_last", 0):
        return []
    shapes = [s for s in call.input_shapes if s is not None]
    backward = "backward" in call.base
    x, out = (shapes[1], shapes[0]) if backward else (shapes[0], call.output_shapes[0] if call.output_shapes else None)
    if len(x) != 4 or (out is not None and len(out) != 4):
        return []
    return _operand_transforms(spec, prod(x), None if out is None else prod(out), backward)


def layout_ops_from_dims(spec: OpSpec) -> list[OpSpec]:
    """`layout_ops` of a half-precision 2-D convolution known only by its spec (a report's recorded op, whose
    tensors are gone): the operands' sizes from its dims, NCHW assumed (PyTorch's default)."""
    d = spec.dims or {}
    if spec.op_class != "conv" or spec.dtype not in _HALF or d.get("spatial_dims", 2) != 2 or _depthwise(spec):
        return []
    x = d.get("n", 0) * d.get("c_in", 0) * d.get("h_in", 0) * d.get("w_in", 0)
    out = d.get("n", 0) * d.get("c_out", 0) * d.get("h_out", 0) * d.get("w_out", 0)
    if not (x > 0 and out > 0):
        return []
    return _operand_transforms(spec, x, out, bool(d.get("backward", 0)))


def _depthwise(spec: OpSpec) -> bool:
    """PyTorch's depthwise convolution (`ConvParams::is_depthwise`): one group per input channel, output channels
    a multiple of the input's (`expand.is_depthwise` prices also two channels a group as streaming kernels)."""
    d = spec.dims or {}
    groups, c_in, c_out = d.get("groups", 1), d.get("c_in", 0), d.get("c_out", 0)
    return groups > 1 and groups == c_in and c_out % c_in == 0


def _operand_transforms(spec: OpSpec, x: float, out: float | None, backward: bool) -> list[OpSpec]:
    """One transform per NCHW operand: forward the input and the output (when known); backward the output
    gradient twice (data grad and weight grad), the input once and the input gradient back."""
    numels = [out, out, x, x] if backward else [x] + ([out] if out is not None else [])
    return [_transform(int(n), esize(spec.dtype), spec.dtype) for n in numels]


def _transform(numel: int, size: int, dtype: str) -> OpSpec:
    nbytes = float(numel * size)
    return OpSpec("data_movement", dtype, 0.0, nbytes, nbytes, {"numel": float(numel)}, False, LAYOUT_NAME)


def is_layout_op(spec: OpSpec) -> bool:
    return spec.name == LAYOUT_NAME


def runs_layout_transforms(accelerator: Any, dtype: str) -> bool:
    """Whether cuDNN runs `dtype` convolutions on `accelerator`'s tensor cores (and so transposes NCHW):
    NVIDIA GPUs of compute capability 7.0 (Volta) on for FP16, 8.0 (Ampere) on for BF16."""
    if accelerator is None or str(getattr(accelerator, "vendor", "")).lower() != "nvidia":
        return False
    try:
        major, minor = (int(x) for x in str(accelerator.compute_capability).split(".")[:2])
    except (TypeError, ValueError):
        return False
    return (major, minor) >= ((7, 0) if dtype == "float16" else (8, 0))
