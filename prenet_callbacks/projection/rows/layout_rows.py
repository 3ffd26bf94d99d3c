"""Rows of tensor/pipeline-parallel targets ("4x8 H100 tp=8 pp=4"): one rank's step, the pipeline schedule,
memory per rank.

Per micro-batch each rank runs its share of the layers tensor-split (`layout_workload.rank_step`), priced as any
step (anchored or absolute device times, the host issuing kernels, `host.simulate`) per pipeline category; a
stage's time per micro-batch is its layers' share of that plus its collectives and sends (`layout_comm.py`).
The step is `pipeline.pipeline_time` over the stages, then the optimizer on the rank's parameters and the
data-parallel part. Memory per rank: the largest stage's parameters, gradients and optimizer state (derived, or
the run's measured account scaled to the rank's share; ZeRO over dp) and activations from the published
formulas (`pipeline.layer_activation_bytes`). See docs/model-parallel.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from prenet_callbacks.projection.rows.bands import regime_width, widen
from prenet_callbacks.projection.rows.cost import run_cost
from prenet_callbacks.projection.pricing.host import HOST_ERROR, simulate_groups, unit_host_seconds
from prenet_callbacks.projection.parallel.layout_comm import Collectives, layout_fabrics
from prenet_callbacks.projection.parallel.layout_workload import MicroBatches, RankStep, micro_batches, model_shape, rank_step
from prenet_callbacks.projection.parallel.links import host_link_bytes_per_s
from prenet_callbacks.projection.rows.memory import GIB, StateAccount, capacity_bytes, derived_account, fit_account, usable_gib
from prenet_callbacks.projection.parallel.model_layout import check_against_model
from prenet_callbacks.projection.ops.optimizer_ops import default_implementation
from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig
from prenet_callbacks.projection.parallel.pipeline import PipelineTime, in_flight, layer_activation_bytes, pipeline_time, stage_layers
from prenet_callbacks.projection.rows.row_parts import (
    COMM_ERROR,
    RunShape,
    assumed_for,
    current_forward_s,
    host_model,
    measured_once_s,
    row_one_off_s,
    python_seconds,
    row_notes,
)
from prenet_callbacks.projection.pricing.scaling import DeviceTimes, PriceMemo, device_times
from prenet_callbacks.projection.ops.workload import Workload
from prenet_callbacks.report_parts import TargetRow


def _refusal(target, mb: MicroBatches | str, shape) -> str | None:
    """Why `target`'s layout cannot run the model of this shape (None: it can, or there is no transformer)."""
    if isinstance(mb, str):
        return f"{target.label}: {mb}"
    layout = target.layout
    reason = shape and check_against_model(layout, heads=shape.heads, hidden=shape.hidden, layers=shape.layers)
    return f"{target.label}: {reason}" if reason else None


def layout_refusal(workload: Workload, target, convention: str, shapes: dict | None = None) -> str | None:
    """Why the layout of `target` cannot run this workload's model (None: it can, or the model is no
    transformer and the target falls back to data parallelism). ``shapes``: model shapes by micro-batch scale,
    shared by the calls of one check."""
    mb = micro_batches(workload, target.layout, convention)
    if isinstance(mb, str):
        return _refusal(target, mb, None)
    shapes = {} if shapes is None else shapes
    if mb.scale not in shapes:
        shapes[mb.scale] = model_shape(workload, mb.scale)[0]
    return _refusal(target, mb, shapes[mb.scale])


def check_layouts(workload: Workload, targets, convention: str) -> None:
    """Refuse tensor/pipeline layouts this model cannot run (tp not dividing its heads or hidden size, more
    stages than layers, micro-batches that do not divide the batch): ValueError naming each target and why."""
    shapes: dict[float, object] = {}   # one shape per micro-batch size: the targets' layouts share it
    reasons = [reason for target in targets if target.layout is not None
               for reason in [layout_refusal(workload, target, convention, shapes)] if reason]
    if reasons:
        raise ValueError("targets: " + "; ".join(reasons) + " (choose degrees the model's shape allows)")


def layout_rows(workload: Workload, targets: list, predictor, shape: RunShape, *, current_total_s: float | None,
                batch_convention: str, zero: ZeroConfig, provider: str | None,
                plain_row: Callable[[Any], dict[str, Any]], notes: list[str] | None = None,
                memo: PriceMemo | None = None) -> list[dict[str, Any] | None]:
    """One row per layout target (None where the layout cannot run the model; `notes` gets why). `plain_row`:
    the row of a target without its layout (every GPU a replica), for a model that is no transformer."""
    hm = host_model(workload)
    context = _Context(workload, shape, predictor, batch_convention, zero, provider, hm,
                       measured_once_s(workload, shape, current_total_s), current_forward_s(workload, hm),
                       current_total_s)
    out: list[dict[str, Any] | None] = []
    splits: dict = {}   # targets with the same tp, sp and micro-batch share one split of the step
    memo = memo or PriceMemo()  # and every spec is priced once on each GPU, whichever rank (or plain row) it is in
    runnable = []
    for target in targets:
        mb = micro_batches(workload, target.layout, batch_convention)
        rank = mb if isinstance(mb, str) else rank_step(workload, target.layout, mb, predictor, splits, memo)
        if isinstance(rank, str) and not isinstance(mb, str):
            out.append(_fallback_row(plain_row, target, rank))
            continue
        refusal = _refusal(target, mb, None if isinstance(rank, str) else rank.shape)
        out.append(None)
        if refusal:
            if notes is not None:
                notes.append(f"not projected: {refusal}")
            continue
        runnable.append((len(out) - 1, target, mb, rank))
    for index, target, mb, rank, variant, times in _priced_together(runnable, predictor, memo):
        out[index] = _row(context, target, mb, rank, variant, times)
    return out


def _priced_together(runnable: list, predictor, memo: PriceMemo) -> list:
    """Each target's device times, the targets that share a split of the step priced in one call (as plain rows
    price every device at once): ``(index, target, micro-batches, rank step, variant, its DeviceTimes)``."""
    groups: dict[int, list] = {}
    for entry in runnable:
        groups.setdefault(id(entry[3].workload), []).append(entry)
    planned, specs, devices = [], [], []
    for members in groups.values():
        workload = members[0][3].workload
        accelerators = [target.accelerator for _, target, _, _ in members]
        variants = [workload.variant_for(acc, default_implementation(acc)) for acc in accelerators]
        planned.append((members, workload, accelerators, variants))
        specs += _specs_priced(workload, variants)
        devices += accelerators + ([workload.anchor] if workload.anchor is not None else [])
    # the groups' new specs (each split's) priced in one predictor call: a call has a fixed cost of its own
    memo.prefetch(predictor, specs, devices)
    priced = []
    for members, workload, accelerators, variants in planned:
        times = device_times(workload, accelerators, variants, predictor, memo)
        priced += [(index, target, mb, rank, variants[j], times.column(j))
                   for j, (index, target, mb, rank) in enumerate(members)]
    return priced


def _specs_priced(workload: Workload, variants: list) -> list:
    """The specs `device_times` prices for these variants of the workload (its own, and the anchor's)."""
    flats = {id(flat): flat for flat in [workload.flat_for(v) for v in variants] + [workload.measured_flat()]}
    return [spec for flat in flats.values() for spec in flat.specs]


@dataclass(frozen=True)
class _Context:
    workload: Workload
    shape: RunShape
    predictor: Any
    convention: str
    zero: ZeroConfig
    provider: str | None
    hm: Any
    measured_once_s: float     # the measured run's one-off time (`row_parts.row_one_off_s` decides per row)
    current_fwd_s: float | None
    current_total_s: float | None


@dataclass(frozen=True)
class _Priced:
    """One layout target's step: its parts and its band."""

    step: float
    low: float
    high: float
    width: float                       # the regime's band floor (`bands.regime_width`)
    pipe: PipelineTime
    stages: list[tuple[float, float]]  # per stage and micro-batch: (time, of which collectives and sends)
    backward_share: float
    optimizer_s: float
    dp: tuple[float, float, str]       # data-parallel communication, its exposed part, its description
    host_bound: bool

    @property
    def slowest(self) -> int:
        return max(range(len(self.stages)), key=lambda i: self.stages[i][0])


def _fallback_row(plain_row: Callable[[Any], dict[str, Any]], target, reason: str) -> dict[str, Any]:
    """A model that is no recognisable transformer: every GPU a data-parallel replica, and the row says so."""
    row = plain_row(replace(target, layout=None))
    row["label"] = target.label
    row["layout"] = {**target.layout.to_dict(), "applied": False, "reason": reason}
    row["notes"] = [f"{target.layout.text()} not applied: the model is not a recognisable transformer ({reason}); "
                    f"projected as data parallel over {target.count} GPUs"] + list(row["notes"])
    return row


def _simulated(rank: RankStep, host: np.ndarray, device: np.ndarray, kernels: np.ndarray, rel: float) -> np.ndarray:
    """Seconds per band edge (as is, low, high) x category (pre, layer, post, optimizer): each category's units
    issued and run on their own (a stage runs a share of them); the band moves device time by the predictor's
    error and host time by `HOST_ERROR`."""
    host_factors = np.array([1.0, 1.0 - HOST_ERROR, 1.0 + HOST_ERROR])
    device_factors = np.tile([[1.0, 1.0 - rel, 1.0 + rel]], (4, 1))
    return simulate_groups(host, device, kernels, rank.category, 4, host_factors, device_factors).T


def _row(ctx: _Context, target, mb: MicroBatches, rank: RankStep, variant, times: DeviceTimes) -> dict[str, Any]:
    workload, layout, acc = rank.workload, target.layout, target.accelerator
    device, kernels = times.per_unit[:, 0], times.kernels[:, 0]
    phases = workload.phase_index()
    host = unit_host_seconds(kernels, phases, workload.host_costs, workload.options,
                             python_seconds(workload)) * ctx.hm.scale
    rel = float(times.relative_error[0])
    sim = _simulated(rank, host, device, kernels, rel)
    comm = Collectives(ctx.workload, rank, layout, layout_fabrics(target))
    counts = stage_layers(rank.shape.layers, layout.pp)
    piped = [[comm.stage_seconds(sim[i], s, n) for s, n in enumerate(counts)] for i in range(3)]
    pipes = [pipeline_time([t for t, _ in stages], mb.count, layout.virtual_stages) for stages in piped]
    stages = piped[0]
    backward_share = _backward_share(rank, device, phases)
    compute = stages[0][0] - stages[0][1]   # the last micro-batch's, on the first stage
    opt_s, dp_total, dp_exposed, dp_note = comm.data_parallel(sim[0][3], (1 - backward_share) * compute,
                                                              backward_share * compute, acc, ctx.zero)
    overhead = _overhead(ctx.workload, mb, acc, ctx.hm)
    links = max(stages)[1] * mb.count   # the slowest stage's collectives and sends, every micro-batch
    step = overhead + pipes[0].seconds + opt_s + dp_exposed
    low = overhead + pipes[1].seconds + sim[1][3] + dp_exposed * (1 - COMM_ERROR) - COMM_ERROR * links
    high = overhead + pipes[2].seconds + sim[2][3] + dp_exposed * (1 + COMM_ERROR) + COMM_ERROR * links
    host_bound = float(host[rank.category < 3].sum()) > float(device[rank.category < 3].sum())
    width = regime_width(bool(workload.precision.half), times.method, acc, host_bound)
    low, high = widen(step, max(low, 0.0), high, width)
    priced = _Priced(step, low, high, width, pipes[0], stages, backward_share, opt_s, (dp_total, dp_exposed, dp_note),
                     host_bound)
    return _assemble(ctx, target, mb, rank, variant, times, priced, comm)


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


def _assemble(ctx: _Context, target, mb: MicroBatches, rank: RankStep, variant, times: DeviceTimes, priced: _Priced,
              comm: Collectives) -> dict[str, Any]:
    whole, layout, acc, shape = ctx.workload, target.layout, target.accelerator, ctx.shape
    dp_total, dp_exposed, dp_note = priced.dp
    rel = float(times.relative_error[0])
    steps_t = shape.steps * mb.steps_factor if shape.steps is not None else None
    total = total_low = total_high = None
    one_off = row_one_off_s(whole, shape, ctx.measured_once_s, priced.step, ctx.current_total_s)
    if steps_t is not None:
        validation = _validation(ctx, mb, priced, layout.dp)
        total = one_off + shape.fixed_s + validation + steps_t * priced.step
        total_low = one_off + shape.fixed_s + validation * (1 - rel) + steps_t * priced.low
        total_high = one_off + shape.fixed_s + validation * (1 + rel) + steps_t * priced.high
    cost = run_cost(acc, target.count, total, provider=ctx.provider, gpus_per_node=target.gpus_per_node)
    memory, memory_detail = _memory(ctx, target, mb, rank, variant)
    note, notes = row_notes(whole, target, cost, priced.host_bound, float(times.kernels[:, 0].sum()), memory,
                            mb.size, False)
    work = priced.step * mb.steps_factor
    speedup = (ctx.current_total_s / total if ctx.current_total_s and total
               else whole.measured_step_s / work if whole.measured_step_s else None)
    links = priced.stages[priced.slowest][1] * mb.count   # the slowest rank's collectives and sends
    compute = [t - c for t, c in priced.stages]
    busy = compute[priced.slowest] * mb.count
    phases = {"forward": busy * (1 - priced.backward_share), "backward": busy * priced.backward_share,
              "optimizer": priced.optimizer_s, "host": _overhead(whole, mb, acc, ctx.hm)}
    detail = {**layout.to_dict(), "applied": True, "microbatches": mb.count, "micro_batch_size": mb.size,
              "layers": rank.shape.layers, "stage_layers": stage_layers(rank.shape.layers, layout.pp),
              "stage_s": [round(t, 6) for t, _ in priced.stages], "stage_compute_s": [round(c, 6) for c in compute],
              "bubble_s": round(priced.pipe.bubble_s, 6), "bubble_share": round(priced.pipe.bubble_share, 4),
              "tp_comm_s": round(links - comm.p2p * mb.count, 6), "pp_comm_s": round(comm.p2p * mb.count, 6),
              "dp_comm_s": round(dp_total, 6), "param_share": round(rank.param_share, 5),
              "unsplit_share": round(rank.unsplit_share, 4), "memory": memory_detail, "source": "target"}
    row = TargetRow.projected(
        name=acc.name, label=target.label, devices=target.count, nodes=target.nodes,
        gpus_per_node=target.gpus_per_node, step_s=priced.step, step_low_s=priced.low, step_high_s=priced.high,
        relative_error=rel, band_width=math.expm1(priced.width), steps=None if steps_t is None else int(round(steps_t)),
        total_s=total, total_low_s=total_low, total_high_s=total_high, work_s=work, speedup=speedup, cost=cost,
        memory=memory, capacity_gib=round(capacity_bytes(acc.memory_gb) / GIB, 2) if acc.memory_gb else None,
        usable_gib=round(usable_gib(acc.memory_gb), 2) if acc.memory_gb else None,
        batch_per_device=mb.size, accumulate=mb.count, batch_convention=ctx.convention,
        method=f"{times.method} + tp/pp + collective model", phases_s=phases,
        comm_s=links + dp_total, comm_exposed_s=links + dp_exposed,
        communication="; ".join(x for x in (comm.describe(), dp_note) if x),
        host_bound=priced.host_bound, unmodelled_share=float(times.unmodelled_share[0]),
        precision=whole.precision.name, precision_note=note,
        assumed={**assumed_for(whole, variant, acc, ctx.zero, target, ctx.hm), "one_off_s": round(one_off, 4)},
        notes=_layout_notes(target, mb, rank, priced.pipe, comm) + notes, layout=detail).to_dict()
    row["global_batch"] = int(mb.samples_per_step) if mb.samples_per_step else None   # all replicas' samples
    return row


def _layout_notes(target, mb: MicroBatches, rank: RankStep, pipe, comm: Collectives) -> list[str]:
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


def _validation(ctx: _Context, mb: MicroBatches, priced: _Priced, dp: int) -> float:
    """The run's validation on the target: forward only through the pipeline, per sample, over dp replicas."""
    if not ctx.shape.validation_s:
        return 0.0
    replicas = ctx.workload.world / dp
    current = ctx.current_fwd_s
    if not current:
        return ctx.shape.validation_s * replicas
    # the pipeline's throughput: its slowest stage's forward per micro-batch
    per_sample = max(t - c for t, c in priced.stages) * (1 - priced.backward_share) / max(mb.size or 1, 1)
    run_samples = (ctx.workload.batch_size or 1) * max(ctx.workload.accumulate, 1)
    return ctx.shape.validation_s * (per_sample / (current / run_samples)) * replicas
