"""Cross-hardware projection: how long and how much a measured (or estimated) run takes elsewhere.

    from prenet_callbacks.projection import project_report
    project_report(report, ["A100", "8x H100", "4x8 H100"])   # fills report.targets and the recommendation

When it runs: at a fit's first prediction and its end (the session projects its own report), for ``prenet report``,
and in `estimate()` (`estimation.py`, from a model alone). The ways in live here (`from_report`, `reproject`,
`report_whatif`, `report_blocks`, `estimation`, `targets`); a row is built by four rooms in order: `ops` (what runs
on the target), `pricing` (how long it takes), `parallel` (over how many devices, and what they exchange), `rows`
(the row, its band, memory, cost, and the recommendation). It reads the report and the model, and writes only the
report's ``targets``, ``recommendation`` and ``projection``.

See ``docs/projection.md`` for the method, the assumptions and the measured accuracy.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from predictor_models.hardware.providers import check_provider

from prenet_callbacks.projection.rows.advice import recommend
from prenet_callbacks.projection.rows.cost import run_cost
from prenet_callbacks.projection.ops.fp8 import fp8_targets
from prenet_callbacks.projection.from_report import run_shape_from_report, workload_from_report
from prenet_callbacks.projection.pricing.host import ExecutionOptions, measure_host_costs
from prenet_callbacks.projection.rows.layout_rows import check_layouts
from prenet_callbacks.projection.rows.memory import GIB, capacity_bytes
from prenet_callbacks.projection.parallel.model_layout import ModelLayout
from prenet_callbacks.projection.rows.one_off import measured_one_off_s
from prenet_callbacks.projection.ops.optimizer_ops import optimizer_settings
from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig
from prenet_callbacks.projection.ops.precision import Precision, parse_precision
from prenet_callbacks.projection.pricing.predictor_source import resolve_predictor
from prenet_callbacks.projection.rows.project import BATCH_CONVENTIONS, RunShape, check_batch_convention, project_targets
from prenet_callbacks.projection.report_whatif import check_whatif, reproject_whatif
from prenet_callbacks.projection.targets import DEFAULT_TARGETS, ProjectionTarget, resolve_targets
from prenet_callbacks.projection.ops.workload import Unit, Workload
from prenet_callbacks.report_parts import TargetRow

__all__ = ["BATCH_CONVENTIONS", "DEFAULT_TARGETS", "ExecutionOptions", "Precision", "ProjectionTarget", "RunShape",
           "Unit", "Workload", "measure_host_costs", "optimizer_settings", "parse_precision", "project_report",
           "project_targets", "recommend", "resolve_targets"]


def project_report(report, targets: Sequence[str] | None = None, *, predictor=None,
                   batch_convention: str = "per_device", sharding: str | None = None, compile: str = "none",
                   cuda_graphs: bool = False, optimizer_impl: str | None = None,
                   provider: str | None = None, precision: str | None = None, accumulate: int | None = None,
                   activation_checkpointing: str | None = None, channels_last: bool = False,
                   refuse_layouts: bool = False) -> list[dict[str, Any]]:
    """Fill ``report.targets`` (current device first), the recommendation and ``projection``.

    ``targets=None`` projects onto `DEFAULT_TARGETS`, ``[]`` onto nothing (the table is cleared).
    ``batch_convention``: "per_device" keeps each GPU's batch, "global" keeps the global batch.
    ``sharding``: the targets' set-up ("none", "zero1", "zero2", "zero3", "fsdp"); None: as the run.
    ``compile`` / ``cuda_graphs``: how the targets execute the step (default: eager, as most runs).
    ``optimizer_impl``: "foreach", "fused" or "forloop"; None: as the run named it, else PyTorch's default.
    ``provider``: price every row with that provider's listings ("Lambda", case-insensitive); None: the
    cheapest current listing of the row's GPU count (docs/hardware.md). Unknown providers raise ValueError.
    ``precision``: None keeps the run's; another ("bf16-mixed", "16-mixed", "32-true", ..., or "fp8": torchao
    float8 tensorwise on each ``Linear`` layer) re-tunes the recorded ops to it (`reproject.py`; the rows'
    precision_note says so; the measured device's row stays as measured, and the same GPU is projected too).
    "fp8" on named targets without FP8 raises ValueError; the default set keeps its FP8 GPUs.
    ``accumulate``: None keeps the run's; N re-projects each optimizer step as N micro-batches (forward and
    backward N / the run's times, the gradient adds, the optimizer once; the run's steps kept, so the global
    batch and the totals follow). ``activation_checkpointing``: None, "full" or "selective" (as `estimate`)
    over the run's repeated blocks, read from its per-layer table; a report without them raises ValueError.
    With either, the rows' notes say so and the measured GPU is projected too (`report_whatif.py`).
    ``channels_last``: with a half ``precision``, the run's convolutions take channels-last tensors (default
    False: NCHW, PyTorch's default, whose half convolutions pay cuDNN's layout transforms).
    ``refuse_layouts``: a tensor/pipeline layout the run's model cannot run raises ValueError with the reason
    (an explicit request: ``prenet report --targets``); False (a training run's callback) leaves its row out and
    says why in ``projection.notes``.
    Unknown names raise `UnknownHardwareError` (a ValueError naming the closest catalog entries); other
    bad values raise ValueError naming the value and the fix. Returns the rows.
    """
    provider, zero, options = _checked_options(batch_convention, accumulate, activation_checkpointing, provider,
                                               sharding, compile, cuda_graphs)
    chosen = resolve_targets(targets)
    if targets is not None and not chosen:
        report.targets = []
        report.recommendation = None
        return []
    if not isinstance(channels_last, bool):
        raise ValueError(f"channels_last must be True or False, got {channels_last!r}")
    recorded = workload_from_report(report, options=options, optimizer_impl=optimizer_impl, precision=precision,
                                    channels_last=channels_last)
    workload, whatif = reproject_whatif(recorded, report, accumulate=accumulate,
                                        activation_checkpointing=activation_checkpointing)
    chosen, fp8_note = _targets_for(report, workload, chosen, explicit=targets is not None,
                                    refuse_layouts=refuse_layouts, batch_convention=batch_convention)
    shape = run_shape_from_report(report, workload)
    predictor, predictor_note = resolve_predictor(predictor)
    notes = list(workload.notes) + fp8_note + ([predictor_note] if predictor_note else [])
    current = _current_row(report, recorded, shape, batch_convention, provider)   # the run as it ran
    rows = _target_rows(report, workload, whatif, chosen, current, predictor, shape, notes,
                        batch_convention=batch_convention, zero=zero, provider=provider)
    report.targets = ([current.to_dict()] if current else []) + rows
    report.recommendation = recommend(report.targets)
    report.projection = _projection_block(workload, whatif, current, shape, predictor, notes, batch_convention, rows)
    return report.targets


def _checked_options(batch_convention: str, accumulate: int | None, activation_checkpointing: str | None,
                     provider: str | None, sharding: str | None, compile: str,
                     cuda_graphs: bool) -> tuple[str | None, ZeroConfig | None, ExecutionOptions]:
    """`project_report`'s options checked (a ValueError naming the fix): the provider, the targets' sharding
    (None: as the run) and how they execute the step."""
    check_batch_convention(batch_convention)
    check_whatif(accumulate, activation_checkpointing)
    provider = check_provider(provider)
    zero = ZeroConfig.from_sharding(sharding) if sharding is not None else None
    return provider, zero, ExecutionOptions(compile, cuda_graphs)


def _targets_for(report, workload: Workload, chosen: list, *, explicit: bool, refuse_layouts: bool,
                 batch_convention: str) -> tuple[list, list[str]]:
    """The targets an FP8 projection keeps (and why others went), each layout checked when asked to refuse."""
    fp8_note: list[str] = []
    if workload.precision.fp8:
        chosen, fp8_note = fp8_targets(chosen, explicit=explicit)
    if refuse_layouts and run_model_parallel(report) is None:
        check_layouts(workload, chosen, batch_convention)
    return chosen, fp8_note


def _target_rows(report, workload: Workload, whatif: dict[str, Any], chosen: list, current: TargetRow | None,
                 predictor, shape: RunShape, notes: list[str], *, batch_convention: str, zero: ZeroConfig | None,
                 provider: str | None) -> list[dict[str, Any]]:
    """The other hardware's rows (the measured GPU among them only when re-projected); ``notes`` gets why
    there are none."""
    current_key = (current.devices, current.name) if current else None
    if not workload.reprojected_from and not whatif:   # re-projected, the measured GPU is a target of its own
        chosen = [t for t in chosen if (t.count, t.accelerator.name) != current_key or t.nodes > 1]
    own = run_model_parallel(report)
    # without rows, what the notes say about pricing them (host time, anchoring, FP8 targets) says nothing: only why
    if own is not None:
        notes[:] = [f"the run splits its model itself ({own['text']}, {own['source']}): its recorded ops are one "
                    "rank's shards, whose unsharded shapes the per-layer table does not hold, so other hardware "
                    "and layouts are not projected from it; estimate() on the unsplit model projects them"]
        return []
    if not workload.units or not any(u.ops for u in workload.units):
        notes[:] = ["no per-layer profile in this report (profile_layers=False, or a DeepSpeed PipelineEngine, whose "
                    "train_batch is measured as whole steps): other hardware not projected"]
        return []
    total = current.total_s if current else None
    return project_targets(workload, chosen, predictor, shape, current_total_s=total,
                           batch_convention=batch_convention, sharding=zero, provider=provider, notes=notes)


def _projection_block(workload: Workload, whatif: dict[str, Any], current: TargetRow | None, shape: RunShape,
                      predictor, notes: list[str], batch_convention: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's ``projection`` block: notes, assumptions, precision, predictor, the work, one-off time."""
    projection = {
        "notes": notes,
        "assumptions": _assumptions(batch_convention),
        "batch_convention": batch_convention,
        "precision": workload.precision.label(),
        "predictor": (getattr(predictor, "metadata", {}) or {}).get("version"),
        "work": {"steps": None if shape.steps is None else int(round(shape.steps)), "done_steps": shape.done_steps},
    }
    if rows and workload.anchor is None and current and current.total_s:
        # a CPU's (or unknown device's) warm-up and profiling stay in its own row; the others carry their own
        projection["one_off"] = {
            "measured_s": round(measured_one_off_s(shape.steps, workload.measured_step_s,
                                                   shape.fixed_s + shape.validation_s, current.total_s), 4),
            "fits": shape.fits}
    if workload.reprojected_from:
        projection["reprojected_from"] = workload.reprojected_from   # the run's own precision
    if whatif:
        projection["whatif"] = whatif   # {"accumulate": N, "activation_checkpointing": "full"}
    return projection


def _assumptions(convention: str) -> str:
    if convention == "global":
        return ("data-parallel targets keep the global batch: each GPU gets global / (GPUs x accumulate) samples "
                "and the run keeps its optimizer steps")
    return ("data-parallel targets keep the per-device batch; the same data takes world/N times the optimizer "
            "steps")


def _done_before_s(report, workload: Workload) -> float:
    """Wall time of the steps that ran before this fit (resume) or attach: measured when the
    report holds the earlier fits' time, else those steps at the measured step time."""
    run = report.run or {}
    done = int(run.get("start_step") or 0)
    if not done:
        return 0.0
    if run.get("earlier_s") is not None:
        return float(run["earlier_s"])
    return done * (workload.measured_step_s or 0.0)


def _current_row(report, workload: Workload, shape: RunShape, convention: str,
                 provider: str | None = None) -> TargetRow | None:
    """The measured device's row (None when the report names no device)."""
    current = report.current or {}
    if not current:
        return None
    prediction = report.latest_prediction or {}
    anchor = workload.anchor
    name = anchor.name if anchor is not None else (current.get("name") or current.get("device") or "current")
    devices = int(current.get("devices") or 1)
    total = prediction.get("predicted_total_s")
    done_s = _done_before_s(report, workload)
    if total is not None and done_s:
        total += done_s  # the whole run, like every target row: the part that ran before this fit too
    cost = run_cost(anchor, devices, total, provider=provider) if anchor is not None else None
    step = workload.measured_step_s
    phases = (report.measured or {}).get("step_phases") or {}
    memory = (report.measured or {}).get("memory") or {}
    peak = memory.get("peak_allocated_bytes")
    device_s = sum(u.measured_s or 0.0 for u in workload.units) if anchor is not None else None
    own = run_model_parallel(report)
    row = TargetRow.current_device(
        name=name, devices=devices, step_s=step, steps=None if shape.steps is None else int(round(shape.steps)),
        total_s=total, total_low_s=prediction.get("low_s") and prediction["low_s"] + done_s,
        total_high_s=prediction.get("high_s") and prediction["high_s"] + done_s, cost=cost,
        memory_gib=round(peak / 2**30, 2) if peak else None,
        capacity_gib=(round(capacity_bytes(anchor.memory_gb) / GIB, 2)
                      if anchor is not None and anchor.memory_gb else None),
        batch_per_device=workload.batch_size, accumulate=workload.accumulate, batch_convention=convention,
        phases_s={"forward": phases.get("forward_s"), "backward": phases.get("backward_s"),
                  "optimizer": phases.get("optimizer_s"),   # absent where the run's phases were never marked
                  "host": (phases.get("data_s") or 0.0) + (phases.get("other_s") or 0.0)
                  if phases.get("forward_s") is not None else None},
        host_bound=bool(device_s is not None and step and step - workload.data_s > 1.2 * device_s),
        precision=workload.reprojected_from or workload.precision.name,   # the run as measured
        assumed={"attention": None, "optimizer": f"{workload.optimizer} ({workload.optimizer_ran or 'as measured'})",
                 "compile": "default" if workload.ran_compiled else "none", "cuda_graphs": False,
                 "host": "measured", "sharding": workload.zero.label(), "network_gbps_per_gpu": None},
        layout=None if own is None else own["layout"],
    )
    return row if own is None else replace(row, label=f"{row.label} {own['text']}")


def run_model_parallel(report) -> dict[str, Any] | None:
    """The run's own tensor/pipeline layout (``current.model_parallel``, `model_parallel_run.run_layout`): its
    layout block, its text and where it was read, or None for a run that does not split its model."""
    own = (report.current or {}).get("model_parallel") or {}
    tp, pp = int(own.get("tp") or 1), int(own.get("pp") or 1)
    if tp <= 1 and pp <= 1:
        return None
    devices = int((report.current or {}).get("devices") or tp * pp)
    micro_batches = int(own.get("micro_batches") or 0) or None   # a DeepSpeed pipeline's, when it says
    layout = ModelLayout(tp, pp, max(1, devices // (tp * pp)), microbatches=micro_batches)
    return {"text": layout.text(), "source": own.get("source") or "the run",
            "layout": {**layout.to_dict(), "applied": True, "source": "run"}}
