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
from predictor_models.predictor.price_table import PriceTable
from prenet_callbacks.projection.ops.flat import Flat, flatten
from prenet_callbacks.projection.pricing.fp8_rates import predict_times
from prenet_callbacks.projection.ops.workload import PHASES, Unit, Variant, Workload


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

    def column(self, t: int) -> "DeviceTimes":
        """Target ``t``'s times alone, as if it had been priced by itself."""
        return DeviceTimes(self.per_unit[:, t:t + 1], self.kernels[:, t:t + 1], self.phase_of, self.method,
                           self.relative_error[t:t + 1], self.unmodelled_share[t:t + 1])


class PriceMemo:
    """Predicted seconds of the op specs one projection has already priced, per device: the ranks of its layout
    targets share most of their ops (every op a split leaves whole is the same spec object), and each is priced
    once. Keyed by object identity (a row per spec, a NumPy column per device, NaN where not priced); the specs and
    devices are kept alive with it."""

    def __init__(self) -> None:
        self._table = PriceTable()        # rows by spec id, columns by device id
        self._kept: list[Sequence] = []   # what the ids name stays alive while the memo does

    def prefetch(self, predictor, specs: Sequence[OpSpec], devices: Sequence) -> None:
        """Price, in one call, every spec not yet priced on every one of ``devices`` (each distinct device once)."""
        distinct = list({id(device): device for device in devices}.values())
        if specs and distinct:
            self.times(predictor, specs, distinct)

    def times(self, predictor, specs: Sequence[OpSpec], devices: Sequence) -> np.ndarray:
        """`predict_times` of ``specs`` on ``devices``, ``(ops, devices)``, predicting only what is new."""
        index = self._table.rows(list(map(id, specs)))
        columns = self._table.columns(list(map(id, devices)))
        times = self._table.gather(index, columns)
        absent = np.isnan(times).any(axis=1)
        if absent.any():
            first: dict[int, int] = {}   # each absent spec's row, at its first position
            rows_of = index.tolist()
            for position in np.flatnonzero(absent).tolist():
                first.setdefault(rows_of[position], position)
            missing = [specs[position] for position in first.values()]
            found = predict_times(predictor, missing, devices)
            rows = np.fromiter(first.keys(), dtype=np.int64, count=len(first))
            for j, column in enumerate(columns):
                column[rows] = found[:, j]
            self._kept += [missing, list(devices)]
            times = self._table.gather(index, columns)   # read again only where something was priced
        return times


def unit_matrix(units: list[Unit] | Flat, devices: Sequence, predictor,
                memo: PriceMemo | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Predicted seconds per unit and device, ``(units, devices)``, and per op class ``{class: (devices,)}``;
    ``memo`` prices only the specs it has not seen."""
    flat = units if isinstance(units, Flat) else flatten(units)
    n_dev = len(devices)
    if not flat.specs or not n_dev:
        return np.zeros((flat.n_units, n_dev)), {}
    # "8x H100" and "H100" are one device to the predictor: predict each distinct device once
    column: dict[int, int] = {}
    distinct = []
    for device in devices:
        if id(device) not in column:
            column[id(device)] = len(distinct)
            distinct.append(device)
    # (ops, distinct devices); fp8 GEMMs via bf16 twins
    times = memo.times(predictor, flat.specs, distinct) if memo else predict_times(predictor, flat.specs, distinct)
    if len(distinct) < n_dev:
        times = times[:, [column[id(d)] for d in devices]]
    per_spec = times * flat.spec_counts[:, None]
    return flat.per_unit(times), {name: per_spec[mask].sum(axis=0) for name, mask in flat.class_masks.items()}


def device_times(workload: Workload, accelerators: Sequence, variants: Sequence[Variant], predictor,
                 memo: PriceMemo | None = None) -> DeviceTimes:
    """Device seconds of every unit on each target accelerator under its variant (``memo``: `PriceMemo`)."""
    n_units, n = len(workload.units), len(accelerators)
    anchor = workload.anchor
    anchored = workload.anchored()
    per_unit = np.zeros((n_units, n))
    kernels = np.zeros((n_units, n))
    rel = np.full(n, 0.3)
    unmodelled = np.zeros(n)
    groups: dict[int, tuple[Flat, list[int]]] = {}
    for t, variant in enumerate(variants):
        flat = workload.flat_for(variant)
        groups.setdefault(id(flat), (flat, []))[1].append(t)
    base = workload.flat()
    measured = workload.measured_flat()   # the run's own ops: base, unless re-tuned to another precision
    if anchored and measured is base and id(base) not in groups:
        groups[id(base)] = (base, [])
    if memo is not None and len(groups) > 1:
        # the variants' flats share most of their specs: one predictor call for all of them, since a call's cost
        # is mostly per distinct op (its columns, expansion and grids), not per device
        memo.prefetch(predictor, [spec for flat, _ in groups.values() for spec in flat.specs],
                      accelerators + ([anchor] if anchored else []))
    pred_anchor = None
    for flat, members in groups.values():
        with_anchor = anchored and flat is base and measured is base
        devices = [accelerators[t] for t in members] + ([anchor] if with_anchor else [])
        pred, by_class = unit_matrix(flat, devices, predictor, memo)
        if with_anchor:
            pred_anchor = pred[:, -1]
        m = len(members)
        per_unit[:, members] = pred[:, :m]
        kernels[:, members] = flat.kernels[:, None]
        if by_class and m:
            classes = sorted(by_class)
            errors = np.array([predictor.relative_error(c) for c in classes])
            modelled = np.array([_modelled_class(predictor, c) for c in classes])
            shares = np.array([by_class[c][:m] for c in classes])   # (classes, members)
            total = shares.sum(axis=0)
            some = total > 0
            safe = np.where(some, total, 1.0)
            rel[members] = np.where(some, (shares * errors[:, None]).sum(axis=0) / safe, rel[members])
            unmodelled[members] = np.where(some, shares[~modelled].sum(axis=0) / safe, 0.0)
    if anchored and measured is not base:
        pred_anchor = unit_matrix(measured, [anchor], predictor, memo)[0][:, 0]
    if anchored:
        measured = workload.measured_seconds()
        known = ~np.isnan(measured)
        total_anchor = pred_anchor[known].sum()
        calibration = measured[known].sum() / total_anchor if total_anchor > 0 else 1.0
        global_ratio = per_unit[known].sum(axis=0) / total_anchor if total_anchor > 0 else np.ones(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(pred_anchor[:, None] > 0, per_unit / pred_anchor[:, None], global_ratio[None, :])
        per_unit = np.where(known[:, None], np.nan_to_num(measured)[:, None] * ratio, per_unit * calibration)
    return DeviceTimes(per_unit, kernels, workload.phase_index(), "anchored" if anchored else "absolute", rel, unmodelled)


def _modelled_class(predictor, op_class: str) -> bool:
    models = getattr(predictor, "models", None)
    if models is None:
        return True
    from predictor_models.predictor.expand import PROXIED

    if op_class in models:
        return True
    proxy = PROXIED.get(op_class)
    return bool(proxy) and all(p in models for p in proxy.split("+"))
