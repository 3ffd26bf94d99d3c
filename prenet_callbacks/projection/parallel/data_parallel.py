"""Data-parallel communication of one step: DDP buckets, ZeRO 1-3 / FSDP, offload, and what overlaps.

Times of single collectives come from `fabric.Fabric` (one node or several); this module decides
which collectives a step runs, how they are bucketed and what hides behind backward.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from prenet_callbacks.projection.parallel.fabric import Fabric

DDP_BUCKET_BYTES = 25 * 2**20  # torch DDP bucket_cap_mb default
ZERO_BUCKET_BYTES = 5e8 * 2    # DeepSpeed reduce_bucket_size default (5e8 elements, fp16)
# Host-side optimizer (DeepSpeed CPU-Adam): parameters updated per second by one node's CPUs
# (ZeRO-Offload, Ren et al. 2021, report ~1e9 params/s per node-class CPU for CPU-Adam).
CPU_ADAM_PARAMS_PER_S = 1.0e9
SHARDINGS = ("none", "zero1", "zero2", "zero3", "fsdp")


def ddp_exposed_seconds(grad_bytes: float, fabric: Fabric, backward_s: float,
                        bucket_bytes: float = DDP_BUCKET_BYTES, kind: str = "all_reduce") -> tuple[float, float]:
    """(total time of the bucketed collectives, the part not hidden behind backward).

    Buckets fill in reverse layer order while backward runs; bucket i is ready at (i+1)/B of the
    backward (gradients arrive about uniformly) and the buckets are reduced one after another.
    What runs past the end of backward is exposed: at least the last bucket.
    """
    if fabric.ranks <= 1 or grad_bytes <= 0:
        return 0.0, 0.0
    buckets = max(1, math.ceil(grad_bytes / bucket_bytes))
    per_bucket = fabric.seconds(grad_bytes / buckets, kind)
    end = 0.0
    for i in range(buckets):
        ready = backward_s * (i + 1) / buckets
        end = max(end, ready) + per_bucket
    return per_bucket * buckets, max(0.0, end - backward_s)


@dataclass(frozen=True)
class ZeroConfig:
    """How model state is sharded: DeepSpeed ZeRO stage (FSDP full-shard counts as stage 3) and offload."""

    stage: int = 0
    offload_optimizer: bool = False
    offload_param: bool = False
    fsdp: bool = False

    @classmethod
    def from_dict(cls, data: dict | None) -> "ZeroConfig":
        if not data:
            return cls()
        return cls(int(data.get("zero_stage") or 0), bool(data.get("offload_optimizer")),
                   bool(data.get("offload_param")))

    @classmethod
    def from_sharding(cls, sharding: str | None) -> "ZeroConfig":
        """From `measured.memory.sharding` ("none", "zero1", "zero2", "zero3", "fsdp")."""
        if sharding in (None, "none"):
            return cls()
        if sharding == "fsdp":
            return cls(3, fsdp=True)
        if sharding in ("zero1", "zero2", "zero3"):
            return cls(int(sharding[-1]))
        raise ValueError(f"unknown sharding {sharding!r}; use one of {', '.join(SHARDINGS)}")

    @property
    def active(self) -> bool:
        return self.stage >= 1 or self.offload_optimizer or self.offload_param

    def label(self) -> str:
        if self.fsdp:
            return "FSDP (full shard)"
        return f"ZeRO-{self.stage}" if self.stage else "none"


def zero_comm_seconds(zero: ZeroConfig, params: float, half_bytes: int, grad_bytes: int, fabric: Fabric,
                      forward_s: float, backward_s: float, host_link_bytes_per_s: float,
                      ) -> tuple[float, float, str]:
    """(total communication, exposed part, description) of one ZeRO/FSDP step on the target.

    - stage 1/2: gradients reduce-scattered during backward (overlapped like DDP buckets), then the
      updated parameters all-gathered after the optimizer step (exposed).
    - stage 3 / FSDP: parameters all-gathered in forward and again in backward (prefetched: hidden
      behind that phase's compute when shorter), gradients reduce-scattered in backward.
    - offload_optimizer: gradients go to the host and parameters come back over PCIe, and the update
      runs on the CPU; offload_param adds parameter fetches from the host in forward and backward.
    """
    ranks = fabric.ranks
    if ranks <= 1 and not (zero.offload_optimizer or zero.offload_param):
        return 0.0, 0.0, ""
    total = exposed = 0.0
    parts = []
    gbytes = params * grad_bytes
    pbytes = params * half_bytes
    if ranks > 1:
        if zero.stage >= 3:
            ag_fwd = fabric.seconds(pbytes, "all_gather", calls=max(1, math.ceil(pbytes / ZERO_BUCKET_BYTES)))
            ag_bwd = ag_fwd
            rs = fabric.seconds(gbytes, "reduce_scatter", calls=max(1, math.ceil(gbytes / ZERO_BUCKET_BYTES)))
            total += ag_fwd + ag_bwd + rs
            exposed += max(0.0, ag_fwd - forward_s) + max(0.0, ag_bwd + rs - backward_s)
            exposed += fabric.alpha_s * 2  # first prefetch of each phase cannot hide
            parts.append(f"{zero.label()}: all-gather fwd+bwd, reduce-scatter")
        else:
            rs_total, rs_exposed = ddp_exposed_seconds(gbytes, fabric, backward_s, bucket_bytes=ZERO_BUCKET_BYTES,
                                                       kind="reduce_scatter")
            ag = fabric.seconds(pbytes, "all_gather")
            total += rs_total + ag
            exposed += rs_exposed + ag
            parts.append(f"ZeRO-{max(zero.stage, 1)}: reduce-scatter grads, all-gather params")
    shard = params / max(ranks, 1)
    if zero.offload_optimizer:
        copies = shard * (grad_bytes + half_bytes) / host_link_bytes_per_s
        update = params / fabric.nodes / CPU_ADAM_PARAMS_PER_S  # each node's CPUs update its ranks' shards
        total += copies + update
        exposed += copies + update
        parts.append("optimizer on CPU")
    if zero.offload_param:
        fetch = 2 * shard * half_bytes / host_link_bytes_per_s
        total += fetch
        exposed += fetch * 0.5  # fetched with prefetch; half assumed hidden
        parts.append("parameters from CPU")
    return total, exposed, "; ".join(parts)
