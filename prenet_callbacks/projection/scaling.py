"""Device time of each unit of one step on target GPUs: anchored on measurements, or absolute.

Anchored (the measured device is a catalog GPU): each unit (module x phase) takes its measured time
times predicted(target) / predicted(current), so what the predictor gets wrong on both devices alike
cancels out; the target's ops may differ from the measured ones (another SDPA kernel, another
optimizer implementation, fused by compile), and the ratio is taken between what runs on each.
Absolute (CPU or unknown device, or `estimate`): the sum of predicted op times.

The host side (who issues these kernels, and how fast) is `host.py`'s job.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.workload import PHASES, Unit, Variant, Workload


@dataclass(frozen=True)
class DeviceTimes:
    """Per-unit device seconds on each target, ``(units, targets)``, and each target's band."""

    per_unit: np.ndarray
    kernels: np.ndarray            # (units, targets)
    phase_of: np.ndarray           # (units,) index into PHASES
    method: str                    # "anchored" | "absolute"
    relative_error: np.ndarray     # (targets,)
    unmodelled_share: np.ndarray   # (targets,)

    def phase_totals(self, t: int) -> dict[str, float]:
        return {p: float(self.per_unit[self.phase_of == i, t].sum()) for i, p in enumerate(PHASES)}


def _key(spec: OpSpec) -> tuple:
    return (spec.op_class, spec.dtype, spec.flops, spec.bytes_read, spec.bytes_written, spec.tf32,
            tuple(sorted(spec.dims.items())))


def unit_matrix(units: list[Unit], devices: Sequence, predictor) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Predicted seconds per unit and device, ``(units, devices)``, and per op class ``{class: (devices,)}``."""
    unique: dict[tuple, int] = {}
    specs: list[OpSpec] = []
    for unit in units:
        for spec, _ in unit.ops:
            key = _key(spec)
            if key not in unique:
                unique[key] = len(specs)
                specs.append(spec)
    n_units, n_dev = len(units), len(devices)
    per_unit = np.zeros((n_units, n_dev))
    by_class: dict[str, np.ndarray] = {}
    if not specs or not n_dev:
        return per_unit, by_class
    times = predictor.predict_matrix(specs, list(devices))  # (ops, devices)
    for u, unit in enumerate(units):
        for spec, count in unit.ops:
            row = times[unique[_key(spec)]] * count
            per_unit[u] += row
            by_class.setdefault(spec.op_class, np.zeros(n_dev))
            by_class[spec.op_class] += row
    return per_unit, by_class


def device_times(workload: Workload, accelerators: Sequence, variants: Sequence[Variant], predictor) -> DeviceTimes:
    """Device seconds of every unit on each target accelerator under its variant."""
    n_units, n = len(workload.units), len(accelerators)
    anchor = workload.anchor
    anchored = anchor is not None and any(u.measured_s is not None for u in workload.units)
    per_unit = np.zeros((n_units, n))
    kernels = np.zeros((n_units, n))
    rel = np.full(n, 0.3)
    unmodelled = np.zeros(n)
    if anchored:
        pred_anchor = unit_matrix(workload.units, [anchor], predictor)[0][:, 0]
        measured = np.array([u.measured_s if u.measured_s is not None else np.nan for u in workload.units])
        known = ~np.isnan(measured)
        total_anchor = pred_anchor[known].sum()
        calibration = measured[known].sum() / total_anchor if total_anchor > 0 else 1.0
    groups: dict[Variant, list[int]] = {}
    for t, variant in enumerate(variants):
        groups.setdefault(variant, []).append(t)
    for variant, members in groups.items():
        units = workload.units_for(variant)
        pred, by_class = unit_matrix(units, [accelerators[t] for t in members], predictor)
        counts = np.array([u.kernels for u in units])
        classes = sorted(by_class)
        errors = np.array([predictor.relative_error(c) for c in classes]) if classes else np.zeros(0)
        for j, t in enumerate(members):
            column = pred[:, j]
            if anchored:
                with np.errstate(divide="ignore", invalid="ignore"):
                    global_ratio = column[known].sum() / total_anchor if total_anchor > 0 else 1.0
                    ratio = np.where(pred_anchor > 0, column / pred_anchor, global_ratio)
                column = np.where(known, np.nan_to_num(measured) * ratio, column * calibration)
            per_unit[:, t] = column
            kernels[:, t] = counts
            shares = np.array([by_class[c][j] for c in classes])
            if shares.sum() > 0:
                rel[t] = float((shares * errors).sum() / shares.sum())
                unmodelled[t] = float(sum(by_class[c][j] for c in classes if not _modelled_class(predictor, c))
                                      / shares.sum())
    phase_of = np.array([PHASES.index(u.phase) if u.phase in PHASES else 0 for u in workload.units], dtype=int)
    return DeviceTimes(per_unit, kernels, phase_of, "anchored" if anchored else "absolute", rel, unmodelled)


def _modelled_class(predictor, op_class: str) -> bool:
    models = getattr(predictor, "models", None)
    if models is None:
        return True
    from predictor_models.predictor.expand import PROXIED

    if op_class in models:
        return True
    proxy = PROXIED.get(op_class)
    return bool(proxy) and all(p in models for p in proxy.split("+"))
