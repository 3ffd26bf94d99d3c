"""Does the job fit in a target's memory, and what is the largest per-device batch that does?

Per device: parameters + gradients + optimizer state (each sharded by ZeRO / FSDP or moved to the host
by offload) + activations (linear in the per-device batch) + a reserve for the CUDA context, cuDNN/
cuBLAS workspaces and allocator fragmentation. Each part is counted once.

Where the run measured its memory (``measured.memory``: params / grads / optimizer / activations
bytes per device under its own sharding and world), those figures are used: each state part is
unsharded with the run's sharding and re-sharded with the target's; activations are the run's (they
already include activation checkpointing when the model uses it). Otherwise the state comes from the
parameter count (`model_state_bytes`) and activations from what autograd saves (`estimate`) or the
forward outputs (an upper estimate).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig
from prenet_callbacks.projection.ops.precision import Precision

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
class StateAccount:
    """Whole-model (unsharded) bytes of each state part, as measured or derived from the parameters."""

    params_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    measured: bool = False

    @classmethod
    def from_measured(cls, memory: dict, zero: ZeroConfig, world: int) -> "StateAccount | None":
        """Unsharded parts from ``measured.memory`` (per device under `zero` on `world` ranks)."""
        try:
            p, g, o = (float(memory[k]) for k in ("params_bytes", "grads_bytes", "optimizer_bytes"))
        except (KeyError, TypeError, ValueError):
            return None
        if zero.offload_optimizer or zero.offload_param or p <= 0:
            return None  # what lives on the host was not measured on the device
        p_shard, g_shard, o_shard = _shard_factors(zero, world)
        return cls(p * p_shard, g * g_shard, o * o_shard, True)

    def on_device(self, zero: ZeroConfig, ranks: int) -> tuple[float, float, float]:
        p_shard, g_shard, o_shard = _shard_factors(zero, ranks)
        p = 0.0 if (zero.offload_param and zero.stage >= 3) else self.params_bytes / p_shard
        o = 0.0 if zero.offload_optimizer else self.optimizer_bytes / o_shard
        return p, self.grads_bytes / g_shard, o


def _shard_factors(zero: ZeroConfig, ranks: int) -> tuple[float, float, float]:
    n = float(max(ranks, 1))
    return (n if zero.stage >= 3 else 1.0, n if zero.stage >= 2 else 1.0, n if zero.stage >= 1 else 1.0)


def model_state_bytes(params: float, precision: Precision, optimizer: str, zero: ZeroConfig,
                      ranks: int) -> tuple[float, float, float]:
    """(parameters, gradients, optimizer state) bytes on one device, from the parameter count."""
    return derived_account(params, precision, optimizer, zero).on_device(zero, ranks)


def derived_account(params: float, precision: Precision, optimizer: str, zero: ZeroConfig) -> StateAccount:
    """Unsharded state from the parameter count: fp32 optimizer states; true-half keeps states in the
    param dtype; mixed precision under ZeRO/FSDP keeps an fp32 master copy with the states
    (DeepSpeed's 16 bytes/param: 2 + 2 + 12)."""
    p = params * precision.param_bytes
    g = params * precision.grad_bytes
    states = optimizer_states(optimizer)
    o = params * states * (2 if (precision.half and not precision.mixed) else 4)
    if zero.stage >= 1 and precision.half:
        p, g = params * 2, params * 2
        o = params * (4 + 4 * states)
    return StateAccount(p, g, o)


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


def capacity_bytes(memory_gb: float) -> float:
    """A target's memory in bytes from the catalog's figure, which is in decimal GB as vendors state it:
    a "16 GB" T4 holds 16e9 bytes = 14.9 GiB. (Some HBM parts hold a little more than their decimal
    figure: an A100 80GB shows 79.6 GiB. Reading every part as decimal errs on the side of "does not fit".)"""
    return float(memory_gb) * 1e9


def usable_gib(memory_gb: float) -> float:
    """What a training process can allocate, in GiB: the capacity less `RESERVED_BYTES` (CUDA context,
    cuDNN/cuBLAS workspaces); the fragmentation margin applies to the allocations themselves."""
    return max(0.0, (capacity_bytes(memory_gb) - RESERVED_BYTES) / GIB)


def fit_account(account: StateAccount, zero: ZeroConfig, ranks: int, activation_bytes: float,
                batch: int | None, capacity_gb: float, *, activations_measured: bool = False) -> MemoryFit:
    """Check one target; `activation_bytes` is per device at `batch` (scaled linearly for max_batch).

    `capacity_gb` is the catalog's memory in decimal GB (`capacity_bytes`); the job's allocations, its state
    and activations x `FRAGMENTATION` (``total_bytes``, the row's ``memory_gib``), must fit in what is
    usable once `RESERVED_BYTES` are taken (the row's ``memory_usable_gib``)."""
    p, g, o = account.on_device(zero, ranks)
    capacity = capacity_bytes(capacity_gb)
    static = p + g + o
    total = (static + activation_bytes) * FRAGMENTATION
    fits = total <= capacity - RESERVED_BYTES
    max_batch = None
    if batch and batch > 0:
        per_sample = activation_bytes / batch
        room = (capacity - RESERVED_BYTES) / FRAGMENTATION - static
        if per_sample <= 0:
            max_batch = batch if room >= 0 else 0
        else:
            max_batch = max(0, int(math.floor(room / per_sample)))
    return MemoryFit(p, g, o, activation_bytes, total, capacity, fits, max_batch, activations_measured)


def fit_memory(params: float, precision: Precision, optimizer: str, zero: ZeroConfig, ranks: int,
               activation_bytes: float, batch: int | None, capacity_gb: float, *,
               activations_measured: bool = False) -> MemoryFit:
    """`fit_account` with the state derived from the parameter count."""
    return fit_account(derived_account(params, precision, optimizer, zero), zero, ranks, activation_bytes, batch,
                       capacity_gb, activations_measured=activations_measured)
