"""Project one workload onto targets: step time, band, whole-run time, memory fit, cost.

Multi-GPU targets ("8x H100") run data-parallel with the *same per-device batch* as the measured
run (what Lightning does when only ``devices`` changes): the global batch grows, so the same data
takes ``world / N`` times the optimizer steps. A step is the per-device compute at that batch, plus
the gradient communication not hidden behind backward, plus host time that no GPU shortens.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from prenet_callbacks.projection.cost import run_cost
from prenet_callbacks.projection.memory import fit_memory
from prenet_callbacks.projection.parallel import (
    DDP_BUCKET_BYTES,
    ddp_exposed_seconds,
    host_link_bytes_per_s,
    node_link,
    zero_comm_seconds,
)
from prenet_callbacks.projection.precision import precision_note
from prenet_callbacks.projection.scaling import device_times
from prenet_callbacks.projection.workload import Workload


@dataclass(frozen=True)
class RunShape:
    """How the whole run is made of steps on the measured setup (to turn a step time into a total).

    steps: optimizer steps of the run (None: unknown length, only step times are projected).
    fixed_s: setup, checkpoints, epoch boundaries -- host and disk work that no GPU changes.
    validation_s: all validation of the run on the measured device (scales like the forward pass).
    """

    steps: float | None = None
    fixed_s: float = 0.0
    validation_s: float = 0.0


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(float(value), digits)


def project_targets(workload: Workload, targets: Sequence, predictor, shape: RunShape,
                    *, current_total_s: float | None = None) -> list[dict[str, Any]]:
    """One row per target (see `docs/projection.md` for the keys)."""
    accelerators = [t.accelerator for t in targets]
    times = device_times(workload, accelerators, predictor)
    grad_bytes = workload.params * workload.precision.grad_bytes
    half_bytes = 2 if workload.precision.half else workload.precision.param_bytes
    measured_fwd = None
    if workload.anchor is not None:
        measured_fwd = sum(u.measured_s or 0.0 for u in workload.units if u.phase == "fwd") or None
    has_conv = any(spec.op_class == "conv" for spec, _ in workload.ops())
    rows = []
    for target, dev in zip(targets, times):
        acc, n = target.accelerator, target.count
        link = node_link(acc, n)
        fwd, bwd, opt = dev.phases["fwd"], dev.phases["bwd"], dev.phases["opt"]
        comm_total = comm_exposed = 0.0
        comm_note = ""
        zero = workload.zero
        if zero.stage >= 1 or zero.offload_optimizer or zero.offload_param:
            opt = opt / max(n, 1) if zero.stage >= 1 else opt   # each rank updates its shard
            if zero.offload_optimizer:
                opt = 0.0
            comm_total, comm_exposed, comm_note = zero_comm_seconds(
                zero, workload.params, half_bytes, workload.precision.grad_bytes, n, link, fwd, bwd,
                host_link_bytes_per_s(acc))
        elif n > 1:
            comm_total, comm_exposed = ddp_exposed_seconds(grad_bytes, n, link, bwd, DDP_BUCKET_BYTES)
            comm_note = f"DDP all-reduce, {link.describe()}"
        compute = fwd + bwd + opt
        step = workload.host_s + compute + comm_exposed
        rel = dev.relative_error
        # communication error: the ring constants were fitted within ~15 %
        low = workload.host_s + (compute * (1 - rel)) + comm_exposed * 0.85
        high = workload.host_s + (compute * (1 + rel)) + comm_exposed * 1.15
        steps_t = shape.steps * workload.world / n if shape.steps is not None else None
        total = total_low = total_high = None
        if steps_t is not None:
            fwd_ratio = (fwd / measured_fwd) if measured_fwd else 1.0
            validation = shape.validation_s * fwd_ratio * workload.world / n
            total = shape.fixed_s + validation + steps_t * step
            total_low = shape.fixed_s + validation * (1 - rel) + steps_t * low
            total_high = shape.fixed_s + validation * (1 + rel) + steps_t * high
        cost = run_cost(acc, n, total)
        memory = _memory(workload, acc, n)
        note = precision_note(workload.precision, acc, has_conv=has_conv)
        notes = [note] if note else []
        if dev.host_bound:
            notes.append("host-bound: the GPU outruns eager PyTorch's kernel launches")
        if memory is not None and not memory.fits:
            notes.append(f"does not fit at batch {workload.batch_size or '?'} per device"
                         + (f"; largest that fits: {memory.max_batch}" if memory.max_batch is not None else ""))
        work = step * workload.world / n  # seconds per measured-run step's worth of data
        speedup = None
        if current_total_s and total:
            speedup = current_total_s / total
        elif workload.measured_step_s:
            speedup = workload.measured_step_s / work
        rows.append({
            "name": acc.name,
            "devices": n,
            "step_seconds": _round(step),
            "low_seconds": _round(low),
            "high_seconds": _round(high),
            "relative_error": round(rel, 4),
            "steps": _round(steps_t, 1),
            "total_seconds": _round(total, 2),
            "total_low_seconds": _round(total_low, 2),
            "total_high_seconds": _round(total_high, 2),
            "work_seconds": _round(work),
            "speedup": _round(speedup, 4),
            "usd_per_gpu_hour": cost.usd_per_gpu_hour,
            "usd_per_hour": _round(cost.usd_per_hour, 4),
            "total_usd": _round(cost.total_usd, 4),
            "price_date": cost.price_date,
            "fits_memory": None if memory is None else memory.fits,
            "memory_gb": None if memory is None else round(memory.total_bytes / 2**30, 2),
            "memory_capacity_gb": acc.memory_gb,
            "max_batch": None if memory is None else memory.max_batch,
            "batch_per_device": workload.batch_size,
            "global_batch": workload.batch_size * n * workload.accumulate if workload.batch_size else None,
            "method": dev.method + (" + ring model" if n > 1 or comm_total else ""),
            "phases": {k: _round(v) for k, v in (("forward", fwd), ("backward", bwd), ("optimizer", opt),
                                                  ("host", workload.host_s))},
            "comm_seconds": _round(comm_total),
            "comm_exposed_seconds": _round(comm_exposed),
            "communication": comm_note or None,
            "unmodelled_share": round(dev.unmodelled_share, 3),
            "precision": workload.precision.name,
            "precision_note": note,
            "notes": notes,
            "current": False,
        })
    return rows


def _memory(workload: Workload, accelerator, count: int):
    if workload.activation_bytes is None or not accelerator.memory_gb:
        return None
    return fit_memory(workload.params, workload.precision, workload.optimizer, workload.zero, count,
                      workload.activation_bytes, workload.batch_size, accelerator.memory_gb,
                      activations_measured=workload.activations_measured)
