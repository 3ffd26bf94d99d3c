"""What every projected row is built from, whether its target runs replicas (`project.py`) or a tensor/pipeline
layout (`layout_rows.py`): the run's shape, the host model calibrated on the run, the one-off time every total
carries, the measured forward that validation scales with, the row's notes and its assumptions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from prenet_callbacks.projection.pricing.host import calibrate_host_scale, simulate, unit_host_seconds
from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig
from prenet_callbacks.projection.ops.precision import precision_note
from prenet_callbacks.projection.reproject import reprojection_note
from prenet_callbacks.projection.rows.bands import bias_note
from prenet_callbacks.projection.rows.one_off import measured_one_off_s, target_one_off_s
from prenet_callbacks.projection.ops.workload import PHASES, Variant, Workload

COMM_ERROR = 0.15   # band of communication: the collective model's error on public measurements


@dataclass(frozen=True)
class RunShape:
    """How the whole run is made of steps on the measured setup (to turn a step time into a total).

    steps: optimizer steps of the whole run (None: unknown length, only step times are projected).
    fixed_s: setup, checkpoints, epoch boundaries -- host and disk work that no GPU changes.
    validation_s: all validation of the run on the measured device (scales like the forward pass).
    done_steps: steps already run when this was measured (reported, not subtracted: rows cover the run).
    fits, profiled_steps, compile_s: what a target's own one-off time is made of (`one_off.py`).
    """

    steps: float | None = None
    fixed_s: float = 0.0
    validation_s: float = 0.0
    done_steps: int = 0
    fits: int = 1              # fit calls the run takes (a resumed run pays each one's start-up again)
    profiled_steps: int = 0    # the measured run's profiling window (each target row's own one costs it too)
    compile_s: float = 0.0     # torch.compile's time in the measured run (host work: carried as measured)


def python_seconds(workload: Workload) -> np.ndarray | None:
    """Measured Python time per unit (NaN where the generic per-op costs apply); a forward or backward
    unit's runs once per micro-batch (`Workload.micro_batches`)."""
    return workload.cached("python_seconds", lambda: _python_seconds(workload))


def _python_seconds(workload: Workload) -> np.ndarray | None:
    views = workload.views()
    if np.isnan(views.python_s).all():
        return None
    return views.python_s * np.where(views.phases == PHASES.index("opt"), 1.0, workload.micro_batches)


@dataclass(frozen=True)
class HostModel:
    scale: float          # factor on the per-kernel host costs (calibrated on a GPU run)
    extra_fixed_s: float  # measured host time per step the issue model does not explain


def host_model(workload: Workload) -> HostModel:
    """Calibrate the host side on the run itself when it ran on a catalog GPU (see `host.py`); once per workload
    (the plain and the layout rows of a projection share it)."""
    return workload.cached("host model", lambda: _host_model(workload))


def _host_model(workload: Workload) -> HostModel:
    if workload.anchor is None or workload.measured_step_s is None:
        return HostModel(1.0, 0.0)
    phases = workload.phase_index()
    kernels = workload.measured_kernels()
    host = unit_host_seconds(kernels, phases, workload.host_costs, workload.options_ran())
    device = np.array([u.measured_s or 0.0 for u in workload.units])
    target = workload.measured_step_s - workload.data_s - workload.fixed_host_s
    if workload.host_issue_s is not None and host.sum() > 0:
        scale = workload.host_issue_s / host.sum()
    else:
        scale = calibrate_host_scale(host, device, kernels, target)
    simulated = float(simulate(host * scale, device, kernels)[0])
    return HostModel(scale, max(0.0, target - simulated))


def measured_once_s(workload: Workload, shape: RunShape, current_total_s: float | None) -> float:
    """What the measured run spends once beyond its steady parts (`one_off.measured_one_off_s`)."""
    return measured_one_off_s(shape.steps, workload.measured_step_s, shape.fixed_s + shape.validation_s,
                              current_total_s)


def row_one_off_s(workload: Workload, shape: RunShape, measured_once: float, step: float,
                  current_total_s: float | None) -> float:
    """A row's one-off time: the measured run's where it ran on a catalog GPU, else the target's own estimate
    (`one_off.py`: a CPU's warm-up and profiling at its own pace are not a GPU's); none without a measured run."""
    if not current_total_s:
        return 0.0
    if workload.anchor is not None:
        return measured_once
    return target_one_off_s(step, profiled_steps=shape.profiled_steps, fits=shape.fits, compile_s=shape.compile_s)


def current_forward_s(workload: Workload, hm: HostModel) -> float | None:
    """Forward time per step on the measured device (what validation time is relative to)."""
    if workload.validation_forward_s:
        return workload.validation_forward_s
    fwd = [u for u in workload.units if u.phase == "fwd"]
    if not fwd or all(u.measured_s is None for u in fwd):
        return None
    if workload.anchor is None:
        return sum((u.measured_s or 0.0) + (u.python_s or 0.0) for u in fwd)
    kernels = workload.measured_kernels()[workload.phase_index() == 0]
    host = unit_host_seconds(kernels, np.zeros(len(fwd), dtype=int), workload.host_costs,
                             workload.options_ran()) * hm.scale
    return float(simulate(host, np.array([u.measured_s or 0.0 for u in fwd]), kernels)[0])


def row_notes(workload: Workload, target, cost, host_bound: bool, kernels: float, memory, batch: int | None,
              has_conv: bool) -> tuple[str | None, list[str]]:
    """A projected row's precision note and its notes: precision, the re-projection's options, how the target
    was read, the price, host-bound, a misfit."""
    acc = target.accelerator
    note = precision_note(workload.precision, acc, has_conv=has_conv)
    if workload.reprojected_from:
        first = reprojection_note(workload.reprojected_from, workload.precision)
        note = f"{first}; {note}" if note else first
    notes = ([note] if note else []) + workload.whatif_notes   # a re-projection's options say so first
    if target.note:
        notes.append(target.note)
    if cost.note:
        notes.append(cost.note)
    if host_bound:
        notes.append(_host_note(kernels, acc))
    if memory is not None and not memory.fits:
        notes.append(f"does not fit at batch {batch or '?'} per device"
                     + (f"; largest that fits: {memory.max_batch}" if memory.max_batch is not None else ""))
    measured = bias_note(bool(workload.precision.half), acc, workload.anchor, host_bound)
    if measured:
        notes.append(measured)
    return note, notes


def _host_note(kernels: float, acc) -> str:
    """One sentence for every host-bound row (the renderer shows it once, with the rows it applies to):
    the figures are in the row itself (``phases_s.host``), the advice only where it applies."""
    fixes = ("CUDA graphs (torch.compile mode='reduce-overhead') or a larger per-device batch"
             if getattr(acc, "kind", "gpu") == "gpu" else "a larger per-device batch")
    return f"host-bound: eager PyTorch issues the step's {kernels:,.0f} kernels more slowly than the GPU runs them; {fixes}"


_BUSY = " (its steps without the wait for a CPU: the machine was busy)"


def assumed_for(workload: Workload, variant: Variant, acc, zero: ZeroConfig, target, hm: HostModel) -> dict[str, Any]:
    impl = variant.optimizer_impl or workload.optimizer_ran or "as measured"
    costs = workload.host_costs
    return {
        "attention": variant.attention_label(),
        "optimizer": f"{workload.optimizer} ({impl})",
        "compile": workload.options.compile,
        "cuda_graphs": workload.options.graphs,
        "host": ("measured on this run's GPU" if workload.anchor is not None and hm.scale != 1.0
                 else f"this run's own Python time{_BUSY if workload.host_from_clean_steps else ''} + dispatch and launch"
                 if workload.current_kind == "cpu"
                 else f"eager per-op costs of {costs.source or 'this CPU'}"),
        "sharding": zero.label(),
        "network_gbps_per_gpu": target.network_gbps if target.nodes > 1 else None,
    }
