"""Build a `Workload` and a `RunShape` from a saved report (no model needed).

Reads ``measured.layers`` (per-module ops and times), ``measured.step_phases`` / ``data_wait_s``,
``measured.memory`` (the one account of params / grads / optimizer / activations bytes),
``measured.host`` (optional: host costs measured in the run), ``current`` (device, precision,
``deepspeed``, ``batch_size``, ``optimizer``, ``optimizer_impl``, ``param_tensors``), ``plan`` and the
latest prediction (``step_s``, ``steps``, ``breakdown``: ``setup_s``, ``train_s``, ``validation_s``,
``checkpoints_s``, ``epoch_boundaries_s``; /1 reports are upgraded on load), ``run.start_step``.
"""
from __future__ import annotations

from typing import Any

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.ops.alignment import unaligned_gemm_note
from prenet_callbacks.projection.ops.conv_search import conv_search_note
from prenet_callbacks.projection.pricing.host import ExecutionOptions, HostCosts, default_host_costs
from prenet_callbacks.projection.rows.memory import StateAccount
from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig
from prenet_callbacks.projection.ops.precision import Precision, recorded_precision, retune
from prenet_callbacks.projection.rows.project import RunShape
from prenet_callbacks.projection.reproject import memory_scale, reproject_units, reprojection_note, requested_precision
from prenet_callbacks.projection.ops.workload import PHASES, Unit, Workload
from prenet_callbacks.units import format_step_time

_PHASE_FIELDS = {"fwd": "forward_s", "bwd": "backward_s", "opt": "optimizer_s"}
_OPT_KIND = {0: "sgd", 1: "sgd_momentum", 2: "adamw"}


def _spec(d: dict[str, Any]) -> OpSpec:
    return OpSpec(op_class=d["op_class"], dtype=d.get("dtype", "float32"), flops=float(d.get("flops", 0)),
                  bytes_read=float(d.get("bytes_read", 0)), bytes_written=float(d.get("bytes_written", 0)),
                  dims=dict(d.get("dims") or {}), tf32=bool(d.get("tf32", False)), name=d.get("name", ""))


def _cached_spec(op: dict[str, Any], precision, cache: dict[tuple, list]) -> OpSpec:
    """The op's spec, one object for every identical op of the report (a model's repeated layers): the
    projection then predicts each distinct op once. ``cache``: per op's scalar fields, the ``(dims, spec)`` pairs
    made so far (dims compared as dicts, in C, rather than hashed as a tuple of their items)."""
    raw = op["spec"]
    dims = raw.get("dims") or {}
    name = op.get("name", "")
    key = (name, raw.get("op_class"), raw.get("dtype"), raw.get("flops"), raw.get("bytes_read"),
           raw.get("bytes_written"), raw.get("tf32"))
    try:
        made = cache.get(key)
        for seen, spec in made or ():
            if seen == dims:
                return spec
    except (TypeError, ValueError):  # a field or dims value that cannot be hashed or compared: no sharing
        return retune(_spec({"name": name, **raw}), precision)
    spec = retune(_spec({"name": name, **raw}), precision)
    cache.setdefault(key, []).append((dims, spec))
    return spec


def anchor_accelerator(current: dict[str, Any]):
    """The catalog entry of the measured GPU, or None (CPU, unknown GPU)."""
    if current.get("device") not in ("cuda", "rocm") or not current.get("catalog_name"):
        return None
    from predictor_models.hardware import UnknownHardwareError, lookup_hardware

    try:
        return lookup_hardware(current["catalog_name"])
    except UnknownHardwareError:
        return None


def workload_from_report(report, *, options: ExecutionOptions | None = None,
                         optimizer_impl: str | None = None, precision: Any = None,
                         channels_last: bool = False) -> Workload:
    """The measured step as a `Workload` (anchored when the device is a catalog GPU).

    ``precision``: None (as the run) or another training precision, "fp8" included: the recorded ops
    re-tuned to it (`reproject.py`); the units keep the measured ops in ``measured_units``.
    ``channels_last``: at a half precision the run's convolutions take channels-last tensors (else NCHW,
    which pays cuDNN's layout transforms)."""
    current = report.current or {}
    measured = report.measured or {}
    plan = report.plan or {}
    deepspeed = current.get("deepspeed") or {}
    memory = measured.get("memory") or {}
    run_precision = recorded_precision(current)
    target = requested_precision(precision, run_precision, current)
    anchor = anchor_accelerator(current)
    on_cpu = current.get("device") == "cpu"
    layers = ((measured.get("layers") or {}).get("layers")) or []
    units, params, opt_kind, fwd_written, op_seconds, param_layers, compiled = _units(layers, run_precision)
    precision, measured_units, changed = run_precision, None, None
    if target is not None:
        fused = (options or ExecutionOptions()).compiled or compiled
        changed = reproject_units(units, layers, run_precision, target, fused=fused, channels_last=channels_last)
        precision, measured_units, units = target, units, changed.units
    accumulate = int(deepspeed.get("gradient_accumulation_steps") or plan.get("accumulate") or 1)
    # the session's batches per optimizer step: the micro-batches, except a DeepSpeed pipeline's, whose train_batch
    # is one batch holding them all (its plan says 1)
    batches = int(plan.get("accumulate") or accumulate)
    step_s = _measured_step(report, batches)
    data_s = _data_per_step(measured, batches)
    world = int(memory.get("world") or current.get("devices") or 1)
    zero = ZeroConfig.from_dict(deepspeed) if deepspeed else ZeroConfig.from_sharding(memory.get("sharding"))
    batch = current.get("batch_size") or deepspeed.get("micro_batch_per_gpu")
    activation, act_measured = _activations(memory, fwd_written, params, run_precision)
    if changed is not None and activation is not None:
        activation *= memory_scale(run_precision, target)
    optimizer, known = _optimizer_name(current.get("optimizer"), opt_kind)
    named = optimizer_impl or current.get("optimizer_impl")
    tensors = int(current.get("param_tensors") or 2 * param_layers or 1)
    costs = HostCosts.from_dict(measured["host"]) if _has_costs(measured.get("host")) else default_host_costs()
    workload = Workload(
        units=units, params=params, precision=precision, optimizer=optimizer,
        batch_size=int(batch) if batch else None, accumulate=accumulate, world=world, data_s=data_s,
        activation_bytes=activation, activations_measured=act_measured,
        state=StateAccount.from_measured(memory, zero, world) if changed is None else None, anchor=anchor,
        current_kind="cpu" if on_cpu else "gpu", measured_step_s=step_s, zero=zero,
        param_tensors=[int(params // tensors)] * tensors if params else [],
        optimizer_impl=named if known else None,
        optimizer_ran=(named or ("forloop" if on_cpu else "foreach")) if known else None,
        host_costs=costs, host_issue_s=(measured.get("host") or {}).get("issue_s"),
        options=options or ExecutionOptions(), ran_compiled=compiled, measured_units=measured_units,
        reprojected_from=run_precision.name if changed is not None else None)
    if on_cpu:
        _cpu_host_share(workload, measured, step_s, data_s, op_seconds, batches)
        workload.input_bytes = _input_bytes(layers)
    _add_notes(workload, current, run_precision, target, changed)
    return workload


def _add_notes(workload: Workload, current: dict[str, Any], run_precision: Precision, target: Precision | None,
               changed: Any) -> None:
    """The workload's notes: a re-projection to another precision (and its own notes), absolute target times
    (no catalog GPU measured), GEMMs off the fast tensor-core kernels."""
    if changed is not None:
        workload.notes.append(reprojection_note(run_precision.name, target) + "; model state derived at "
                              f"{target.name}, activations x{memory_scale(run_precision, target):.2f}")
        workload.notes.extend(changed.notes)
    if workload.anchor is None:
        workload.notes.append(f"measured on {current.get('name') or current.get('device', 'an unknown device')}: "
                              "target times are absolute predictions, not anchored on measurements")
    ops = workload.flat().distinct_counts()
    for note in (unaligned_gemm_note(ops), conv_search_note(ops, workload.precision)):
        if note:
            workload.notes.append(note)


# A mean this much above the fast steps' pace was slowed by something else (a quiet host's clean steps
# scatter by a few percent: the 20th percentile sits 2-5% under their clipped mean).
_SLOWED_MEAN = 0.85


def _units(layers: list[dict], precision):
    units: list[Unit] = []
    params = fwd_written = 0.0
    opt_kind = None
    op_seconds = {p: 0.0 for p in PHASES}
    param_layers = 0
    compiled = False
    specs: dict[tuple, list] = {}
    # one (spec, calls) tuple for every equal entry of the report (a model's repeated layers): each new tuple holding
    # a spec is an object the garbage collector tracks, and a 500-layer table made thousands per projection
    entries: dict[tuple[int, float], tuple[OpSpec, float]] = {}
    for layer in layers:
        layer_params = float(layer.get("params") or 0)
        params += layer_params
        param_layers += 1 if layer_params > 0 and layer.get("name") != "optimizer" else 0
        compiled = compiled or str(layer.get("module_type", "")).endswith("(compiled)")
        by_phase: dict[str, list[tuple[OpSpec, float]]] = {"fwd": [], "bwd": [], "opt": []}
        for op in layer.get("ops") or ():
            phase = op.get("phase", "fwd")
            ops = by_phase.get(phase)
            if ops is None:
                phase, ops = "fwd", by_phase["fwd"]
            spec = _cached_spec(op, precision, specs)
            count = float(op.get("count_per_step") or 0)
            entry = entries.get((id(spec), count))
            if entry is None:
                entry = entries[id(spec), count] = (spec, count)
            ops.append(entry)
            op_seconds[phase] += float(op.get("seconds_per_step") or 0.0)
            op_class = spec.op_class
            if phase == "fwd" and op_class != "other" and op_class != "optimizer":
                fwd_written += spec.bytes_written * count
            elif op_class == "optimizer" and "kind" in spec.dims:
                opt_kind = max(opt_kind or 0, int(spec.dims["kind"]))
        for phase, ops in by_phase.items():
            seconds = layer.get(_PHASE_FIELDS[phase])
            if ops or seconds:
                units.append(Unit(str(layer.get("name", "?")), phase, ops,
                                  float(seconds) if seconds is not None else None))
    fwd = [u for u in units if u.phase == "fwd"]
    order = fwd + [u for u in reversed(units) if u.phase == "bwd"] + [u for u in units if u.phase == "opt"]
    return order, params, opt_kind, fwd_written, op_seconds, param_layers, compiled


def _has_costs(host: Any) -> bool:
    return isinstance(host, dict) and all(k in host for k in ("fwd_op_s", "bwd_op_s", "aten_op_s", "opt_step_s"))


def _optimizer_name(name: Any, kind: int | None) -> tuple[str, bool]:
    """(memory name, whether torch.optim's kernels can be synthesised for it). An optimizer this
    projection does not know (DeepSpeed's, a third party's) keeps its measured kernels on every target."""
    from prenet_callbacks.projection.ops.optimizer_ops import memory_optimizer_name

    fallback = _OPT_KIND.get(kind, "adamw") if kind is not None else "adamw"
    if not name:
        return fallback, kind is not None
    try:
        return memory_optimizer_name(str(name).lower()), True
    except ValueError:
        return fallback, False


def _cpu_host_share(workload: Workload, measured: dict, step_s: float | None, data_s: float,
                    op_seconds: dict[str, float], accumulate: int) -> None:
    """A CPU run's own host time per step beyond its ops (Python, autograd engine), per unit.

    The clean step minus data wait, the framework's time between phases (``step_phases.other_s``) and
    the ops' measured time is the model's Python and autograd work; it is spread over the phases as
    the profiled window saw it and within a phase by kernel count. It stays as measured on a GPU host.
    On a busy machine it comes from what the wait slowed least (`_busy_host`)."""
    phases = measured.get("step_phases") or {}
    other = float(phases.get("other_s") or 0.0)
    workload.fixed_host_s = other
    if not step_s:
        return
    table = measured.get("layers") or {}
    overhead = float(table.get("overhead_s") or 0.0)
    per_unit = workload.measured_kernels()
    kernels = {p: sum(k for u, k in zip(workload.units, per_unit) if u.phase == p) for p in PHASES}
    all_kernels = sum(kernels.values()) or 1.0
    raw = {}
    for p, field in _PHASE_FIELDS.items():
        window = float(phases.get(field) or 0.0)
        raw[p] = max(0.0, window - op_seconds[p] - overhead * kernels[p] / all_kernels)
    total_raw = sum(raw.values())
    beside_ops = data_s + other + sum(op_seconds.values())
    python = max(0.0, step_s - beside_ops)
    found = measured.get("contention") or {}
    if found.get("busy"):
        python = _busy_host(workload, found, step_s, accumulate, python=python, other=other, data_s=data_s,
                            ops_s=sum(op_seconds.values()), window_python=total_raw if phases.get("total_s") else None)
        if python is None:
            return   # not readable on this busy machine: eager PyTorch's per-op host costs on this CPU instead
    weights = {p: (raw[p] / total_raw if total_raw > 0 else kernels[p] / all_kernels) for p in PHASES}
    for unit, unit_kernels in zip(workload.units, per_unit.tolist()):
        share = weights[unit.phase] * unit_kernels / kernels[unit.phase] if kernels[unit.phase] else 0.0
        unit.python_s = python * share


def _busy_host(workload: Workload, found: dict, step_s: float, accumulate: int, *, python: float, other: float,
               data_s: float, ops_s: float, window_python: float | None) -> float | None:
    """On a busy machine (`contention`), the host times from what the wait slowed least, with one note; returns
    the run's own Python time per step.

    What the timed steps hold besides Python is read as clean as it was measured: the ops and the framework's
    time between phases (both measured in the profiled window) less the share of time the threads waited up to
    its close, the data wait (measured on the timed steps) from `_busy_data`. The Python time is then the
    smallest of the mean step's residual (``python``: the ops as measured), the mean step less the share the
    threads waited since, the 20th-percentile step when it is clearly under the mean, each less those clean
    parts, and the profiled window's own time beside its ops less its wait (None without a window), which bounds
    the others but is never the figure alone (the per-module profiler adds to a step's Python: 2-8x on quiet runs).
    A residual of zero is not a measurement: it says the parts were measured on steps slowed more than the step
    they are taken from (a window run while the machine was busiest); when every residual is zero the Python time
    is unread (None) and the rows use eager PyTorch's per-op host costs measured on this CPU, as `estimate` does."""
    wait, window_wait = found.get("cpu_wait") or 0.0, found.get("window_cpu_wait") or 0.0
    workload.fixed_host_s = other * (1.0 - window_wait)
    workload.data_s, data_how = _busy_data(data_s, wait, found.get("data_p20_s"))
    beside = workload.data_s + workload.fixed_host_s + ops_s * (1.0 - window_wait)
    candidates = [(python, "the mean step")]
    if wait:
        candidates.append((max(0.0, step_s * (1.0 - wait) - beside),
                           f"the mean step less the {wait:.0%} its threads waited for a CPU"))
    quick = found.get("p20_s")
    if quick and quick * accumulate < _SLOWED_MEAN * step_s:
        candidates.append((max(0.0, quick * accumulate - beside), "the 20th-percentile step"))
    residuals = [candidate for candidate in candidates if candidate[0] > 0]
    bound = [] if window_python is None else [(window_python * (1.0 - window_wait), "the profiled window's own time "
                                               "beside its ops" + (f" less the {window_wait:.0%} its threads waited"
                                                                   if window_wait else ""))]
    clean, how = min(residuals + bound, key=lambda candidate: candidate[0]) if residuals else (None, "")
    parts = [f"the run's own Python time {format_step_time(clean)} a step, from {how}"
             + (f" (the mean step {format_step_time(step_s)} gives {format_step_time(python)})" if clean != python else "")
             if clean is not None else "the run's own Python time unread (its ops, timed in the profiled window, "
                                       "outlast its clean steps): eager PyTorch's per-op host cost on this CPU instead"]
    if other > 0 and window_wait > 0:
        parts.append(f"the framework's time between phases {format_step_time(workload.fixed_host_s)} "
                     f"({format_step_time(other)} less its wait)")
    if data_how:
        parts.append(f"the data wait {format_step_time(workload.data_s)} ({data_how})")
    if clean is None or clean != python or len(parts) > 1:
        workload.host_from_clean_steps = True
        workload.notes.append("the machine was busy: host time from what the wait slowed least: " + "; ".join(parts))
    return clean


def _busy_data(data_s: float, wait: float, clean_quantile: float | None) -> tuple[float, str | None]:
    """A busy run's data wait per step, and how it was read: the smaller of the mean less the threads' wait and
    the 20th-percentile wait (a short fetch is often not preempted at all: its quantile is the fetch itself,
    where the mean carries every preemption and the threads' wait understates those of spinning threads)."""
    if data_s <= 0:
        return data_s, None
    candidates = [(data_s, None)]
    if wait > 0:
        candidates.append((data_s * (1.0 - wait), f"{format_step_time(data_s)} less its wait"))
    if clean_quantile is not None and clean_quantile < data_s:
        candidates.append((clean_quantile, f"the 20th-percentile batch's; the mean {format_step_time(data_s)}"))
    return min(candidates, key=lambda candidate: candidate[0])


def _input_bytes(layers: list[dict]) -> float:
    for layer in layers:
        if layer.get("name") == "(root)" or layer is layers[0]:
            return float(((layer.get("features") or {}).get("cm_input_bytes")) or 0.0)
    return 0.0


def _measured_step(report, accumulate: int) -> float | None:
    prediction = report.latest_prediction or {}
    if prediction.get("step_s"):
        return float(prediction["step_s"])
    batch_s = (report.measured or {}).get("batch_s")
    if batch_s:
        return float(batch_s) * accumulate
    phases = (report.measured or {}).get("step_phases") or {}
    return float(phases["total_s"]) if phases.get("total_s") else None


def _data_per_step(measured: dict[str, Any], accumulate: int) -> float:
    if measured.get("data_wait_s") is not None:
        return float(measured["data_wait_s"]) * accumulate
    return float((measured.get("step_phases") or {}).get("data_s") or 0.0)


def _activations(memory: dict[str, Any], fwd_written: float, params: float, precision) -> tuple[float | None, bool]:
    """Activation bytes per device, counted once: the account's ``activations_bytes`` (peak minus
    params, grads and optimizer state); a /1 report's peak minus its state (which left gradients out)
    minus the gradients; else every forward output (an upper estimate)."""
    if memory.get("activations_bytes") is not None:
        return float(memory["activations_bytes"]), True
    peak = memory.get("peak_allocated_bytes") or memory.get("peak_bytes")
    state = memory.get("state_bytes")
    if peak and state is not None:
        return max(0.0, float(peak) - float(state) - params * precision.grad_bytes), True
    if fwd_written > 0:
        return fwd_written, False
    return None, False


def run_shape_from_report(report, workload: Workload) -> RunShape:
    """The work every row describes: the whole run's steps (or those that fit in its time limit).

    The breakdown's fixed and validation parts belong to this fit; when steps ran before it
    (resume, late attach) they are scaled to the whole run in proportion to its steps.
    """
    plan = report.plan or {}
    prediction = report.latest_prediction or {}
    breakdown = prediction.get("breakdown") or {}
    steps = prediction.get("steps") or plan.get("total_steps")
    done = int((report.run or {}).get("start_step") or 0)
    if steps is None and prediction.get("predicted_total_s") is None:
        return RunShape(None, done_steps=done)
    if steps is None and workload.measured_step_s:
        steps = (breakdown.get("train_s") or 0.0) / workload.measured_step_s
    fixed = sum(float(breakdown.get(k) or 0.0) for k in ("setup_s", "checkpoints_s", "epoch_boundaries_s"))
    validation = float(breakdown.get("validation_s") or 0.0)
    if steps and done and steps > done:
        validation *= steps / (steps - done)  # this fit's validation covers only its own steps
    measured = report.measured or {}
    return RunShape(float(steps) if steps is not None else None, fixed, validation, done,
                    fits=int((report.run or {}).get("fits") or 1), profiled_steps=int(measured.get("profiled_steps") or 0),
                    compile_s=float(measured.get("compile_s") or 0.0))
