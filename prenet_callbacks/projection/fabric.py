"""Collectives over a whole target: one node (ring or NVLS) or several nodes (hierarchical).

Across nodes NCCL reduce-scatters inside each node over NVLink, all-reduces each GPU's 1/G shard
between nodes over that GPU's own NIC (rail-optimised nodes: one NIC per GPU), and all-gathers inside
the node again; the stages are pipelined, so the slower stage sets the pace:

    all-reduce of S bytes on N nodes x G GPUs:
        t = alpha + max( 2 (G-1)/G x S / busbw_node ,  2 (N-1)/N x S / (G x B_nic) )

with B_nic the per-GPU network bandwidth (catalog `network_gbps_per_gpu`, or the target's
``@ 200G``) times `NETWORK_EFFICIENCY`. Reduce-scatter and all-gather move half of each term.

`NETWORK_EFFICIENCY` = 0.92 is the large-message bus bandwidth of a public 1024-GPU H100 ring
(NVIDIA/nccl-tests issue #322: 367 GB/s on 8 x 400 Gb/s NDR per node, 367 / 400); the collective
benchmark (``benchmarks/projection_collectives.py``) checks the whole model on other measurements.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from prenet_callbacks.projection.links import Link, node_link

NETWORK_EFFICIENCY = 0.92
NETWORK_ALPHA_S = 10e-6   # per tree level and direction between nodes (InfiniBand, a few us per hop)
_SHARE = {"all_reduce": 2.0, "reduce_scatter": 1.0, "all_gather": 1.0}


@dataclass(frozen=True)
class Fabric:
    """The ranks of a target: `nodes` x `gpus_per_node`, the node's `intra` link, the per-GPU network."""

    intra: Link
    nodes: int = 1
    gpus_per_node: int = 1
    net_bytes_per_s: float = 0.0    # effective per-GPU NIC bandwidth, one way (0: single node)

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def alpha_s(self) -> float:
        """Latency of one collective call."""
        if self.nodes <= 1:
            return self.intra.alpha_s
        return self.intra.alpha_s + 2 * math.ceil(math.log2(self.nodes)) * NETWORK_ALPHA_S

    def seconds(self, nbytes: float, kind: str = "all_reduce", calls: int = 1) -> float:
        """Time of `calls` collectives moving `nbytes` in total (the full tensor size, as NCCL counts it)."""
        if self.ranks <= 1 or nbytes <= 0:
            return 0.0
        return calls * self.alpha_s + nbytes * self.seconds_per_byte(kind)

    def seconds_per_byte(self, kind: str = "all_reduce") -> float:
        """Bandwidth term of one collective per byte of the full tensor (large-message limit)."""
        share = _SHARE[kind]
        g, n = self.gpus_per_node, self.nodes
        if n <= 1:
            if kind == "all_reduce":
                return 1.0 / self.intra.all_reduce_algbw(g)
            return share * (g - 1) / g / self.intra.bus_bytes_per_s
        intra = share * (g - 1) / g / self.intra.bus_bytes_per_s if g > 1 else 0.0
        net = share * (n - 1) / n / (g * self.net_bytes_per_s)
        return max(intra, net)

    def bus_bandwidth(self, kind: str = "all_reduce") -> float:
        """NCCL-tests bus bandwidth (B/s) this model gives for large messages of `kind`."""
        w = self.ranks
        factor = (2.0 if kind == "all_reduce" else 1.0) * (w - 1) / w
        return factor / self.seconds_per_byte(kind)

    def describe(self) -> str:
        text = self.intra.describe()
        if self.nodes > 1:
            text += (f"; {self.nodes} nodes over {self.net_bytes_per_s * 8 / 1e9 / NETWORK_EFFICIENCY:.0f} Gb/s "
                     "per GPU (hierarchical)")
        return text


def target_fabric(accelerator, nodes: int = 1, gpus_per_node: int = 1, network_gbps: float | None = None) -> Fabric:
    """The `Fabric` of `nodes` x `gpus_per_node` such GPUs (`network_gbps` per GPU between nodes)."""
    intra = node_link(accelerator, gpus_per_node)
    net = 0.0
    if nodes > 1:
        gbps = network_gbps or getattr(accelerator, "network_gbps_per_gpu", None)
        if not gbps:
            raise ValueError(f"no scale-out network known for {accelerator.name}: give one, e.g. "
                             f"'{nodes}x{gpus_per_node} {accelerator.name} @ 100G'")
        net = gbps * 1e9 / 8 * NETWORK_EFFICIENCY
    return Fabric(intra, nodes, gpus_per_node, net)
