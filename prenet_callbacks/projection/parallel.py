"""Data-parallel communication inside one node: ring collectives, DDP buckets, overlap, ZeRO.

Ring all-reduce of S bytes over N ranks moves ``2 (N-1)/N x S`` per rank (reduce-scatter and
all-gather each ``(N-1)/N x S``); its time is ``alpha + moved / bus_bandwidth``.

Constants derived from Vidur's NCCL all-reduce measurements (``../shared/data/vidur/data/profiling/
network/{a100,h100}_{dgx,pairwise_nvlink}/all_reduce.csv``, 1-64 MiB, least squares on
``t = alpha + 2(N-1)/N x S / busbw``):

- H100 SXM (NVLink4 + NVSwitch), N=2/4/8: busbw 299/345/370 GB/s, alpha 22-37 us: ~0.79 of the
  450 GB/s one-way NVLink bandwidth at N >= 4.
- A100 SXM (NVLink3 + NVSwitch), N=2/4/8: busbw 171/186/186 GB/s, alpha 45-81 us: ~0.62 of 300 GB/s.
- PCIe cards with pairwise NVLink bridges, N=4 (rings cross PCIe): A100 24 GB/s (Gen4: 0.74 of
  32 GB/s one-way), H100 50 GB/s (Gen5: 0.78 of 64 GB/s).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# Share of the one-way link bandwidth NCCL reaches as bus bandwidth (see module docstring).
_NVLINK_EFFICIENCY = {3: 0.62, 4: 0.79, 5: 0.79}
_DEFAULT_NVLINK_EFFICIENCY = 0.7
_PCIE_EFFICIENCY = 0.75
_PCIE_ONE_WAY_GBS = {3: 15.75, 4: 31.5, 5: 63.0, 6: 126.0}
_NVLINK_TOTAL_GBS = {1: 160.0, 2: 300.0, 3: 600.0, 4: 900.0, 5: 1800.0}  # bidirectional per GPU
ALPHA_NVSWITCH_S = 30e-6   # per collective call (H100 fit 22-37 us)
ALPHA_OTHER_S = 60e-6      # A100 NVSwitch 45-81 us, PCIe rings similar
DDP_BUCKET_BYTES = 25 * 2**20  # torch DDP bucket_cap_mb default
ZERO_BUCKET_BYTES = 5e8 * 2    # DeepSpeed reduce_bucket_size default (5e8 elements, fp16)


@dataclass(frozen=True)
class Link:
    """How ranks of one node talk: bus bandwidth (B/s) reachable by a ring, latency per call."""

    bus_bytes_per_s: float
    alpha_s: float
    kind: str  # "nvlink" | "pcie"

    def describe(self) -> str:
        return f"{self.kind} ring ~{self.bus_bytes_per_s / 1e9:.0f} GB/s"


def _pcie_gen(accelerator) -> int:
    gen = getattr(accelerator, "pcie_gen", None)
    if gen:
        return int(gen)
    text = (getattr(accelerator, "interconnect", "") or "").lower()
    for g in (6, 5, 4, 3):
        if f"gen{g}" in text.replace(" ", ""):
            return g
    return 3


def _nvlink_gen(text: str) -> int | None:
    text = text.lower().replace(" ", "")
    for g in (5, 4, 3, 2, 1):
        if f"nvlink{g}" in text:
            return g
    return None


def node_link(accelerator, count: int) -> Link:
    """The ring link of `count` such GPUs in one node (NVLink with a switch, a bridge pair, or PCIe)."""
    text = accelerator.interconnect or ""
    lower = text.lower()
    bridge_pairs_only = "bridge" in lower and ("2 gpus" in lower or "pcie" in lower)
    if "optional" in lower:  # an optional bridge may not be there: assume PCIe
        lower = lower.replace("nvlink", "")
    gen = _nvlink_gen(text)
    total = accelerator.interconnect_bandwidth_gbs
    if gen is not None and total is None:
        total = _NVLINK_TOTAL_GBS.get(gen)
    nvlink = ("nvlink" in lower and "no nvlink" not in lower and "c2c" not in lower and total
              and (not bridge_pairs_only or count <= 2))
    if nvlink:
        efficiency = _NVLINK_EFFICIENCY.get(gen or 0, _DEFAULT_NVLINK_EFFICIENCY)
        alpha = ALPHA_NVSWITCH_S if (gen or 0) >= 4 else ALPHA_OTHER_S
        return Link(total / 2 * 1e9 * efficiency, alpha, "nvlink")
    if "infinity fabric" in lower or "xgmi" in lower or "ici" in lower:
        # AMD xGMI / TPU ICI without a published per-GPU figure: assume PCIe-class rings, conservatively
        gbs = (total / 2 * _DEFAULT_NVLINK_EFFICIENCY) if total else _PCIE_ONE_WAY_GBS[4] * _PCIE_EFFICIENCY
        return Link(gbs * 1e9, ALPHA_OTHER_S, "fabric")
    one_way = _PCIE_ONE_WAY_GBS.get(_pcie_gen(accelerator), 15.75)
    return Link(one_way * _PCIE_EFFICIENCY * 1e9, ALPHA_OTHER_S, "pcie")


def ring_seconds(nbytes: float, ranks: int, link: Link, *, kind: str = "all_reduce", calls: int = 1) -> float:
    """Time of a ring collective over `ranks` moving `nbytes` in total, in `calls` launches."""
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    factor = {"all_reduce": 2.0, "reduce_scatter": 1.0, "all_gather": 1.0}[kind] * (ranks - 1) / ranks
    return calls * link.alpha_s + factor * nbytes / link.bus_bytes_per_s


def ddp_exposed_seconds(grad_bytes: float, ranks: int, link: Link, backward_s: float,
                        bucket_bytes: float = DDP_BUCKET_BYTES) -> tuple[float, float]:
    """(total all-reduce time, the part not hidden behind backward) for DDP's bucketed all-reduce.

    Buckets fill in reverse layer order while backward runs; bucket i is ready at (i+1)/B of the
    backward (gradients arrive about uniformly) and the buckets are reduced one after another.
    What runs past the end of backward is exposed: at least the last bucket.
    """
    if ranks <= 1 or grad_bytes <= 0:
        return 0.0, 0.0
    buckets = max(1, math.ceil(grad_bytes / bucket_bytes))
    per_bucket = ring_seconds(grad_bytes / buckets, ranks, link)
    end = 0.0
    for i in range(buckets):
        ready = backward_s * (i + 1) / buckets
        end = max(end, ready) + per_bucket
    return per_bucket * buckets, max(0.0, end - backward_s)


@dataclass(frozen=True)
class ZeroConfig:
    """DeepSpeed ZeRO settings, as the DeepSpeed adapter writes them into ``report.current``."""

    stage: int = 0
    offload_optimizer: bool = False
    offload_param: bool = False

    @classmethod
    def from_dict(cls, data: dict | None) -> "ZeroConfig":
        if not data:
            return cls()
        return cls(int(data.get("zero_stage") or 0), bool(data.get("offload_optimizer")),
                   bool(data.get("offload_param")))


# Host-side optimizer (DeepSpeed CPU-Adam): parameters updated per second by one node's CPUs
# (ZeRO-Offload, Ren et al. 2021, report ~1e9 params/s per node-class CPU for CPU-Adam).
CPU_ADAM_PARAMS_PER_S = 1.0e9


def zero_comm_seconds(zero: ZeroConfig, params: float, half_bytes: int, grad_bytes: int, ranks: int,
                      link: Link, forward_s: float, backward_s: float, host_link_bytes_per_s: float,
                      ) -> tuple[float, float, str]:
    """(total communication, exposed part, description) of one ZeRO step on `ranks` GPUs.

    - stage 1/2: gradients reduce-scattered during backward (overlapped like DDP buckets), then the
      updated fp16 parameters all-gathered after the optimizer step (exposed).
    - stage 3: parameters all-gathered in forward and again in backward (prefetched: hidden behind
      that phase's compute when shorter), gradients reduce-scattered in backward.
    - offload_optimizer: gradients go to the host and parameters come back over PCIe, and the update
      runs on the CPU; offload_param adds parameter fetches from the host in forward and backward.
    """
    if ranks <= 1 and not (zero.offload_optimizer or zero.offload_param):
        return 0.0, 0.0, ""
    total = exposed = 0.0
    parts = []
    gbytes = params * grad_bytes
    pbytes = params * half_bytes
    if ranks > 1:
        if zero.stage >= 3:
            ag_fwd = ring_seconds(pbytes, ranks, link, kind="all_gather",
                                  calls=max(1, math.ceil(pbytes / ZERO_BUCKET_BYTES)))
            ag_bwd = ag_fwd
            rs = ring_seconds(gbytes, ranks, link, kind="reduce_scatter",
                              calls=max(1, math.ceil(gbytes / ZERO_BUCKET_BYTES)))
            total += ag_fwd + ag_bwd + rs
            exposed += max(0.0, ag_fwd - forward_s) + max(0.0, ag_bwd + rs - backward_s)
            exposed += link.alpha_s * 2  # first prefetch of each phase cannot hide
            parts.append("ZeRO-3: all-gather fwd+bwd, reduce-scatter")
        else:
            rs_total, rs_exposed = ddp_exposed_seconds(gbytes, ranks, link, backward_s,
                                                       bucket_bytes=ZERO_BUCKET_BYTES)
            rs_total /= 2  # a reduce-scatter moves half an all-reduce
            rs_exposed = min(rs_exposed, rs_total)
            ag = ring_seconds(pbytes, ranks, link, kind="all_gather")
            total += rs_total + ag
            exposed += rs_exposed + ag
            parts.append(f"ZeRO-{max(zero.stage, 1)}: reduce-scatter grads, all-gather params")
    shard = params / max(ranks, 1)
    if zero.offload_optimizer:
        copies = shard * (grad_bytes + half_bytes) / host_link_bytes_per_s
        update = params / CPU_ADAM_PARAMS_PER_S  # the node's CPUs update every rank's shard
        total += copies + update
        exposed += copies + update
        parts.append("optimizer on CPU")
    if zero.offload_param:
        fetch = 2 * shard * half_bytes / host_link_bytes_per_s
        total += fetch
        exposed += fetch * 0.5  # fetched with prefetch; half assumed hidden
        parts.append("parameters from CPU")
    return total, exposed, "; ".join(parts)


def host_link_bytes_per_s(accelerator) -> float:
    """Host-device copy bandwidth (one way) of the GPU's PCIe link."""
    return _PCIE_ONE_WAY_GBS.get(_pcie_gen(accelerator), 15.75) * _PCIE_EFFICIENCY * 1e9
