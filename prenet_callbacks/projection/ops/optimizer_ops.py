"""The optimizer step as ops, synthesised from the parameter list (not run: it is memory-bound
and its kernels are known), in the implementation PyTorch runs on the target.

`torch.optim` picks per step (``_default_to_fused_or_foreach``): with ``foreach=None, fused=None``
(the default) the *foreach* (multi-tensor) implementation when every parameter is a CUDA/ROCm tensor,
else the *for-loop* one (one small kernel per tensor and math op: what a CPU run measures); ``fused``
only when asked for. So a run measured on a CPU is projected onto a GPU with foreach kernels unless
the user named the implementation (``optimizer="adamw-fused"`` / ``"adamw-forloop"`` in `estimate`,
or the run's ``current.optimizer_impl``).

Bytes per parameter, fp32, summed over a step's kernels:
- AdamW foreach (lerp, mul, addcmul, mul(weight decay), sqrt, div, add(eps), addcdiv, plus step
  counters): ~84 B in 9 kernels per chunk of up to ~36 tensors (4 lists).
  Fused AdamW (``fused=True``): one pass, 16 B read + 12 B written = 28 B.
- SGD with momentum (mul, add, add): ~32 B.  Plain SGD (add): 12 B.
- The for-loop implementation moves the same bytes as foreach, one kernel per tensor and op.
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
IMPLEMENTATIONS = ("foreach", "fused", "forloop")
_ALIASES = {"adamw_fused": "adamw-fused", "fused_adamw": "adamw-fused", "adam_fused": "adam-fused",
            "sgd_momentum": "sgd-momentum", "momentum": "sgd-momentum", "sgdm": "sgd-momentum"}
OPTIMIZERS = tuple(_PLANS) + ("adamw-foreach", "adamw-forloop", "adam-foreach", "adam-forloop",
                              "sgd-momentum-forloop", "sgd-forloop")
_TENSORS_PER_LAUNCH = 36


def split_optimizer(name: str) -> tuple[str, str | None]:
    """("adamw", "fused") from "adamw-fused"; the implementation is None when not named."""
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    for impl in IMPLEMENTATIONS:
        if key.endswith("-" + impl):
            base = key[: -len(impl) - 1]
            if base in _PLANS and "fused" not in base:
                if impl == "fused" and f"{base}-fused" not in _PLANS:
                    break
                return base, impl
    if key in _PLANS:
        return (key[:-6], "fused") if key.endswith("-fused") else (key, None)
    raise ValueError(f"unknown optimizer {name!r}; use one of {', '.join(OPTIMIZERS)}")


def normalise_optimizer(name: str) -> str:
    """The canonical name, implementation suffix kept ("adamw", "adamw-fused", "sgd-forloop")."""
    base, impl = split_optimizer(name)
    return base if impl is None else f"{base}-{impl}"


def default_implementation(accelerator) -> str:
    """What PyTorch runs when nothing is named: foreach on a GPU (CUDA or ROCm), for-loop on a CPU."""
    return "forloop" if accelerator is None else "foreach"


def optimizer_ops(optimizer: str, param_numels: list[int], dtype: str = "float32",
                  implementation: str | None = None, grad_scaler: bool = False) -> list[tuple[OpSpec, float]]:
    """(spec, launches) of one optimizer step over the given parameter tensors.

    `implementation` overrides the one in the name; None with no suffix means foreach. ``grad_scaler``
    (``16-mixed``) adds `grad_scaler_ops`."""
    scaler = grad_scaler_ops(param_numels) if grad_scaler else []
    return scaler + _update_ops(optimizer, param_numels, dtype, implementation)


def grad_scaler_ops(param_numels: list[int]) -> list[tuple[OpSpec, float]]:
    """What `torch.amp.GradScaler` adds to a ``16-mixed`` step: ``scale(loss)`` (one tiny multiply),
    ``unscale_`` (``_amp_foreach_non_finite_check_and_unscale_``: every fp32 gradient read, checked and
    written once, one multi-tensor launch per chunk of tensors) and ``update`` (``_amp_update_scale_``,
    the inverse scale and the found-inf flag: three tiny kernels)."""
    total = float(sum(param_numels))
    if total <= 0:
        return []
    launches = max(1, math.ceil(len(param_numels) / _TENSORS_PER_LAUNCH))
    unscale = OpSpec("optimizer", "float32", total / launches, 4.0 * total / launches, 4.0 * total / launches,
                     {"numel": total / launches, "tensors": min(len(param_numels), _TENSORS_PER_LAUNCH), "kind": 0},
                     False, "aten::_amp_foreach_non_finite_check_and_unscale_")
    tiny = OpSpec("elementwise", "float32", 1.0, 8.0, 4.0, {"numel": 1, "inputs": 2}, False, "aten::_amp_update_scale_")
    return [(unscale, float(launches)), (tiny, 4.0)]


def _update_ops(optimizer: str, param_numels: list[int], dtype: str, implementation: str | None) -> list[tuple[OpSpec, float]]:
    base, named = split_optimizer(optimizer)
    impl = implementation or named or "foreach"
    plan_key = f"{base}-fused" if impl == "fused" and f"{base}-fused" in _PLANS else base
    kernels, read, written, kind, flops = _PLANS[plan_key]
    total = float(sum(param_numels))
    if kernels == 0 or total <= 0:
        return []
    scale = 0.5 if dtype in ("float16", "bfloat16") else 1.0
    tensors = len(param_numels)
    if impl == "forloop":
        launches = tensors
    elif plan_key.endswith("-fused"):
        launches = max(1, math.ceil(tensors / _TENSORS_PER_LAUNCH))
        kernels = 1
    else:
        launches = max(1, math.ceil(tensors / _TENSORS_PER_LAUNCH))
    per_launch = OpSpec("optimizer", dtype, flops * total / kernels / launches,
                        read * total * scale / kernels / launches, written * total * scale / kernels / launches,
                        {"numel": total / launches, "tensors": min(tensors, _TENSORS_PER_LAUNCH) if impl != "forloop"
                         else 1, "kind": kind}, False, f"optimizer.{plan_key}.{impl}")
    return [(per_launch, float(kernels * launches))]


def memory_optimizer_name(optimizer: str) -> str:
    """The key `memory.optimizer_states` understands."""
    base, _ = split_optimizer(optimizer)
    return {"sgd-momentum": "sgd_momentum"}.get(base, base)


def optimizer_settings(optimizer) -> dict:
    """What the projection needs to know about a live `torch.optim` optimizer, for ``report.current``:
    ``{"optimizer": "adamw", "optimizer_impl": "foreach"|"fused"|"forloop"|None, "param_tensors": int}``.

    ``optimizer_impl`` is None when the user left ``foreach`` and ``fused`` at None (PyTorch decides
    per device). Reads ``param_groups`` only; never raises on unknown optimizers.
    """
    name = type(optimizer).__name__.lower()
    base = {"adamw": "adamw", "adam": "adam", "sgd": "sgd"}.get(name, name)
    groups = getattr(optimizer, "param_groups", None) or []
    if base == "sgd" and any(g.get("momentum", 0) for g in groups):
        base = "sgd_momentum"
    impl = None
    if any(g.get("fused") for g in groups):
        impl = "fused"
    elif any(g.get("foreach") for g in groups):
        impl = "foreach"
    elif groups and all(g.get("foreach") is False for g in groups):
        impl = "forloop"
    tensors = sum(1 for g in groups for p in g.get("params", []) if getattr(p, "requires_grad", True))
    return {"optimizer": base, "optimizer_impl": impl, "param_tensors": tensors}
