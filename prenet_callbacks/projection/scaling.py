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


@dataclass(frozen=True)
class _Flat:
    """The (unit, op, count) entries of a list of units, with their distinct op specs."""

    specs: list
    unit_of: np.ndarray
    op_of: np.ndarray
    counts: np.ndarray
    class_masks: dict


def _flatten(units: list[Unit]) -> _Flat:
    unique: dict[tuple, int] = {}
    by_object: dict[int, int] = {}
    specs: list[OpSpec] = []
    unit_of, op_of, counts = [], [], []
    for u, unit in enumerate(units):
        for spec, count in unit.ops:
            index = by_object.get(id(spec))
            if index is None:
                key = _key(spec)
                index = unique.get(key)
                if index is None:
                    index = unique[key] = len(specs)
                    specs.append(spec)
                by_object[id(spec)] = index
            unit_of.append(u)
            op_of.append(index)
            counts.append(count)
    classes = np.array([specs[i].op_class for i in op_of], dtype=object)
    masks = {name: classes == name for name in set(classes.tolist())}
    return _Flat(specs, np.asarray(unit_of, dtype=int), np.asarray(op_of, dtype=int),
                 np.asarray(counts, dtype=float), masks)


def unit_matrix(units: list[Unit], devices: Sequence, predictor, flat: _Flat | None = None,
                ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Predicted seconds per unit and device, ``(units, devices)``, and per op class ``{class: (devices,)}``."""
    flat = flat or _flatten(units)
    n_units, n_dev = len(units), len(devices)
    per_unit = np.zeros((n_units, n_dev))
    if not flat.specs or not n_dev:
        return per_unit, {}
    times = predictor.predict_matrix(flat.specs, list(devices))  # (ops, devices)
    rows = times[flat.op_of] * flat.counts[:, None]
    np.add.at(per_unit, flat.unit_of, rows)
    return per_unit, {name: rows[mask].sum(axis=0) for name, mask in flat.class_masks.items()}


def device_times(workload: Workload, accelerators: Sequence, variants: Sequence[Variant], predictor) -> DeviceTimes:
    """Device seconds of every unit on each target accelerator under its variant."""
    n_units, n = len(workload.units), len(accelerators)
    anchor = workload.anchor
    anchored = anchor is not None and any(u.measured_s is not None for u in workload.units)
    per_unit = np.zeros((n_units, n))
    kernels = np.zeros((n_units, n))
    rel = np.full(n, 0.3)
    unmodelled = np.zeros(n)
    groups: dict[int, tuple[list[Unit], list[int]]] = {}
    for t, variant in enumerate(variants):
        units = workload.units_for(variant)
        groups.setdefault(id(units), (units, []))[1].append(t)
    if anchored and id(workload.units) not in groups:
        groups[id(workload.units)] = (workload.units, [])
    pred_anchor = None
    for units, members in groups.values():
        with_anchor = anchored and units is workload.units
        devices = [accelerators[t] for t in members] + ([anchor] if with_anchor else [])
        pred, by_class = unit_matrix(units, devices, predictor)
        if with_anchor:
            pred_anchor = pred[:, -1]
        counts = np.array([u.kernels for u in units])
        classes = sorted(by_class)
        errors = np.array([predictor.relative_error(c) for c in classes]) if classes else np.zeros(0)
        for j, t in enumerate(members):
            per_unit[:, t] = pred[:, j]
            kernels[:, t] = counts
            shares = np.array([by_class[c][j] for c in classes])
            if shares.sum() > 0:
                rel[t] = float((shares * errors).sum() / shares.sum())
                unmodelled[t] = float(sum(by_class[c][j] for c in classes if not _modelled_class(predictor, c))
                                      / shares.sum())
    if anchored:
        measured = np.array([u.measured_s if u.measured_s is not None else np.nan for u in workload.units])
        known = ~np.isnan(measured)
        total_anchor = pred_anchor[known].sum()
        calibration = measured[known].sum() / total_anchor if total_anchor > 0 else 1.0
        global_ratio = per_unit[known].sum(axis=0) / total_anchor if total_anchor > 0 else np.ones(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(pred_anchor[:, None] > 0, per_unit / pred_anchor[:, None], global_ratio[None, :])
        per_unit = np.where(known[:, None], np.nan_to_num(measured)[:, None] * ratio, per_unit * calibration)
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
