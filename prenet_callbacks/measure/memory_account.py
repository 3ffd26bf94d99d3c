"""One account of training state per device: parameters, gradients, optimizer state, activations.

Sizes are read from tensor metadata only (``numel``, ``element_size``, local shards), never from
``state_dict()`` (under FSDP it gathers every parameter on every rank) and never by a gather:

- plain modules (and DDP): every parameter; gradients for those that require grad, at the
  gradient's dtype (before one exists: ``p.grad_dtype`` where torch has it, else the parameter's);
  optimizer state tensors.
- DeepSpeed ZeRO (pass the engine, or its module and ``engine.optimizer``): ZeRO-3 parameters are
  their local partition ``p.ds_tensor`` (``numel()`` of a released ZeRO-3 parameter is 0); ZeRO-2
  and 3 gradients are partitioned (1/world of the full size, the local partition under ZeRO-3);
  optimizer state is the engine optimizer's partitioned fp32 master weights and the wrapped torch
  optimizer's moments over them.
- FSDP1: ``FlatParameter``s, at their local shard size (``_sharded_size``) even while unsharded.
- FSDP2 (``fully_shard``): DTensor parameters, gradients and optimizer state at ``to_local()``
  (a view of the local shard, no communication).

Only tensors on the compute device count, so optimizer state offloaded to the CPU is not device
memory. Call after the first optimizer step: optimizers create their state lazily.
"""
from __future__ import annotations

from typing import Any, Iterable

SHARDINGS = ("none", "zero1", "zero2", "zero3", "fsdp")


def _is_engine(obj: Any) -> bool:
    return callable(getattr(obj, "zero_optimization_stage", None)) and hasattr(obj, "module")


def _local(t: Any) -> Any:
    """The tensor this rank holds for `t` (a DTensor's local shard, else `t`)."""
    to_local = getattr(t, "to_local", None)
    if to_local is not None and hasattr(t, "placements"):
        return to_local()
    return t


def _bytes(t: Any) -> int:
    t = _local(t)
    return int(t.numel()) * int(t.element_size())


def _param_numel(p: Any) -> tuple[int, int, str | None]:
    """(local element count, bytes per element, sharding kind or None) from the parameter's metadata."""
    ds_tensor = getattr(p, "ds_tensor", None)
    if ds_tensor is not None:                      # DeepSpeed ZeRO-3 partition
        return int(ds_tensor.numel()), int(ds_tensor.element_size()), "zero3"
    sharded = getattr(p, "_sharded_size", None)
    if sharded is not None:                        # FSDP1 FlatParameter
        return int(sharded.numel()), int(p.element_size()), "fsdp"
    if hasattr(p, "placements") and hasattr(p, "to_local"):   # FSDP2 DTensor
        local = p.to_local()
        return int(local.numel()), int(local.element_size()), "fsdp"
    return int(p.numel()), int(p.element_size()), None


def _grad_size(p: Any, param_size: int) -> int:
    """Bytes per gradient element: the gradient's own, else ``p.grad_dtype`` (torch >= 2.10), else
    the parameter's."""
    grad = getattr(p, "grad", None)
    if grad is not None:
        return int(_local(grad).element_size())
    grad_dtype = getattr(p, "grad_dtype", None)
    itemsize = getattr(grad_dtype, "itemsize", None)
    return int(itemsize) if itemsize else param_size


def _on_device(t: Any, device: Any) -> bool:
    return device is None or getattr(_local(t), "device", None) is None or _local(t).device.type == device.type


def _unique(tensors: Iterable[Any]) -> list[Any]:
    seen: set[int] = set()
    out = []
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def _optimizer_bytes(optimizer: Any, model_params: set[int], device: Any) -> int:
    """State tensors, plus the master weights of a wrapping optimizer (DeepSpeed, fp16 wrappers)."""
    import torch

    total = 0
    inner = getattr(optimizer, "optimizer", None)
    torch_opt = optimizer if isinstance(optimizer, torch.optim.Optimizer) else None
    if isinstance(inner, torch.optim.Optimizer):
        torch_opt = inner
        # the inner optimizer steps master copies (fp32 partitions), not the model's parameters;
        # ZeRO-3 puts them in param_groups only during step(), but its state stays keyed by them
        stepped = [p for g in inner.param_groups for p in g["params"]] + list(inner.state)
        masters = [p for p in stepped if isinstance(p, torch.Tensor) and id(p) not in model_params]
        total += sum(_bytes(p) for p in _unique(masters) if _on_device(p, device))
    if torch_opt is None:
        return total
    for state in torch_opt.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor) and _on_device(value, device):
                total += _bytes(value)
    return total


def state_sizes(module: Any, optimizers: Iterable[Any] = (), *, world: int = 1) -> dict[str, Any]:
    """Bytes of training state held on each device, from metadata only.

    Args:
        module: the model (plain, DDP, FSDP1 or FSDP2 wrapped), or a DeepSpeed engine.
        optimizers: the optimizers stepping it (a DeepSpeed engine brings its own when empty).
        world: data-parallel ranks, for partitions that only metadata of the whole knows
            (ZeRO-2 gradients); a DeepSpeed engine's own ``dp_world_size`` wins.

    Returns:
        ``{params_bytes, grads_bytes, optimizer_bytes, sharding, world}``; bytes per device,
        sharding one of `SHARDINGS`.
    """
    if world < 1:
        raise ValueError(f"state_sizes(world={world}): must be at least 1 (data-parallel ranks)")
    stage = 0
    if _is_engine(module):
        engine = module
        stage = int(engine.zero_optimization_stage() or 0)
        world = int(getattr(engine, "dp_world_size", None) or world)
        optimizers = list(optimizers) or [getattr(engine, "optimizer", None)]
        module = engine.module
    params = _unique(module.parameters())
    device = next((p.device for p in params), None)
    kinds: set[str] = set()
    params_bytes = grads_bytes = 0
    for p in params:
        numel, size, kind = _param_numel(p)
        if kind:
            kinds.add(kind)
        if world == 1 and hasattr(p, "device_mesh"):
            world = int(p.device_mesh.size())   # FSDP2: the mesh says how many ranks share it
        params_bytes += numel * size
        if p.requires_grad:
            grad_size = _grad_size(p, size)
            if kind is None and stage == 2:
                numel = -(-numel // world)      # ZeRO-2: this rank reduces and keeps 1/world
            grads_bytes += numel * grad_size
    model_ids = {id(p) for p in params}
    optimizer_bytes = sum(_optimizer_bytes(opt, model_ids, device) for opt in optimizers if opt is not None)
    if stage:
        sharding = f"zero{stage}"
    elif "zero3" in kinds:   # a ZeRO-3 module passed without its engine
        sharding = "zero3"
    elif "fsdp" in kinds:
        sharding = "fsdp"
    else:
        sharding = "none"
    return {"params_bytes": params_bytes, "grads_bytes": grads_bytes, "optimizer_bytes": optimizer_bytes,
            "sharding": sharding, "world": world}


def memory_summary(peak_allocated_bytes: int | None, sizes: dict[str, Any], *, device: str) -> dict[str, Any]:
    """The report's ``measured.memory``: the window's peak and what it is made of, per device.

    ``activations_bytes`` is the peak less parameters, gradients and optimizer state (never below
    zero; None without a measured peak, e.g. on CPU).
    """
    state = sizes["params_bytes"] + sizes["grads_bytes"] + sizes["optimizer_bytes"]
    activations = None if peak_allocated_bytes is None else max(0, int(peak_allocated_bytes) - state)
    return {"device": device, "peak_allocated_bytes": peak_allocated_bytes,
            "params_bytes": sizes["params_bytes"], "grads_bytes": sizes["grads_bytes"],
            "optimizer_bytes": sizes["optimizer_bytes"], "activations_bytes": activations,
            "sharding": sizes["sharding"], "world": sizes.get("world", 1)}
