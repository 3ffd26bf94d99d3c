"""The optimizer step as ops, synthesised from the parameter list (not run: it is memory-bound
and its kernels are known).

PyTorch's default on CUDA is the *foreach* implementation (multi-tensor kernels, up to ~36 tensors
per launch for 4 lists). Bytes per parameter, fp32, summed over its kernels:
- AdamW foreach (lerp, mul, addcmul, mul(weight decay), sqrt, div, add(eps), addcdiv, plus step
  counters): ~84 B.  Fused AdamW (``fused=True``): one pass, 16 B read + 12 B written = 28 B.
- SGD with momentum (mul, add, add): ~32 B.  Plain SGD (add): 12 B.
"""
from __future__ import annotations

import math

from predictor_models.op_spec import OpSpec

# name -> (kernels per chunk of tensors, bytes read per param, bytes written per param, kind, flops/param)
_PLANS = {
    "adamw": (9, 60.0, 24.0, 2, 12.0),
    "adam": (8, 52.0, 20.0, 2, 10.0),
    "adamw-fused": (1, 16.0, 12.0, 2, 12.0),
    "adam-fused": (1, 16.0, 12.0, 2, 12.0),
    "sgd-momentum": (3, 20.0, 12.0, 1, 4.0),
    "sgd": (1, 8.0, 4.0, 0, 2.0),
    "none": (0, 0.0, 0.0, 0, 0.0),
}
_ALIASES = {"adamw_fused": "adamw-fused", "fused_adamw": "adamw-fused", "adam_fused": "adam-fused",
            "sgd_momentum": "sgd-momentum", "momentum": "sgd-momentum", "sgdm": "sgd-momentum"}
OPTIMIZERS = tuple(_PLANS)
_TENSORS_PER_LAUNCH = 36


def normalise_optimizer(name: str) -> str:
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _PLANS:
        raise ValueError(f"unknown optimizer {name!r}; use one of {', '.join(OPTIMIZERS)}")
    return key


def optimizer_ops(optimizer: str, param_numels: list[int], dtype: str = "float32") -> list[tuple[OpSpec, float]]:
    """(spec, launches) of one optimizer step over the given parameter tensors."""
    optimizer = normalise_optimizer(optimizer)
    kernels, read, written, kind, flops = _PLANS[optimizer]
    total = float(sum(param_numels))
    if kernels == 0 or total <= 0:
        return []
    scale = 0.5 if dtype in ("float16", "bfloat16") else 1.0
    launches = max(1, math.ceil(len(param_numels) / _TENSORS_PER_LAUNCH)) if "fused" not in optimizer else 1
    per_kernel = OpSpec("optimizer", dtype, flops * total / kernels, read * total * scale / kernels,
                        written * total * scale / kernels,
                        {"numel": total / launches, "tensors": min(len(param_numels), _TENSORS_PER_LAUNCH),
                         "kind": kind}, False, f"optimizer.{optimizer}")
    # one spec per launch of each kernel: bytes split evenly over the launches
    per_launch = OpSpec(per_kernel.op_class, dtype, per_kernel.flops / launches,
                        per_kernel.bytes_read / launches, per_kernel.bytes_written / launches,
                        per_kernel.dims, False, per_kernel.name)
    return [(per_launch, float(kernels * launches))]


def memory_optimizer_name(optimizer: str) -> str:
    """The key `memory.optimizer_states` understands."""
    key = normalise_optimizer(optimizer)
    return {"adamw-fused": "adamw", "adam-fused": "adam", "sgd-momentum": "sgd_momentum"}.get(key, key)
