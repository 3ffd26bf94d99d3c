"""A saved run re-projected with other gradient accumulation or with activation checkpointing:
``project_report(report, targets, accumulate=N, activation_checkpointing="full" | "selective")``.

The same questions `estimate(accumulate=, activation_checkpointing=)` answers from a model, asked of the
recorded step (`from_report.workload_from_report`), without the model:

- ``accumulate=N``: the forward and backward units' ops run N / (the run's accumulation) times as often,
  and so does their measured host time, the data wait, the loop's own time and the batch copy
  (`Workload.micro_batches`); micro-batches after the first add their gradients into ``.grad``
  (`accumulation.accumulation_ops`, as `estimate` prices them); the optimizer runs once. The run keeps its
  optimizer steps, so the global batch and the totals follow. Below the run's own accumulation its
  recorded gradient adds are scaled down with the rest (not removed exactly).
- ``activation_checkpointing``: the repeated blocks are read from the per-layer table
  (`report_blocks.find_blocks`); each block's forward ops, reduced by `recompute.recomputed_ops` (the
  policy `estimate` uses), run again in a unit of their own just before the block's backward, with the
  block's measured Python time; the saved activations lose what the blocks wrote in the forward and keep
  the blocks' inputs (and, selective, the kept outputs). Reports do not record whether the run itself was
  checkpointed: its recorded ops are taken as not checkpointed, and every row says so.

The units keep their measured times and the recorded ops stay in ``Workload.measured_units``, so a run on a
catalog GPU stays anchored: a scaled unit's ratio carries its repetition; the added units (recompute,
gradient adds) are priced by the predictor times the run's measured-to-predicted ratio. Every projected row's
notes say what was changed.
"""
from __future__ import annotations

from typing import Any

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.ops.accumulation import accumulation_ops, check_accumulate
from prenet_callbacks.projection.ops.recompute import check_policy, recomputed_ops
from prenet_callbacks.projection.report_blocks import ReportBlocks, find_blocks
from prenet_callbacks.projection.ops.workload import Unit, Workload

_NOT_ACTIVATIONS = ("other", "optimizer")


def reproject_whatif(workload: Workload, report: Any, *, accumulate: int | None = None,
                     activation_checkpointing: str | None = None) -> tuple[Workload, dict[str, Any]]:
    """`workload` (the report's step) with `accumulate` micro-batches per optimizer step and/or activation
    checkpointing of its repeated blocks, and the settings that changed; `workload` itself and ``{}`` when
    nothing does (both None, or the run's own accumulation). Bad values raise ValueError naming the fix."""
    policy = check_whatif(accumulate, activation_checkpointing)
    layers = ((report.measured or {}).get("layers") or {}).get("layers") or []
    blocks = _blocks(layers) if policy else None
    run_accumulate = workload.accumulate
    if accumulate == run_accumulate:
        accumulate = None
    if accumulate is None and policy is None:
        return workload, {}
    factor = accumulate / run_accumulate if accumulate else 1.0
    units = [_repeated(unit, factor) for unit in workload.units]
    recorded = list(workload.measured_units or workload.units)   # the ops as the run ran them
    settings: dict[str, Any] = {}
    notes: list[str] = []
    activation = workload.activation_bytes
    if blocks is not None:
        units, recorded, shrink = _checkpointed(units, recorded, blocks, policy, factor)
        if activation is not None:
            activation *= shrink
        settings["activation_checkpointing"] = policy
        notes.append(_checkpointing_note(policy, blocks, shrink))
    if accumulate:
        adds = accumulation_ops(workload.param_tensors, workload.precision, factor) if factor > 1 else []
        if adds:
            at = next((i for i, unit in enumerate(units) if unit.phase == "opt"), len(units))
            units.insert(at, Unit("gradient accumulation", "bwd", adds))
            recorded.insert(at, Unit("gradient accumulation", "bwd", []))   # the run added none of these
        settings["accumulate"] = accumulate
        notes.append(_accumulation_note(accumulate, run_accumulate, factor))
    changed = workload.rebuilt(units=units, measured_units=recorded, accumulate=accumulate or run_accumulate,
                               micro_batches=factor, activation_bytes=activation, whatif_notes=notes,
                               notes=list(workload.notes), recompute=policy or workload.recompute)
    return changed, settings


def check_whatif(accumulate: Any, activation_checkpointing: Any) -> str | None:
    """Both options checked as `estimate` checks them (ValueError naming the fix); returns the policy."""
    if accumulate is not None:
        check_accumulate(accumulate)
    return check_policy(activation_checkpointing)


def _blocks(layers: list[dict[str, Any]]) -> ReportBlocks:
    if not any(layer.get("ops") for layer in layers):
        raise ValueError("activation_checkpointing needs the run's per-layer ops (measured.layers), which this "
                         "report lacks (profile_layers=False?); re-run with the per-layer profile on, or ask "
                         "estimate(model, ..., activation_checkpointing=...) instead")
    blocks = find_blocks(layers)
    if blocks is None:
        raise ValueError("activation_checkpointing needs the run's repeated blocks (layers named <prefix>.<n> of one "
                         "module type, as a transformer's nn.ModuleList gives), and this report's per-layer table "
                         "has none; re-project without activation_checkpointing")
    return blocks


def _repeated(unit: Unit, factor: float) -> Unit:
    """A forward or backward unit run `factor` times as often per optimizer step (its measured time and
    Python stay as measured: the anchored ratio and `Workload.micro_batches` carry the repetition)."""
    if factor == 1.0 or unit.phase == "opt":
        return unit
    return Unit(unit.name, unit.phase, [(spec, count * factor) for spec, count in unit.ops], unit.measured_s,
                unit.python_s)


def _attention(spec: OpSpec) -> bool:
    return spec.op_class == "attention"


def _written(spec: OpSpec) -> float:
    return float(spec.bytes_written)


def _activation_written(ops: list[tuple[OpSpec, float]]) -> float:
    """Forward output bytes, counted as `from_report` counts the activations it cannot measure."""
    return sum(spec.bytes_written * count for spec, count in ops if spec.op_class not in _NOT_ACTIVATIONS)


def _per_call(blocks: list[list[tuple[OpSpec, float]]], calls: list[float]) -> list[list[tuple[OpSpec, float]]]:
    return [[(spec, count / n) for spec, count in ops] for ops, n in zip(blocks, calls)]


def _checkpointed(units: list[Unit], recorded: list[Unit], blocks: ReportBlocks, policy: str,
                  factor: float) -> tuple[list[Unit], list[Unit], float]:
    """The units with each block's recomputed forward just before the block's backward, their recorded
    twins (empty for the added units) and the factor on the saved activations. The policy walks one call
    of each block (its matmuls' order is per call), then the ops are counted per step again."""
    block_of = {name: i for i, names in enumerate(blocks.layers) for name in names}
    forward: list[list[tuple[OpSpec, float]]] = [[] for _ in blocks.names]
    forward_run: list[list[tuple[OpSpec, float]]] = [[] for _ in blocks.names]
    python: list[float | None] = [None] * len(blocks.names)
    first_backward: dict[int, int] = {}
    for position, (unit, twin) in enumerate(zip(units, recorded)):
        i = block_of.get(unit.name)
        if i is None:
            continue
        if unit.phase == "fwd":
            forward[i].extend(unit.ops)
            forward_run[i].extend(twin.ops)
            if unit.python_s is not None:   # the forward's Python runs again with it
                python[i] = (python[i] or 0.0) + unit.python_s
        elif unit.phase == "bwd":
            first_backward.setdefault(i, position)
    calls = [c * factor for c in blocks.calls]
    again, _ = recomputed_ops(_per_call(forward, calls), policy, kept_whole=_attention, output_bytes=_written)
    again = [[(spec, count * n) for spec, count in ops] for ops, n in zip(again, calls)]
    kept = 0.0   # per step: each block's kept bytes of one call, times its calls
    for ops, n in zip(_per_call(forward_run, list(blocks.calls)), blocks.calls):
        kept += recomputed_ops([ops], policy, kept_whole=_attention, output_bytes=_written)[1] * n
    backward_start = next((p for p, u in enumerate(units) if u.phase != "fwd"), len(units))
    at: dict[int, list[int]] = {}
    for i in range(len(blocks.names)):
        at.setdefault(first_backward.get(i, backward_start), []).append(i)
    out, twins = [], []
    for position in range(len(units) + 1):
        for i in at.get(position, ()):
            if again[i]:
                name = f"{blocks.names[i]} (recomputed forward)"
                out.append(Unit(name, "bwd", again[i], None, python[i]))
                twins.append(Unit(name, "bwd", []))   # the run did not run these
        if position < len(units):
            out.append(units[position])
            twins.append(recorded[position])
    total = sum(_activation_written(u.ops) for u in recorded if u.phase == "fwd")
    inside = sum(_activation_written(ops) for ops in forward_run)
    kept_after = total - inside + blocks.input_bytes + kept
    shrink = min(1.0, max(0.0, kept_after / total)) if total > 0 else 1.0
    return out, twins, shrink


def _checkpointing_note(policy: str, blocks: ReportBlocks, shrink: float) -> str:
    kept = ("only their inputs kept" if policy == "full"
            else "their inputs and the outputs of attention and of every other matmul kept")
    return (f"re-projection with activation checkpointing ({policy}) of the run's {blocks.describe()}: each "
            f"block's forward runs again before its backward, {kept}; saved activations x{shrink:.2f}; not "
            "measured. Reports do not record whether the run itself was checkpointed: its recorded ops are taken "
            "as not checkpointed")


def _accumulation_note(accumulate: int, run: int, factor: float) -> str:
    note = (f"re-projection at accumulate={accumulate} (the run: {run}): forward, backward and data loading "
            f"x{factor:g} per optimizer step, {accumulate - 1} gradient add(s) into .grad, the optimizer once; "
            f"the run's optimizer steps kept (global batch x{factor:g}); not measured at this accumulation")
    if factor < 1:
        note += "; the run's own gradient adds are scaled down with the rest"
    return note
