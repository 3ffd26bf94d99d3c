"""The collectives and sends of a tensor/pipeline-parallel target, on the fabric its ranks sit on.

Ranks are ordered as Megatron-LM orders them (tp fastest, then dp, then pp): a tp group shares a node when
tp <= GPUs per node (a larger one crosses nodes), a dp group strides over the node, consecutive pipeline stages
sit tp x dp ranks apart (over the network when that is a node or more). Per micro-batch and stage, on its
critical path:

- tensor parallel (Megatron-LM's f/g operators): per layer two all-reduces of the activations (tokens x hidden)
  forward and two backward, two more forward under full recomputation; with sequence parallelism each is a
  reduce-scatter + all-gather of the same tensor. The embedding adds one forward, the LM head one backward and
  the vocabulary-parallel loss three of one value per token;
- pipeline sends: the activation forward and its gradient backward, once per model chunk (v with the
  interleaved schedule), as Megatron-LM's scatter/gather sends them: each tp rank its 1/tp slice, all-gathered
  over the tp group on arrival (with sequence parallelism the slice is all the next stage needs).

Per step: the data-parallel gradient all-reduce over the dp replicas (bucketed as DDP, overlapped with the last
micro-batch's backward) or ZeRO/FSDP's collectives (`data_parallel.zero_comm_seconds`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prenet_callbacks.projection.parallel.fabric import Fabric, target_fabric
from prenet_callbacks.projection.parallel.layout_workload import RankStep
from prenet_callbacks.projection.parallel.links import host_link_bytes_per_s
from prenet_callbacks.projection.parallel.data_parallel import DDP_BUCKET_BYTES, ZeroConfig, ddp_exposed_seconds, zero_comm_seconds
from prenet_callbacks.projection.ops.workload import Workload

LOSS_COLLECTIVES = 3   # vocabulary-parallel cross entropy: max, sum of exp, target logit (one value per token)


@dataclass(frozen=True)
class Fabrics:
    """The fabric of a tp group, of a dp group and of one pipeline send; over how many nodes tp spans."""

    tp: Fabric
    dp: Fabric
    p2p: Fabric
    tp_nodes: int


def layout_fabrics(target) -> Fabrics:
    """The links of each group, ranks ordered tp fastest, then dp, then pp (Megatron-LM's order)."""
    acc, layout, per_node, net = target.accelerator, target.layout, target.gpus_per_node, target.network_gbps
    tp_nodes = max(1, math.ceil(layout.tp / per_node))
    tp = target_fabric(acc, tp_nodes, min(layout.tp, per_node), net)
    dp_per_node = max(1, min(layout.dp, per_node // layout.tp)) if layout.tp < per_node else 1
    dp = target_fabric(acc, math.ceil(layout.dp / dp_per_node), dp_per_node, net)
    across = target.nodes > 1 and layout.tp * layout.dp >= per_node
    p2p = target_fabric(acc, 2, 1, net) if across else target_fabric(acc, 1, 2)
    return Fabrics(tp, dp, p2p, tp_nodes)


class Collectives:
    """The tp collectives and pp sends of each stage, and the dp step, of one layout target."""

    def __init__(self, whole: Workload, rank: RankStep, layout, fabrics: Fabrics) -> None:
        self.whole, self.rank, self.layout, self.fabrics = whole, rank, layout, fabrics
        shape = rank.shape
        self.act_bytes = 2 if whole.precision.half else 4
        tensor = shape.tokens * shape.hidden * self.act_bytes
        tp = fabrics.tp
        if layout.tp > 1:
            self.one = (tp.seconds(tensor, "all_gather") + tp.seconds(tensor, "reduce_scatter") if layout.sp
                        else tp.seconds(tensor, "all_reduce"))
            loss = tp.seconds(shape.tokens * 4.0, "all_reduce", calls=LOSS_COLLECTIVES)
        else:
            self.one, loss = 0.0, 0.0
        per_layer = 4 + (2 if whole.recompute == "full" else 0)
        self.tp_layer = per_layer * self.one
        self.tp_first = self.one                      # embedding's all-reduce (vocabulary parallel)
        self.tp_last = self.one + loss                # LM head input gradient, the loss
        gather = tp.seconds(tensor, "all_gather") if layout.tp > 1 and not layout.sp else 0.0
        one_send = fabrics.p2p.p2p_seconds(tensor / layout.tp) + gather
        self.p2p = 2 * layout.virtual_stages * one_send if layout.pp > 1 else 0.0

    def stage_seconds(self, sim: np.ndarray, stage: int, layers: int) -> tuple[float, float]:
        """(forward + backward of one micro-batch on `stage`, of which collectives and sends)."""
        last = stage == self.layout.pp - 1
        total_layers = self.rank.shape.layers
        compute = (sim[0] if stage == 0 else 0.0) + sim[1] * layers / total_layers + (sim[2] if last else 0.0)
        comm = (self.tp_layer * layers + (self.tp_first if stage == 0 else 0.0) + (self.tp_last if last else 0.0)
                + self.p2p)
        return float(compute + comm), float(comm)

    def data_parallel(self, opt_s: float, forward_s: float, backward_s: float, acc,
                      zero: ZeroConfig) -> tuple[float, float, float, str]:
        """(optimizer seconds, dp communication, its exposed part, description) of the rank's step; `forward_s`
        and `backward_s`: the last micro-batch's, what ZeRO's gathers and DDP's buckets can hide behind."""
        params = self.rank.workload.params
        precision = self.whole.precision
        fabric = self.fabrics.dp
        if zero.active:
            half = 2 if precision.half else precision.param_bytes
            total, exposed, note = zero_comm_seconds(zero, params, half, precision.grad_bytes, fabric, forward_s,
                                                     backward_s, host_link_bytes_per_s(acc))
            return opt_s / max(self.layout.dp, 1) if zero.stage >= 1 else opt_s, total, exposed, note
        if self.layout.dp <= 1:
            return opt_s, 0.0, 0.0, ""
        total, exposed = ddp_exposed_seconds(params * precision.grad_bytes, fabric, backward_s, DDP_BUCKET_BYTES)
        return opt_s, total, exposed, f"dp={self.layout.dp} gradient all-reduce, {fabric.describe()}"

    def describe(self) -> str:
        """The tp and pp part of the row's ``communication``."""
        layout, parts = self.layout, []
        if layout.tp > 1:
            kind = "reduce-scatter + all-gather" if layout.sp else "all-reduce"
            parts.append(f"tp={layout.tp} {kind} per layer, {self.fabrics.tp.describe()}")
        if layout.pp > 1:
            parts.append(f"pp={layout.pp} sends, {self.fabrics.p2p.describe()}")
        return "; ".join(parts)
