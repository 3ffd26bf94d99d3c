"""Per-device compute time of one step on target GPUs: anchored on measurements, or absolute.

Anchored (the measured device is a catalog GPU): each unit (module x phase) takes its measured time
times predicted(target) / predicted(current), so what the predictor gets wrong on both devices alike
cancels out. Absolute (CPU or unknown device, or `estimate`): the sum of predicted op times.

Either way the GPU cannot run faster than the host issues kernels: eager PyTorch spends a few
microseconds of Python, dispatcher and launch per kernel, so a step is at least
``kernels x HOST_LAUNCH_S`` however fast the target is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.workload import PHASES, Workload

# Host cost per launched kernel in eager PyTorch (Python op call + dispatcher + cudaLaunchKernel):
# 4-10 us on current CPUs; a common figure for eager mode on server CPUs.
HOST_LAUNCH_S = 6e-6


@dataclass(frozen=True)
class DeviceTime:
    """Compute time of one optimizer step on one device of a target, per phase."""

    phases: dict[str, float]     # fwd / bwd / opt seconds
    method: str                  # "anchored" | "absolute"
    relative_error: float        # half-width of the band, as a fraction
    host_bound: bool             # the kernel-issue floor decided the time
    unmodelled_share: float      # share of the time predicted without a trained model

    @property
    def total(self) -> float:
        return sum(self.phases.values())


def _key(spec: OpSpec) -> tuple:
    return (spec.op_class, spec.dtype, spec.flops, spec.bytes_read, spec.bytes_written, spec.tf32,
            tuple(sorted(spec.dims.items())))


def unit_matrix(workload: Workload, devices: Sequence, predictor) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Predicted seconds per unit and device, ``(units, devices)``, and per op class ``{class: (devices,)}``."""
    unique: dict[tuple, int] = {}
    specs: list[OpSpec] = []
    for unit in workload.units:
        for spec, _ in unit.ops:
            key = _key(spec)
            if key not in unique:
                unique[key] = len(specs)
                specs.append(spec)
    n_units, n_dev = len(workload.units), len(devices)
    per_unit = np.zeros((n_units, n_dev))
    by_class: dict[str, np.ndarray] = {}
    if not specs or not n_dev:
        return per_unit, by_class
    times = predictor.predict_matrix(specs, list(devices))  # (ops, devices)
    for u, unit in enumerate(workload.units):
        for spec, count in unit.ops:
            row = times[unique[_key(spec)]] * count
            per_unit[u] += row
            by_class.setdefault(spec.op_class, np.zeros(n_dev))
            by_class[spec.op_class] += row
    return per_unit, by_class


def device_times(workload: Workload, targets: Sequence, predictor) -> list[DeviceTime]:
    """Compute time of one step on each target accelerator (anchored where the workload allows)."""
    anchor = workload.anchor
    anchored = anchor is not None and any(u.measured_s is not None for u in workload.units)
    devices = list(targets) + ([anchor] if anchored else [])
    per_unit, by_class = unit_matrix(workload, devices, predictor)
    n = len(targets)
    phase_of = np.array([PHASES.index(u.phase) if u.phase in PHASES else 0 for u in workload.units], dtype=int)
    if anchored:
        pred_anchor = per_unit[:, n]
        measured = np.array([u.measured_s if u.measured_s is not None else np.nan for u in workload.units])
        known = ~np.isnan(measured)
        total_pred_anchor = pred_anchor[known].sum()
        calibration = measured[known].sum() / total_pred_anchor if total_pred_anchor > 0 else 1.0
    kernels = workload.kernels
    classes = sorted(by_class)
    errors = np.array([predictor.relative_error(c) for c in classes]) if classes else np.zeros(0)
    out = []
    for d in range(n):
        pred = per_unit[:, d]
        if anchored:
            global_ratio = pred[known].sum() / total_pred_anchor if total_pred_anchor > 0 else 1.0
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(pred_anchor > 0, pred / pred_anchor, global_ratio)
            unit_s = np.where(known, np.nan_to_num(measured) * ratio, pred * calibration)
        else:
            unit_s = pred
        phases = {p: float(unit_s[phase_of == i].sum()) for i, p in enumerate(PHASES)}
        total = sum(phases.values())
        floor = kernels * HOST_LAUNCH_S
        host_bound = floor > total
        if host_bound and total > 0:
            phases = {p: v * floor / total for p, v in phases.items()}
        elif host_bound:
            phases = {"fwd": floor / 3, "bwd": floor * 2 / 3, "opt": 0.0}
        shares = np.array([by_class[c][d] for c in classes])
        rel = float((shares * errors).sum() / shares.sum()) if shares.sum() > 0 else 0.3
        modelled = [c for c in classes if _modelled_class(predictor, c)]
        unmodelled = float(sum(by_class[c][d] for c in classes if c not in modelled) / shares.sum()) \
            if shares.sum() > 0 else 0.0
        out.append(DeviceTime(phases, "anchored" if anchored else "absolute", rel, host_bound, unmodelled))
    return out


def _modelled_class(predictor, op_class: str) -> bool:
    models = getattr(predictor, "models", None)
    if models is None:
        return True
    from predictor_models.predictor.expand import PROXIED

    if op_class in models:
        return True
    proxy = PROXIED.get(op_class)
    return bool(proxy) and all(p in models for p in proxy.split("+"))
