"""Project one workload onto targets: step time, band, whole-run time, memory fit, cost.

A step on a target is: data-loader wait + the framework's fixed host time + the host-to-device copy of
the batch + the simulated overlap of the host issuing kernels with the GPU running them (`host.py`)
+ the communication not hidden behind backward (`data_parallel.py`, `fabric.py`).

Batch conventions for multi-GPU targets ("8x H100", "4x8 H100"):
- ``per_device`` (default, what Lightning does when only ``devices`` changes): each GPU keeps the
  measured per-device batch, the global batch grows N/world-fold and the same data takes world/N
  times the optimizer steps.
- ``global``: the global batch stays; each GPU gets global / (N x accumulate) samples (it must divide)
  and the run keeps its number of optimizer steps. Per-device work is scaled linearly with the batch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from prenet_callbacks.projection.rows.bands import regime_width, widen
from prenet_callbacks.projection.rows.cost import run_cost
from prenet_callbacks.projection.parallel.fabric import target_fabric
from prenet_callbacks.projection.pricing.host import (
    GRAPH_REPLAY_S,
    HOST_ERROR,
    simulate,
    simulate_band,
    unit_host_seconds,
)
from prenet_callbacks.projection.parallel.links import host_link_bytes_per_s
from prenet_callbacks.projection.rows.memory import GIB, capacity_bytes, derived_account, fit_account, usable_gib
from prenet_callbacks.projection.ops.optimizer_ops import default_implementation
from prenet_callbacks.projection.parallel.data_parallel import DDP_BUCKET_BYTES, ZeroConfig, ddp_exposed_seconds, zero_comm_seconds
from prenet_callbacks.projection.rows.layout_rows import layout_rows
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
from prenet_callbacks.projection.pricing.predictor_source import pricing_scope
from prenet_callbacks.projection.pricing.scaling import PriceMemo, device_times
from prenet_callbacks.projection.targets import as_projection_target
from prenet_callbacks.projection.ops.workload import Variant, Workload
from prenet_callbacks.report_parts import TargetRow

BATCH_CONVENTIONS = ("per_device", "global")


def check_batch_convention(value: Any) -> str:
    if value not in BATCH_CONVENTIONS:
        raise ValueError(f"batch_convention must be 'per_device' (each GPU keeps its batch) or 'global' (the "
                         f"global batch stays), got {value!r}")
    return value


def project_targets(workload: Workload, targets: Sequence, predictor, shape: RunShape,
                    *, current_total_s: float | None = None, batch_convention: str = "per_device",
                    sharding: ZeroConfig | None = None, provider: str | None = None,
                    notes: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per target (see `docs/projection.md` for the keys). ``provider``: price the rows with that
    provider's listings only (see `cost.run_cost`). Targets with a tensor/pipeline layout are projected by
    `layout_rows`; one that cannot run this model has no row, and `notes` (when given) gets why."""
    check_batch_convention(batch_convention)
    targets = [as_projection_target(t) for t in targets]
    # the targets share ops and GPUs (a layout's ranks, the device envelope's weaker GPUs): each priced once
    with pricing_scope(predictor):
        return _project_targets(workload, targets, predictor, shape, current_total_s=current_total_s,
                                batch_convention=batch_convention, sharding=sharding, provider=provider, notes=notes)


def _project_targets(workload: Workload, targets: list, predictor, shape: RunShape, *, current_total_s: float | None,
                     batch_convention: str, sharding: ZeroConfig | None, provider: str | None,
                     notes: list[str] | None) -> list[dict[str, Any]]:
    zero = sharding if sharding is not None else workload.zero
    plain = [t for t in targets if t.layout is None]
    memo = PriceMemo()   # a spec priced for a plain row is not priced again for a layout's rank on the same GPU
    rows: dict[int, dict[str, Any] | None] = dict(zip(map(id, plain), plain_rows(
        workload, plain, predictor, shape, current_total_s=current_total_s, batch_convention=batch_convention,
        zero=zero, provider=provider, memo=memo)))
    layered = [t for t in targets if t.layout is not None]
    if layered:
        def plain_row(target) -> dict[str, Any]:   # a model no layout can split: replicas on every GPU
            return plain_rows(workload, [target], predictor, shape, current_total_s=current_total_s,
                              batch_convention=batch_convention, zero=zero, provider=provider)[0]

        rows.update(zip(map(id, layered), layout_rows(
            workload, layered, predictor, shape, current_total_s=current_total_s, batch_convention=batch_convention,
            zero=zero, provider=provider, plain_row=plain_row, notes=notes, memo=memo)))
    return [row for row in (rows[id(t)] for t in targets) if row is not None]


def plain_rows(workload: Workload, targets: list, predictor, shape: RunShape, *, current_total_s: float | None,
               batch_convention: str, zero: ZeroConfig, provider: str | None,
               memo: PriceMemo | None = None) -> list[dict[str, Any]]:
    """Rows of targets whose every GPU holds a replica (or a ZeRO/FSDP shard) of the whole model (``memo``: the
    projection's `PriceMemo`, which the layout rows read the whole ops' times back from)."""
    if not targets:
        return []
    priced = _price(workload, targets, predictor, batch_convention, zero, memo)
    run = _RunFacts(current_fwd=current_forward_s(workload, priced.hm),
                    has_conv=any(spec.op_class == "conv" for spec in workload.flat().specs),
                    measured_once=measured_once_s(workload, shape, current_total_s), current_total_s=current_total_s,
                    batch_convention=batch_convention, zero=zero, provider=provider)
    return [_plain_row(workload, shape, priced, run, t, target) for t, target in enumerate(targets)]


@dataclass
class _Priced:
    """Every target's step at once: (units, targets) host and device seconds, simulated in one pass."""

    accs: list
    scales: list[float]
    variants: list[Variant]
    times: Any          # `scaling.device_times`
    hm: Any             # `row_parts.host_model`
    host: np.ndarray
    device: np.ndarray
    phase_s: tuple[np.ndarray, np.ndarray, np.ndarray]   # forward, backward, optimizer per target
    simulated: np.ndarray   # (targets, 3): the step's compute, its low and its high
    target_fwd: np.ndarray  # the forward alone, per target


@dataclass
class _RunFacts:
    """What every row of one projection shares."""

    current_fwd: float | None
    has_conv: bool
    measured_once: float
    current_total_s: float | None
    batch_convention: str
    zero: ZeroConfig
    provider: str | None


def _price(workload: Workload, targets: list, predictor, batch_convention: str, zero: ZeroConfig,
           memo: PriceMemo | None = None) -> _Priced:
    accs = [t.accelerator for t in targets]
    scales = [_batch_scale(workload, t.count, batch_convention) for t in targets]
    variants = [replace_scale(workload.variant_for(acc, default_implementation(acc)), r)
                for acc, r in zip(accs, scales)]
    times = device_times(workload, accs, variants, predictor, memo)
    hm = host_model(workload)
    phases = times.phase_of
    kernels = times.kernels
    host = unit_host_seconds(kernels, phases, workload.host_costs, workload.options, python_seconds(workload)) * hm.scale
    device = times.per_unit.copy()
    fwd_s, bwd_s, opt_s = (device[phases == i].sum(axis=0) for i in range(3))
    if zero.stage >= 1:   # each GPU updates its shard of the optimizer state
        share = 1.0 / np.maximum([t.count for t in targets], 1)
        device[phases == 2] *= share
        opt_s = opt_s * share
    if zero.offload_optimizer:
        device[phases == 2] = 0.0
        opt_s = np.zeros_like(opt_s)
    rel_all = times.relative_error
    bands = np.stack([np.ones_like(rel_all), 1.0 - rel_all, 1.0 + rel_all], axis=1)          # (targets, 3)
    host_band = np.array([1.0, 1.0 - HOST_ERROR, 1.0 + HOST_ERROR])
    simulated = simulate_band(host, device, kernels, host_band, bands)
    fwd_mask = phases == 0
    target_fwd = simulate(host[fwd_mask], device[fwd_mask], kernels[fwd_mask])
    return _Priced(accs, scales, variants, times, hm, host, device, (fwd_s, bwd_s, opt_s), simulated, target_fwd)


def _plain_row(workload: Workload, shape: RunShape, priced: _Priced, run: _RunFacts, t: int, target) -> dict[str, Any]:
    """Target ``t``'s row: its step with band, communication, whole run, memory and cost."""
    acc, r, variant, times = priced.accs[t], priced.scales[t], priced.variants[t], priced.times
    n = target.count
    fwd, bwd, opt = (float(seconds[t]) for seconds in priced.phase_s)
    comm_total, comm_exposed, comm_note = _communication(workload, run.zero, acc, target, fwd, bwd)
    rel = float(times.relative_error[t])
    step, low, high, width, host_bound = _step_band(workload, priced, t, r, comm_exposed)
    device_total = float(priced.device[:, t].sum())
    steps_t = _target_steps(shape.steps, workload.world, n, run.batch_convention)
    total = total_low = total_high = None
    one_off = row_one_off_s(workload, shape, run.measured_once, step, run.current_total_s)
    if steps_t is not None:
        validation = _validation(workload, shape, float(priced.target_fwd[t]), run.current_fwd, r, n)
        total = one_off + shape.fixed_s + validation + steps_t * step
        total_low = one_off + shape.fixed_s + validation * (1 - rel) + steps_t * low
        total_high = one_off + shape.fixed_s + validation * (1 + rel) + steps_t * high
    cost = run_cost(acc, n, total, provider=run.provider, gpus_per_node=target.gpus_per_node)
    batch_t = _target_batch(workload, r)
    memory = _memory(workload, acc, n, run.zero, variant, r, batch_t)
    note, notes = row_notes(workload, target, cost, host_bound, times.kernels[:, t].sum(), memory, batch_t,
                            run.has_conv)
    factor = (steps_t / shape.steps) if (steps_t is not None and shape.steps) else _work_factor(
        workload.world, n, run.batch_convention)
    work = step * factor
    speedup = None
    if run.current_total_s and total:
        speedup = run.current_total_s / total
    elif workload.measured_step_s:
        speedup = workload.measured_step_s / work
    return TargetRow.projected(
        name=acc.name, label=target.label, devices=n, nodes=target.nodes, gpus_per_node=target.gpus_per_node,
        step_s=step, step_low_s=low, step_high_s=high, relative_error=rel, band_width=math.expm1(width),
        steps=None if steps_t is None else int(round(steps_t)),
        total_s=total, total_low_s=total_low, total_high_s=total_high, work_s=work, speedup=speedup,
        cost=cost, memory=memory,
        capacity_gib=round(capacity_bytes(acc.memory_gb) / GIB, 2) if acc.memory_gb else None,
        usable_gib=round(usable_gib(acc.memory_gb), 2) if acc.memory_gb else None,
        batch_per_device=batch_t, accumulate=workload.accumulate, batch_convention=run.batch_convention,
        method=times.method + (" + collective model" if n > 1 or comm_total else ""),
        phases_s={"forward": fwd, "backward": bwd, "optimizer": opt,
                  "host": max(0.0, step - device_total - comm_exposed)},
        comm_s=comm_total, comm_exposed_s=comm_exposed, communication=comm_note, host_bound=host_bound,
        unmodelled_share=times.unmodelled_share[t], precision=workload.precision.name, precision_note=note,
        assumed={**assumed_for(workload, variant, acc, run.zero, target, priced.hm), "one_off_s": round(one_off, 4)},
        notes=notes,
    ).to_dict()


def _communication(workload: Workload, zero: ZeroConfig, acc, target, fwd: float,
                   bwd: float) -> tuple[float, float, str]:
    """A step's gradient (or ZeRO/FSDP) communication on the target's fabric: total, exposed, and its words."""
    n = target.count
    fabric = target_fabric(acc, target.nodes, target.gpus_per_node, target.network_gbps)
    comm_total = comm_exposed = 0.0
    comm_note = ""
    grad_bytes = workload.params * workload.precision.grad_bytes
    half_bytes = 2 if workload.precision.half else workload.precision.param_bytes
    if zero.active:
        comm_total, comm_exposed, comm_note = zero_comm_seconds(
            zero, workload.params, half_bytes, workload.precision.grad_bytes, fabric, fwd, bwd,
            host_link_bytes_per_s(acc))
    elif n > 1:
        comm_total, comm_exposed = ddp_exposed_seconds(grad_bytes, fabric, bwd, DDP_BUCKET_BYTES)
        comm_note = f"DDP all-reduce, {fabric.describe()}"
    return comm_total, comm_exposed, comm_note


def _step_band(workload: Workload, priced: _Priced, t: int, r: float,
               comm_exposed: float) -> tuple[float, float, float, float, bool]:
    """Target ``t``'s step with its band (never narrower than its regime measured, `bands.py`), the band's
    width, and whether the host bounds the step."""
    acc = priced.accs[t]
    passes = workload.micro_batches   # data wait, loop time and batch copy: once per micro-batch
    overhead = (workload.data_s * r * passes + workload.fixed_host_s * passes + priced.hm.extra_fixed_s
                + workload.input_bytes * r * passes / host_link_bytes_per_s(acc))
    if workload.options.graphs:
        overhead += GRAPH_REPLAY_S
    compute, low_c, high_c = priced.simulated[t]
    step = overhead + compute + comm_exposed
    low = overhead + low_c + comm_exposed * (1 - COMM_ERROR)
    high = overhead + high_c + comm_exposed * (1 + COMM_ERROR)
    host_total, device_total = float(priced.host[:, t].sum()), float(priced.device[:, t].sum())
    host_bound = host_total > device_total
    width = regime_width(bool(workload.precision.half), priced.times.method, acc, host_bound)
    low, high = widen(step, low, high, width)
    return step, low, high, width, host_bound


def replace_scale(variant: Variant, scale: float) -> Variant:
    return variant if scale == 1.0 else replace(variant, batch_scale=scale)


def _batch_scale(workload: Workload, n: int, convention: str) -> float:
    """Per-device batch on a target of `n` GPUs relative to the measured one."""
    if convention == "per_device" or n == workload.world:
        return 1.0
    batch = workload.batch_size
    if not batch:
        raise ValueError("batch_convention='global' needs the run's per-device batch size, which this workload "
                         "lacks (report: current.batch_size; estimate: the input's first dimension or batch_size=); "
                         "pass it, or use batch_convention='per_device'")
    global_batch = batch * workload.world
    if global_batch % n:
        raise ValueError(f"batch_convention='global': the global batch {global_batch} (per-device {batch} x "
                         f"{workload.world} device(s)) does not divide over {n} GPUs; choose a target whose GPU "
                         f"count divides {global_batch}, or use batch_convention='per_device'")
    return (global_batch // n) / batch


def _target_batch(workload: Workload, scale: float) -> int | None:
    return int(round(workload.batch_size * scale)) if workload.batch_size else None


def _target_steps(steps: float | None, world: int, n: int, convention: str) -> float | None:
    if steps is None:
        return None
    return steps * _work_factor(world, n, convention)


def _work_factor(world: int, n: int, convention: str) -> float:
    return 1.0 if convention == "global" else world / n


def _validation(workload: Workload, shape: RunShape, target_fwd: float, current_fwd: float | None,
                scale: float, n: int) -> float:
    """All validation of the run on the target: the measured validation time x the target's forward
    time per sample (`target_fwd`, at its batch) / the measured one's, split over the target's GPUs."""
    if not shape.validation_s:
        return 0.0
    if not current_fwd:
        return shape.validation_s * workload.world / n
    per_sample = (target_fwd / workload.micro_batches / scale) / current_fwd   # at the run's micro-batches
    return shape.validation_s * per_sample * workload.world / n


def _memory(workload: Workload, acc, n: int, zero: ZeroConfig, variant: Variant, scale: float, batch: int | None):
    if workload.activation_bytes is None or not acc.memory_gb:
        return None
    account = workload.state if (workload.state is not None and not zero.offload_optimizer) else None
    if account is None:
        account = derived_account(workload.params, workload.precision, workload.optimizer, zero)
    activations = max(0.0, (workload.activation_bytes + workload.activation_delta(variant, workload.anchor)) * scale)
    return fit_account(account, zero, n, activations, batch, acc.memory_gb,
                       activations_measured=workload.activations_measured)


