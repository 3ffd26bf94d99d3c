"""What a `DeepSpeedEngine` is configured to do, in the report's terms.

Fills ``report.current["deepspeed"]`` and ``report.current["precision"]`` (Lightning spelling), which
the cross-hardware projection reads to add ZeRO communication and CPU offload. Works on a raw
engine and on the one inside Lightning's ``DeepSpeedStrategy`` (``trainer.strategy.deepspeed_engine``).
"""
from __future__ import annotations

from typing import Any

import torch

_DTYPE_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


def _offload_device(offload: Any) -> str | None:
    """``"cpu"`` or ``"nvme"`` when ZeRO offloads there, else ``None``."""
    device = getattr(offload, "device", None)
    if device is None:
        return None
    name = str(getattr(device, "value", device)).lower()
    return None if name in ("none", "") else name


def model_dtype(engine: Any) -> torch.dtype:
    """The dtype DeepSpeed computes in: fp16 / bf16 when enabled (also via ``torch_autocast``), else fp32."""
    if engine.fp16_enabled():
        return torch.float16
    if engine.bfloat16_enabled():
        return torch.bfloat16
    autocast = getattr(engine, "torch_autocast_enabled", None)
    if autocast is not None and autocast():
        return engine.torch_autocast_dtype()
    return torch.float32


def precision_of(engine: Any) -> str:
    """Lightning's name for the engine's precision: DeepSpeed keeps fp32 master weights, so half is "mixed"."""
    return {torch.float16: "16-mixed", torch.bfloat16: "bf16-mixed"}.get(model_dtype(engine), "32-true")


def describe_engine(engine: Any) -> dict[str, Any]:
    """``report.current["deepspeed"]``: ZeRO stage, offload targets, accumulation, micro-batch, dtype."""
    return {
        "zero_stage": int(engine.zero_optimization_stage()),
        "offload_optimizer": _offload_device(engine.zero_offload_optimizer()),
        "offload_param": _offload_device(engine.zero_offload_param()),
        "gradient_accumulation_steps": int(engine.gradient_accumulation_steps()),
        "micro_batch_per_gpu": int(engine.train_micro_batch_size_per_gpu()),
        "dtype": _DTYPE_NAMES.get(model_dtype(engine), str(model_dtype(engine)).replace("torch.", "")),
    }
