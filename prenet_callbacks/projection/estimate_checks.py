"""The arguments of `estimate()` checked before any work: each bad value is a ValueError naming the fix."""
from __future__ import annotations

import math
from typing import Any

from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig


def check_model(model: Any) -> None:
    """`model` is an ``nn.Module``; else a ValueError saying how to build one."""
    import torch

    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__} ({model!r:.60}); build the "
                         "model first, e.g. `with torch.device('meta'): model = MyNet()`")


def check_steps(steps: Any) -> None:
    """None or a positive, finite number of optimizer steps; else a ValueError naming the fix."""
    if steps is None:
        return
    if isinstance(steps, bool) or not isinstance(steps, (int, float)):
        raise ValueError(f"steps must be a positive number of optimizer steps (int), got {steps!r} "
                         f"({type(steps).__name__}); pass e.g. steps=10_000, or None for no totals")
    if not math.isfinite(steps) or steps <= 0:
        raise ValueError(f"steps must be a positive, finite number of optimizer steps, got {steps!r}; "
                         "pass e.g. steps=10_000, or None for no totals")


def check_batch_size(batch_size: Any) -> None:
    """None or an integer >= 1; else a ValueError naming the fix."""
    if batch_size is None:
        return
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}; pass e.g. batch_size=32, or "
                         "None to take it from the first dimension of example_input")


_DEEPSPEED_KEYS = ("zero_stage", "offload_optimizer", "offload_param")


def zero_config(deepspeed: Any) -> ZeroConfig:
    """`deepspeed` checked and turned into a `ZeroConfig`."""
    example = 'deepspeed={"zero_stage": 3, "offload_optimizer": False, "offload_param": False}'
    if deepspeed is None:
        return ZeroConfig()
    if not isinstance(deepspeed, dict):
        raise ValueError(f"deepspeed must be a dict or None, got {deepspeed!r} ({type(deepspeed).__name__}); "
                         f"pass e.g. {example}")
    unknown = sorted(str(key) for key in deepspeed if key not in _DEEPSPEED_KEYS)
    if unknown:
        raise ValueError(f"deepspeed has unknown keys {unknown}; the keys are {list(_DEEPSPEED_KEYS)}, e.g. {example}")
    stage = deepspeed.get("zero_stage", 0)
    if stage is None:
        stage = 0
    if isinstance(stage, bool) or not isinstance(stage, int) or not 0 <= stage <= 3:
        raise ValueError(f"deepspeed['zero_stage'] must be 0, 1, 2 or 3, got {stage!r}; pass e.g. {example}")
    for key in ("offload_optimizer", "offload_param"):
        value = deepspeed.get(key, False)
        if value is not None and not isinstance(value, bool):
            raise ValueError(f"deepspeed[{key!r}] must be True or False, got {value!r}; pass e.g. {example}")
    return ZeroConfig.from_dict(deepspeed)
