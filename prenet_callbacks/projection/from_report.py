"""Build a `Workload` and a `RunShape` from a saved report (no model needed).

Reads ``measured.layers`` (per-module ops and times), ``measured.step_phases`` / ``data_wait_s``,
``current`` (device, precision, ``deepspeed``, optional ``batch_size``), ``plan`` and the latest
prediction's breakdown.
"""
from __future__ import annotations

from typing import Any

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.parallel import ZeroConfig
from prenet_callbacks.projection.precision import parse_precision, retune
from prenet_callbacks.projection.project import RunShape
from prenet_callbacks.projection.workload import Unit, Workload

_PHASE_FIELDS = {"fwd": "forward_s", "bwd": "backward_s", "opt": "optimizer_s"}
_OPT_KIND = {0: "sgd", 1: "sgd_momentum", 2: "adamw"}


def _spec(d: dict[str, Any]) -> OpSpec:
    return OpSpec(op_class=d["op_class"], dtype=d.get("dtype", "float32"), flops=float(d.get("flops", 0)),
                  bytes_read=float(d.get("bytes_read", 0)), bytes_written=float(d.get("bytes_written", 0)),
                  dims=dict(d.get("dims") or {}), tf32=bool(d.get("tf32", False)), name=d.get("name", ""))


def anchor_accelerator(current: dict[str, Any]):
    """The catalog entry of the measured GPU, or None (CPU, unknown GPU)."""
    if current.get("device") not in ("cuda", "rocm") or not current.get("catalog_name"):
        return None
    from predictor_models.hardware import UnknownHardwareError, lookup_hardware

    try:
        return lookup_hardware(current["catalog_name"])
    except UnknownHardwareError:
        return None


def workload_from_report(report) -> Workload:
    """The measured step as a `Workload` (anchored when the device is a catalog GPU)."""
    current = report.current or {}
    measured = report.measured or {}
    plan = report.plan or {}
    deepspeed = current.get("deepspeed") or {}
    precision = parse_precision(current.get("precision") or "32-true",
                                current.get("float32_matmul_precision") or "highest",
                                conv_tf32=bool(current.get("cudnn_allow_tf32", True)))
    anchor = anchor_accelerator(current)
    layers = ((measured.get("layers") or {}).get("layers")) or []
    units: list[Unit] = []
    params = 0.0
    opt_kind = None
    fwd_written = 0.0
    for layer in layers:
        params += float(layer.get("params") or 0)
        by_phase: dict[str, list[tuple[OpSpec, float]]] = {"fwd": [], "bwd": [], "opt": []}
        for op in layer.get("ops") or []:
            phase = op.get("phase", "fwd")
            phase = phase if phase in by_phase else "fwd"
            spec = retune(_spec(op["spec"]), precision)
            count = float(op.get("count_per_step") or 0)
            by_phase[phase].append((spec, count))
            if phase == "fwd" and spec.op_class not in ("other", "optimizer"):
                fwd_written += spec.bytes_written * count
            if spec.op_class == "optimizer" and "kind" in spec.dims:
                opt_kind = max(opt_kind or 0, int(spec.dims["kind"]))
        for phase, ops in by_phase.items():
            seconds = layer.get(_PHASE_FIELDS[phase])
            if ops or seconds:
                units.append(Unit(str(layer.get("name", "?")), phase, ops,
                                  float(seconds) if seconds is not None else None))
    accumulate = int(deepspeed.get("gradient_accumulation_steps") or plan.get("accumulate") or 1)
    step_s = _measured_step(report, accumulate)
    data_s = _data_per_step(measured, accumulate)
    host_s = data_s
    measured_units = sum(u.measured_s or 0.0 for u in units)
    if anchor is not None and step_s is not None and measured_units > 0:
        # what the GPU does not explain: data wait, Python and framework time between kernels
        host_s = max(data_s, step_s - measured_units)
    batch = current.get("batch_size") or deepspeed.get("micro_batch_per_gpu")
    activation, act_measured = _activations(measured, fwd_written)
    if current.get("optimizer"):
        optimizer = str(current["optimizer"]).lower()
    else:
        optimizer = _OPT_KIND.get(opt_kind, "adamw") if opt_kind is not None else "adamw"
    workload = Workload(units=units, params=params, precision=precision, optimizer=optimizer,
                        batch_size=int(batch) if batch else None, accumulate=accumulate,
                        world=int(current.get("devices") or 1), host_s=host_s, activation_bytes=activation,
                        activations_measured=act_measured, anchor=anchor, measured_step_s=step_s,
                        zero=ZeroConfig.from_dict(deepspeed))
    if anchor is None:
        workload.notes.append(f"measured on {current.get('name') or current.get('device', 'an unknown device')}: "
                              "target times are absolute predictions, not anchored on measurements")
    return workload


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


def _activations(measured: dict[str, Any], fwd_written: float) -> tuple[float | None, bool]:
    """Activation bytes per device: measured peak minus model state where the report has it."""
    memory = measured.get("memory") or {}
    peak = memory.get("peak_allocated_bytes") or memory.get("peak_bytes")
    state = memory.get("state_bytes")
    if peak and state is not None:
        return max(0.0, float(peak) - float(state)), True
    if fwd_written > 0:
        # every forward output is assumed kept for backward: an upper estimate
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
    if steps is None and prediction.get("predicted_total_s") is None:
        return RunShape(None)
    if steps is None and workload.measured_step_s:
        steps = (breakdown.get("train_s") or 0.0) / workload.measured_step_s
    fixed = sum(float(breakdown.get(k) or 0.0) for k in ("setup_s", "checkpoints_s", "epoch_boundaries_s"))
    validation = float(breakdown.get("validation_s") or 0.0)
    done = int((report.run or {}).get("start_step") or 0)
    if steps and done and steps > done:
        validation *= steps / (steps - done)  # this fit's validation covers only its own steps
    return RunShape(float(steps) if steps is not None else None, fixed, validation)
