"""The report's `current` block: what runs where, shared by every integration."""
from __future__ import annotations

from typing import Any

import torch


def describe_run(device: torch.device | str, *, devices: int, precision: str, strategy: str, framework: str,
                 **extra: Any) -> dict[str, Any]:
    """Device type and name, its catalog entry when known, world size and precision.

    ``extra`` adds framework-specific keys (e.g. ``deepspeed``: the ZeRO configuration).
    """
    device = torch.device(device)
    current: dict[str, Any] = {
        "device": device.type,
        "name": str(device),
        "catalog_name": None,
        "devices": int(devices or 1),
        "precision": precision,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),   # cuDNN's search: 3x3 FP32 convs may run Winograd
        "strategy": strategy,
        "framework": framework,
    }
    from prenet_callbacks.hardware import current_device

    info = current_device(device=device)
    current["name"] = _plain_name(info.name) if device.type == "cpu" else info.name
    current["catalog_name"] = info.accelerator.name if info.accelerator is not None else None
    current["detected"] = bool(getattr(info.accelerator, "detected", False))
    current["device_index"] = device.index if device.type != "cpu" else None
    if info.cpu_cores:
        current["cpu_cores"] = info.cpu_cores
    current.update(extra)
    return current


def _plain_name(name: str) -> str:
    """``Intel(R) Xeon(R) CPU @ 2.20GHz`` -> ``Intel Xeon CPU @ 2.20GHz``: trademarks only clutter tables."""
    for mark in ("(R)", "(r)", "(TM)", "(tm)"):
        name = name.replace(mark, "")
    return " ".join(name.split())


def batch_size_of(batch: Any) -> int | None:
    """Leading dimension of the first tensor in a (nested) batch; ``None`` when there is none."""
    if torch.is_tensor(batch):
        return int(batch.shape[0]) if batch.dim() > 0 else None
    if isinstance(batch, dict):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)):
        for item in batch:
            size = batch_size_of(item)
            if size is not None:
                return size
    return None
