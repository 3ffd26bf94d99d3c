"""Collectives over a whole target: one node (ring or NVLS) or several nodes (hierarchical).

Across nodes each GPU talks over its own NIC (rail-optimised nodes: one NIC per GPU) and NVLink
carries the rest inside the node; the stages are pipelined, so the slower one sets the pace:

    all-reduce of S bytes on N nodes x G GPUs (W = N G ranks):
        t = alpha + max( S / algbw_node(G) ,  f x S / (G x B_nic) )
        f = 2 (N-1)/N for N = 2 (NCCL's tree: the node's share crosses the network once each way),
            2 (W-1)/W for N > 2 (NCCL's ring over all ranks: bus bandwidth = G x B_nic)

with algbw_node the node's all-reduce bandwidth (`links.Link`), B_nic the per-GPU network bandwidth
(catalog `network_gbps_per_gpu`, or the target's ``@ 200G``) times `NETWORK_EFFICIENCY`.
Reduce-scatter and all-gather move half of each term.

`NETWORK_EFFICIENCY` = 0.92 is the large-message bus bandwidth of a public 1024-GPU H100 ring
(NVIDIA/nccl-tests issue #322, NCCL_ALGO=Ring: 367 GB/s on 8 x 400 Gb/s NDR per node, 367 / 400);
``benchmarks/projection_collectives.py`` checks the model on other public measurements of 2-64 GPUs
(NVIDIA/nccl-tests issue #309: 2, 4 and 8 H100 nodes; a GCP A3 Mega 2-node run; OpenXLA's tables).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from prenet_callbacks.projection.parallel.links import Link, node_link

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

    def p2p_seconds(self, nbytes: float) -> float:
        """One send of `nbytes` between two ranks (a pipeline stage boundary): over the network when the
        fabric spans nodes, else over the node's link at its two-rank bus bandwidth."""
        if nbytes <= 0:
            return 0.0
        if self.nodes > 1:
            return self.alpha_s + nbytes / self.net_bytes_per_s
        return self.intra.alpha_s + nbytes / self.intra.bus_bytes_per_s

    def seconds_per_byte(self, kind: str = "all_reduce") -> float:
        """Bandwidth term of one collective per byte of the full tensor (large-message limit)."""
        share = _SHARE[kind]
        g, n = self.gpus_per_node, self.nodes
        if n <= 1:
            if kind == "all_reduce":
                return 1.0 / self.intra.all_reduce_algbw(g)
            return share * (g - 1) / g / self.intra.bus_bytes_per_s
        if g <= 1:
            intra = 0.0
        elif kind == "all_reduce":
            intra = 1.0 / self.intra.all_reduce_algbw(g)
        else:
            intra = share * (g - 1) / g / self.intra.bus_bytes_per_s
        w = self.ranks
        crossing = (n - 1) / n if n == 2 else (w - 1) / w
        net = share * crossing / (g * self.net_bytes_per_s)
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
