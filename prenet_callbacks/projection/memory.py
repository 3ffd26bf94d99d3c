"""Does the job fit in a target's memory, and what is the largest per-device batch that does?

Per device: parameters + gradients + optimizer state (each possibly sharded by ZeRO or moved to
the host by offload) + activations (linear in the batch) + a reserve for the CUDA context, cuDNN/
cuBLAS workspaces and allocator fragmentation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from prenet_callbacks.projection.parallel import ZeroConfig
from prenet_callbacks.projection.precision import Precision

GIB = 2**30
# CUDA context + library workspaces (~0.5-1 GiB on current drivers) and allocator slack.
RESERVED_BYTES = 1.0 * GIB
FRAGMENTATION = 1.10
# Optimizer state bytes per parameter, fp32 states (Adam: exp_avg, exp_avg_sq; SGD: momentum).
_OPTIMIZER_STATES = {"adamw": 2, "adam": 2, "sgd": 0, "sgd_momentum": 1, "none": 0, "adagrad": 1,
                     "rmsprop": 1, "lamb": 2}


def optimizer_states(optimizer: str) -> int:
    """Number of parameter-sized state tensors the optimizer keeps."""
    return _OPTIMIZER_STATES.get(optimizer, 2)


@dataclass(frozen=True)
class MemoryFit:
    """Per-device bytes of each part, and what follows for one target."""

    params_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    activation_bytes: float
    total_bytes: float
    capacity_bytes: float
    fits: bool
    max_batch: int | None       # largest per-device batch that fits (None: batch unknown)
    activations_measured: bool

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def model_state_bytes(params: float, precision: Precision, optimizer: str, zero: ZeroConfig,
                      ranks: int) -> tuple[float, float, float]:
    """(parameters, gradients, optimizer state) bytes on one device."""
    p = params * precision.param_bytes
    g = params * precision.grad_bytes
    states = optimizer_states(optimizer)
    # fp32 optimizer states; true-half keeps states in the param dtype; mixed under ZeRO keeps an
    # fp32 master copy too (DeepSpeed's 16 bytes/param: 2 + 2 + 12).
    if precision.half and not precision.mixed:
        o = params * states * 2
    else:
        o = params * states * 4
    if zero.stage >= 1 and precision.half:
        p, g = params * 2, params * 2
        o = params * (4 + 4 * states)
    shard = max(ranks, 1)
    if zero.stage >= 1:
        o /= shard
    if zero.stage >= 2:
        g /= shard
    if zero.stage >= 3:
        p /= shard
    if zero.offload_optimizer:
        o = 0.0
    if zero.offload_param and zero.stage >= 3:
        p = 0.0
    return p, g, o


def fit_memory(params: float, precision: Precision, optimizer: str, zero: ZeroConfig, ranks: int,
               activation_bytes: float, batch: int | None, capacity_gb: float, *,
               activations_measured: bool = False) -> MemoryFit:
    """Check one target; `activation_bytes` is per device at `batch` (scaled linearly for max_batch).

    `capacity_gb` is the catalog's memory in GiB (vendors' "80 GB" HBM parts hold 80 GiB).
    """
    p, g, o = model_state_bytes(params, precision, optimizer, zero, ranks)
    capacity = capacity_gb * GIB
    static = p + g + o
    total = (static + activation_bytes) * FRAGMENTATION + RESERVED_BYTES
    fits = total <= capacity
    max_batch = None
    if batch and batch > 0:
        per_sample = activation_bytes / batch
        room = (capacity - RESERVED_BYTES) / FRAGMENTATION - static
        if per_sample <= 0:
            max_batch = batch if room >= 0 else 0
        else:
            max_batch = max(0, int(math.floor(room / per_sample)))
    return MemoryFit(p, g, o, activation_bytes, total, capacity, fits, max_batch, activations_measured)
