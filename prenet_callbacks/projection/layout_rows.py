"""Rows of tensor/pipeline-parallel targets ("4x8 H100 tp=8 pp=4"): one rank's step, its collectives and the
pipeline schedule, memory per rank.

Per micro-batch each rank runs its share of the layers tensor-split (`layout_workload.rank_step`), priced as
any step (anchored or absolute device times, the host issuing kernels, `host.simulate`) per pipeline category.
A stage's time per micro-batch is its compute plus, on its critical path:

- tensor parallel collectives over the tp ranks (Megatron-LM's f/g operators): per layer two all-reduces of
  the activations (tokens x hidden) forward and two backward, two more forward under full recomputation;
  with sequence parallelism each is a reduce-scatter + all-gather of the same tensor. The embedding adds one
  forward, the LM head one backward and the vocabulary-parallel loss three of one value per token;
- the pipeline's point-to-point sends: the activation forward and its gradient backward, once per model
  chunk (v with the interleaved schedule), over NVLink inside a node, the network across; as Megatron-LM's
  scatter/gather sends them, each tp rank its 1/tp slice, all-gathered over the tp group on arrival.

The step is `pipeline.pipeline_time` over the stages, then the optimizer on the rank's parameters and the
data-parallel gradient all-reduce over the dp replicas (bucketed as DDP, overlapped with the last
micro-batch's backward; ZeRO/FSDP as `parallel.zero_comm_seconds`). Ranks are ordered as Megatron-LM orders
them (tp fastest, then dp, then pp): a tp group shares a node when tp <= GPUs per node, a dp group strides
over it, and consecutive stages sit tp x dp ranks apart.

Memory per rank: its stage's parameters, gradients and optimizer state (derived or the run's measured account,
scaled to the rank's share, ZeRO over dp) and activations from the published formulas (`pipeline.py`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from prenet_callbacks.projection.bands import regime_width, widen
from prenet_callbacks.projection.cost import run_cost
from prenet_callbacks.projection.fabric import Fabric, target_fabric
from prenet_callbacks.projection.host import HOST_ERROR, unit_host_seconds
from prenet_callbacks.projection.layout_workload import MicroBatches, RankStep, micro_batches, rank_step
from prenet_callbacks.projection.links import host_link_bytes_per_s
from prenet_callbacks.projection.memory import GIB, StateAccount, capacity_bytes, derived_account, fit_account, usable_gib
from prenet_callbacks.projection.model_layout import check_against_model
from prenet_callbacks.projection.optimizer_ops import default_implementation
from prenet_callbacks.projection.parallel import DDP_BUCKET_BYTES, ZeroConfig, ddp_exposed_seconds, zero_comm_seconds
from prenet_callbacks.projection.pipeline import (in_flight, layer_activation_bytes, pipeline_time, stage_layers)
from prenet_callbacks.projection.project import (
    COMM_ERROR,
    RunShape,
    assumed_for,
    current_forward_s,
    host_model,
    one_off_seconds,
    plain_rows,
    python_seconds,
    row_notes,
)
from prenet_callbacks.projection.scaling import device_times
from prenet_callbacks.projection.host import simulate
from prenet_callbacks.projection.workload import Workload
from prenet_callbacks.report_parts import TargetRow

LOSS_COLLECTIVES = 3   # vocabulary-parallel cross entropy: max, sum of exp, target logit (one value per token)


def layout_refusal(workload: Workload, target, convention: str) -> str | None:
    """Why the layout of `target` cannot run this workload's model (None: it can, or the model is no
    transformer and the target falls back to data parallelism)."""
    from prenet_callbacks.projection.layout_workload import model_shape

    layout = target.layout
    mb = micro_batches(workload, layout, convention)
    if isinstance(mb, str):
        return f"{target.label}: {mb}"
    shape, _ = model_shape(workload, mb.scale)
    if shape is None:
        return None
    reason = check_against_model(layout, heads=shape.heads, hidden=shape.hidden, layers=shape.layers)
    return f"{target.label}: {reason}" if reason else None


def layout_rows(workload: Workload, targets: list, predictor, shape: RunShape, *, current_total_s: float | None,
                batch_convention: str, zero: ZeroConfig, provider: str | None,
                notes: list[str] | None = None) -> list[dict[str, Any] | None]:
    """One row per layout target (None where the layout cannot run the model; `notes` gets why)."""
    hm = host_model(workload)
    context = _Context(workload, shape, predictor, batch_convention, zero, provider, hm,
                       one_off_seconds(workload, shape, current_total_s), current_forward_s(workload, hm),
                       current_total_s)
    out: list[dict[str, Any] | None] = []
    splits: dict = {}   # targets with the same tp, sp and micro-batch share one split of the step
    for target in targets:
        layout = target.layout
        mb = micro_batches(workload, layout, batch_convention)
        rank = mb if isinstance(mb, str) else rank_step(workload, layout, mb, predictor, splits)
        if isinstance(rank, str) and not isinstance(mb, str):
            out.append(_fallback_row(context, target, rank))
            continue
        refusal = mb if isinstance(mb, str) else check_against_model(
            layout, heads=rank.shape.heads, hidden=rank.shape.hidden, layers=rank.shape.layers)
        if refusal:
            out.append(None)
            if notes is not None:
                notes.append(f"not projected: {target.label}: {refusal}")
            continue
        out.append(_row(context, target, mb, rank))
    return out


@dataclass(frozen=True)
class _Context:
    workload: Workload
    shape: RunShape
    predictor: Any
    convention: str
    zero: ZeroConfig
    provider: str | None
    hm: Any
    one_off_s: float
    current_fwd_s: float | None
    current_total_s: float | None


def _fallback_row(ctx: _Context, target, reason: str) -> dict[str, Any]:
    """A model that is no recognisable transformer: every GPU a data-parallel replica, and the row says so."""
    plain = replace(target, layout=None)
    row = plain_rows(ctx.workload, [plain], ctx.predictor, ctx.shape, current_total_s=ctx.current_total_s,
                     batch_convention=ctx.convention, zero=ctx.zero, provider=ctx.provider)[0]
    row["label"] = target.label
    row["layout"] = {**target.layout.to_dict(), "applied": False, "reason": reason}
    row["notes"] = [f"{target.layout.text()} not applied: the model is not a recognisable transformer ({reason}); "
                    f"projected as data parallel over {target.count} GPUs"] + list(row["notes"])
    return row


@dataclass(frozen=True)
class _Fabrics:
    tp: Fabric
    dp: Fabric
    p2p: Fabric
    tp_nodes: int


def _fabrics(target) -> _Fabrics:
    """The links of each group, ranks ordered tp fastest, then dp, then pp (Megatron-LM's order)."""
    acc, layout, per_node, net = target.accelerator, target.layout, target.gpus_per_node, target.network_gbps
    tp_nodes = max(1, math.ceil(layout.tp / per_node))
    tp = target_fabric(acc, tp_nodes, min(layout.tp, per_node), net)
    dp_per_node = max(1, min(layout.dp, per_node // layout.tp)) if layout.tp < per_node else 1
    dp = target_fabric(acc, math.ceil(layout.dp / dp_per_node), dp_per_node, net)
    across = target.nodes > 1 and layout.tp * layout.dp >= per_node
    p2p = target_fabric(acc, 2, 1, net) if across else target_fabric(acc, 1, 2)
    return _Fabrics(tp, dp, p2p, tp_nodes)


def _simulated(rank: RankStep, host: np.ndarray, device: np.ndarray, kernels: np.ndarray,
               band: tuple[float, float]) -> np.ndarray:
    """Seconds per category (pre, layer, post, optimizer) x (as is, low, high): each category's units issued
    and run on their own (a stage runs a share of them)."""
    cols = []
    for low_high in ((1.0, 1.0), (1.0 - band[0], 1.0 - HOST_ERROR), (1.0 + band[0], 1.0 + HOST_ERROR)):
        for c in range(4):
            mask = (rank.category == c).astype(float)
            cols.append((host * mask * low_high[1], device * mask * low_high[0], kernels * mask))
    h, d, k = (np.stack([c[i] for c in cols], axis=1) for i in range(3))
    return simulate(h, d, k).reshape(3, 4)


def _row(ctx: _Context, target, mb: MicroBatches, rank: RankStep) -> dict[str, Any]:
    workload, layout, acc = rank.workload, target.layout, target.accelerator
    variant = workload.variant_for(acc, default_implementation(acc))
    times = device_times(workload, [acc], [variant], ctx.predictor)
    device, kernels = times.per_unit[:, 0], times.kernels[:, 0]
    phases = workload.phase_index()
    python = python_seconds(workload)
    host = unit_host_seconds(kernels, phases, workload.host_costs, workload.options, python) * ctx.hm.scale
    rel = float(times.relative_error[0])
    sim = _simulated(rank, host, device, kernels, (rel, HOST_ERROR))
    fabrics = _fabrics(target)
    comm = _Collectives(ctx.workload, rank, layout, fabrics)
    counts = stage_layers(rank.shape.layers, layout.pp)
    stages = [comm.stage_seconds(sim[0], s, n) for s, n in enumerate(counts)]
    pipe = pipeline_time([t for t, _ in stages], mb.count, layout.virtual_stages)
    bands = [pipeline_time([comm.stage_seconds(sim[i], s, n)[0] for s, n in enumerate(counts)], mb.count,
                           layout.virtual_stages).seconds for i in (1, 2)]
    comm.backward_share = _backward_share(rank, device, phases)
    backward = comm.backward_share * (stages[0][0] - stages[0][1])
    opt_s, dp_total, dp_exposed, dp_note = comm.data_parallel(sim[0][3], backward, acc, ctx.zero)
    overhead = _overhead(ctx.workload, mb, acc, ctx.hm)
    tp_pp_total = max(stages)[1] * mb.count   # the slowest stage's collectives and sends, every micro-batch
    step = overhead + pipe.seconds + opt_s + dp_exposed
    low = overhead + bands[0] + sim[1][3] + dp_exposed * (1 - COMM_ERROR) - COMM_ERROR * tp_pp_total
    high = overhead + bands[1] + sim[2][3] + dp_exposed * (1 + COMM_ERROR) + COMM_ERROR * tp_pp_total
    host_bound = float(host[rank.category < 3].sum()) > float(device[rank.category < 3].sum())
    width = regime_width(bool(workload.precision.half), times.method, acc, host_bound)
    low, high = widen(step, max(low, 0.0), high, width)
    return _assemble(ctx, target, mb, rank, variant, times, step, low, high, width, pipe, stages, comm,
                     (opt_s, dp_total, dp_exposed, dp_note), host_bound, kernels)


def _backward_share(rank: RankStep, device: np.ndarray, phases: np.ndarray) -> float:
    """Backward's share of a micro-batch's device time on the rank (what the gradient all-reduce hides behind)."""
    model = rank.category < 3
    total = float(device[model].sum())
    return float(device[model & (phases == 1)].sum()) / total if total > 0 else 0.5


def _overhead(workload: Workload, mb: MicroBatches, acc, hm) -> float:
    """Host time per step outside the kernels: data wait, the loop, the batch copy, once per micro-batch."""
    passes = mb.count / max(workload.accumulate, 1) * max(workload.micro_batches, 1e-12)
    return (workload.data_s * mb.scale * passes + workload.fixed_host_s * passes + hm.extra_fixed_s
            + workload.input_bytes * mb.scale * passes / host_link_bytes_per_s(acc))


class _Collectives:
    """The tp collectives and pp sends of each stage, and the dp step, of one layout target."""

    def __init__(self, whole: Workload, rank: RankStep, layout, fabrics: _Fabrics) -> None:
        self.whole, self.rank, self.layout, self.fabrics = whole, rank, layout, fabrics
        self.backward_share = 0.5      # set once the rank's device times are known
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
        # Megatron-LM's scatter/gather: each tp rank sends its 1/tp slice on its own link and the receiving
        # stage all-gathers the slices over its tp group (with sequence parallelism the slice is all it needs)
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

    def data_parallel(self, opt_s: float, backward_s: float, acc, zero: ZeroConfig) -> tuple[float, float, float, str]:
        """(optimizer seconds, dp communication, its exposed part, description) of the rank's step."""
        params = self.rank.workload.params
        precision = self.whole.precision
        fabric = self.fabrics.dp
        if zero.active:
            half = 2 if precision.half else precision.param_bytes
            total, exposed, note = zero_comm_seconds(zero, params, half, precision.grad_bytes, fabric, 0.0,
                                                     backward_s, host_link_bytes_per_s(acc))
            return opt_s / max(self.layout.dp, 1) if zero.stage >= 1 else opt_s, total, exposed, note
        if self.layout.dp <= 1:
            return opt_s, 0.0, 0.0, ""
        total, exposed = ddp_exposed_seconds(params * precision.grad_bytes, fabric, backward_s, DDP_BUCKET_BYTES)
        return opt_s, total, exposed, f"dp={self.layout.dp} gradient all-reduce, {fabric.describe()}"


def _memory(ctx: _Context, target, mb: MicroBatches, rank: RankStep, variant):
    """Per rank: the largest stage's state and the first stage's activations (published formulas)."""
    whole, layout, shape, acc = ctx.workload, target.layout, rank.shape, target.accelerator
    if not acc.memory_gb:
        return None, None
    share = rank.param_share
    if whole.state is not None and not ctx.zero.offload_optimizer:
        s = whole.state
        account = StateAccount(s.params_bytes * share, s.grads_bytes * share, s.optimizer_bytes * share, s.measured)
    else:
        account = derived_account(whole.params * share, whole.precision, whole.optimizer, ctx.zero)
    fused = shape.fused_attention and all(backend != "math" for _, backend in variant.attention)
    act_bytes = 2 if whole.precision.half else 4
    per_layer = layer_activation_bytes(seq=shape.seq, batch=shape.batch, hidden=shape.hidden, heads=shape.heads,
                                       tp=layout.tp, sp=layout.sp, recompute=whole.recompute, act_bytes=act_bytes,
                                       ffn_ratio=(shape.ffn / shape.hidden) if shape.ffn else 4.0,
                                       score_matrix=not fused)
    counts = stage_layers(shape.layers, layout.pp)
    head = shape.tokens * (shape.vocab or 0) / layout.tp * (act_bytes + 4)   # logits + fp32 log-probabilities
    first = per_layer * counts[0] * in_flight(layout.pp, mb.count, layout.virtual_stages)
    last = per_layer * counts[-1] + head if layout.pp > 1 else first + head
    activations = max(first, last)
    fit = fit_account(account, ctx.zero, layout.dp, activations, mb.size, acc.memory_gb)
    return fit, {"activations_gib": round(activations / GIB, 3), "per_layer_mib": round(per_layer / 2**20, 2),
                 "in_flight": round(in_flight(layout.pp, mb.count, layout.virtual_stages), 3),
                 "score_matrix": not fused, "recompute": whole.recompute}


def _assemble(ctx: _Context, target, mb: MicroBatches, rank: RankStep, variant, times, step: float, low: float,
              high: float, width: float, pipe, stages, comm: _Collectives, dp, host_bound: bool,
              kernels: np.ndarray) -> dict[str, Any]:
    whole, layout, acc, shape = ctx.workload, target.layout, target.accelerator, ctx.shape
    opt_s, dp_total, dp_exposed, dp_note = dp
    rel = float(times.relative_error[0])
    n = target.count
    steps_t = shape.steps * mb.steps_factor if shape.steps is not None else None
    total = total_low = total_high = None
    if steps_t is not None:
        validation = _validation(ctx, mb, stages, comm)
        total = ctx.one_off_s + shape.fixed_s + validation + steps_t * step
        total_low = ctx.one_off_s + shape.fixed_s + validation * (1 - rel) + steps_t * low
        total_high = ctx.one_off_s + shape.fixed_s + validation * (1 + rel) + steps_t * high
    cost = run_cost(acc, n, total, provider=ctx.provider, gpus_per_node=target.gpus_per_node)
    memory, memory_detail = _memory(ctx, target, mb, rank, variant)
    note, notes = row_notes(whole, target, cost, host_bound, float(kernels.sum()), memory, mb.size, False)
    notes = _layout_notes(target, mb, rank, pipe, comm) + notes
    work = step * mb.steps_factor
    speedup = (ctx.current_total_s / total if ctx.current_total_s and total
               else whole.measured_step_s / work if whole.measured_step_s else None)
    slowest_stage = max(range(len(stages)), key=lambda i: stages[i][0])
    tp_pp = stages[slowest_stage][1] * mb.count      # the slowest rank's collectives and sends, every micro-batch
    compute = [t - c for t, c in stages]
    slowest = compute[slowest_stage] * mb.count
    phases = {"forward": slowest * (1 - comm.backward_share), "backward": slowest * comm.backward_share,
              "optimizer": opt_s, "host": _overhead(whole, mb, acc, ctx.hm)}
    detail = {**layout.to_dict(), "applied": True, "microbatches": mb.count, "micro_batch_size": mb.size,
              "layers": rank.shape.layers, "stage_layers": stage_layers(rank.shape.layers, layout.pp),
              "stage_s": [round(t, 6) for t, _ in stages], "stage_compute_s": [round(c, 6) for c in compute],
              "bubble_s": round(pipe.bubble_s, 6), "bubble_share": round(pipe.bubble_share, 4),
              "tp_comm_s": round(tp_pp - comm.p2p * mb.count, 6), "pp_comm_s": round(comm.p2p * mb.count, 6),
              "dp_comm_s": round(dp_total, 6),
              "param_share": round(rank.param_share, 5), "unsplit_share": round(rank.unsplit_share, 4),
              "memory": memory_detail, "source": "target"}
    return TargetRow.projected(
        name=acc.name, label=target.label, devices=n, nodes=target.nodes, gpus_per_node=target.gpus_per_node,
        step_s=step, step_low_s=low, step_high_s=high, relative_error=rel, band_width=math.expm1(width),
        steps=None if steps_t is None else int(round(steps_t)), total_s=total, total_low_s=total_low,
        total_high_s=total_high, work_s=work, speedup=speedup, cost=cost, memory=memory,
        capacity_gib=round(capacity_bytes(acc.memory_gb) / GIB, 2) if acc.memory_gb else None,
        usable_gib=round(usable_gib(acc.memory_gb), 2) if acc.memory_gb else None,
        batch_per_device=mb.size, accumulate=mb.count, batch_convention=ctx.convention,
        method=f"{times.method} + tp/pp + collective model", phases_s=phases,
        comm_s=tp_pp + dp_total, comm_exposed_s=tp_pp + dp_exposed,
        communication="; ".join(x for x in (_tp_text(layout, comm), dp_note) if x),
        host_bound=host_bound, unmodelled_share=float(times.unmodelled_share[0]),
        precision=whole.precision.name, precision_note=note,
        assumed=assumed_for(whole, variant, acc, ctx.zero, target, ctx.hm), notes=notes, layout=detail,
    ).to_dict() | {"global_batch": int(mb.samples_per_step) if mb.samples_per_step else None}


def _tp_text(layout, comm: _Collectives) -> str:
    parts = []
    if layout.tp > 1:
        kind = "reduce-scatter + all-gather" if layout.sp else "all-reduce"
        parts.append(f"tp={layout.tp} {kind} per layer, {comm.fabrics.tp.describe()}")
    if layout.pp > 1:
        parts.append(f"pp={layout.pp} sends, {comm.fabrics.p2p.describe()}")
    return "; ".join(parts)


def _layout_notes(target, mb: MicroBatches, rank: RankStep, pipe, comm: _Collectives) -> list[str]:
    layout = target.layout
    notes = []
    if layout.pp > 1 and mb.count < layout.pp:
        notes.append(f"{mb.count} micro-batch(es) for {layout.pp} pipeline stages: the pipeline idles "
                     f"{pipe.bubble_share:.0%} of the step; name microbatches= (e.g. {4 * layout.pp})")
    if comm.fabrics.tp_nodes > 1:
        notes.append(f"tp={layout.tp} spans {comm.fabrics.tp_nodes} nodes: its all-reduces cross the network")
    if rank.unsplit_share > 0.01:
        notes.append(f"{rank.unsplit_share:.0%} of the GEMM FLOPs could not be split (kept whole on every rank)")
    return notes


def _validation(ctx: _Context, mb: MicroBatches, stages, comm: _Collectives) -> float:
    """The run's validation on the target: forward only through the pipeline, per sample, over dp replicas."""
    if not ctx.shape.validation_s:
        return 0.0
    replicas = ctx.workload.world / comm.layout.dp
    current = ctx.current_fwd_s
    if not current:
        return ctx.shape.validation_s * replicas
    # the pipeline's throughput: its slowest stage's forward per micro-batch
    per_sample = max(t - c for t, c in stages) * (1 - comm.backward_share) / max(mb.size or 1, 1)
    run_samples = (ctx.workload.batch_size or 1) * max(ctx.workload.accumulate, 1)
    return ctx.shape.validation_s * (per_sample / (current / run_samples)) * replicas
