"""`Predictor`: per-op time = physical bound / learned utilisation, per op class, vectorised over devices."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Sequence

import numpy as np

from predictor_models.op_spec import OpSpec

from .bound import bound_seconds, matrix, roofline_seconds, rooflines
from .devices import MODES, before_tf32 as _before_tf32, device_columns
from .dominance import OPEN_DOWN_MODES, device_key, envelope_sets, stronger_unmeasured, twin_sets
from .expand import PROXIED, conv_kernels, expand, is_depthwise
from .features import FEATURES
from .kernel_features import feature_arrays
from .mlp import predict_ensemble_columns, predict_mlp
from .mono import MonoNet
from .monotone import DESCENDING_DTYPES, HELD_DTYPES, ladder_columns
from .price_table import PriceTable
from .optable import op_columns, op_mode
from . import winograd
from .work_grid import needed_candidates, work_grid

_FP32 = MODES.index("fp32")
# math modes held to their compute twins besides half-precision dtypes (`dominance.twin_sets`): fp32 stays out, for the
# harness lag its training times carry
TWIN_MODES = (MODES.index("tf32"),)

DEFAULT_UTILISATION = 0.5      # for unmodelled ops: bound / 0.5 (documented in the model card)
DEFAULT_RELATIVE_ERROR = 0.30  # band for classes without a held-out measurement
PROXY_EXTRA_ERROR = 0.10       # proxied classes: the proxy's held-out error plus this


@lru_cache(maxsize=1)
def _blas_threads():
    """threadpoolctl's view of the loaded BLAS libraries (scikit-learn's dependency), or None."""
    try:
        from threadpoolctl import ThreadpoolController
        return ThreadpoolController()
    except Exception:  # noqa: BLE001 - without it, predictions only run slower beside a busy process
        return None


def one_blas_thread():
    """A context in which NumPy's BLAS runs on one thread.

    The predictor runs inside training processes whose own threads keep every core busy, and its
    matrices are small: a multi-threaded BLAS then waits for busy cores (7.8 ms instead of 0.4 ms per
    op class measured beside a training run on a 2-core machine)."""
    controller = _blas_threads()
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


@dataclass(frozen=True)
class KernelNetwork:
    """A monotone tiled-kernel network (`mono.py`, `kernel_features.py`) and what it prices: kernels of
    ``classes`` in the math ``modes``, on devices that run those modes on tensor cores (elsewhere, e.g. a
    Pascal GPU's pseudo-fp16, the per-class models keep them). Its members' log-seconds are averaged."""

    classes: tuple[str, ...]
    modes: tuple[str, ...]
    members: tuple[MonoNet, ...]
    inputs: str = "tiled"     # its kind of inputs (`kernel_features.INPUTS`)
    floor_s: float = 0.0      # no kernel priced below this (the fastest kernel-timed one in its training rows)

    def covers(self, cols) -> np.ndarray:
        """Which rows of ``cols`` (`OpColumns`) it prices, before the device's tensor-core check."""
        modes = [MODES.index(m) for m in self.modes]
        return np.isin(cols.op_class, self.classes) & np.isin(cols.mode, modes)

    def log_seconds(self, pairs) -> np.ndarray:
        mono, free = feature_arrays(pairs, self.inputs)
        log_s = (sum(member(mono, free) for member in self.members) / len(self.members)).reshape(pairs.shape)
        return np.maximum(log_s, np.log(self.floor_s)) if self.floor_s > 0 else log_s


class Predictor:
    """Predicts op times on catalog devices.

    ``models`` maps an op class to a list of MLP parameter dicts (an ensemble whose outputs, the log
    of measured/bound, are averaged); ``heldout`` maps an op class to its leave-one-GPU-out MAPE;
    ``networks`` are monotone kernel networks that price what they cover instead (`KernelNetwork`).
    """

    def __init__(self, models: dict[str, list[dict]], metadata: dict, heldout: dict[str, float] | None = None,
                 default_utilisation: float = DEFAULT_UTILISATION,
                 networks: Sequence[KernelNetwork] = ()) -> None:
        unknown = set(models) - set(FEATURES)
        if unknown:
            raise ValueError(f"no feature definition for op classes {sorted(unknown)}")
        self.models = models
        self.networks = tuple(networks)
        self._network_modes = frozenset(m for net in self.networks if "conv" in net.classes for m in net.modes)
        # dtypes whose ops are held monotone in their work (monotone.py); empty: the raw model
        self.monotone: frozenset[str] = HELD_DTYPES
        # dtypes whose pointwise ops and norms are held from above on their grid (work_grid._envelope)
        self.descending: frozenset[str] = DESCENDING_DTYPES
        # each device between the GPUs of its generation below and above it (dominance.py); False: raw
        self.device_envelope: bool = True
        # on half-precision ops, unmeasured GPUs above a device in its up-set too (dominance.stronger_unmeasured)
        self.unmeasured_up_sets: bool = True
        # on FP32 ops, unmeasured GPUs below a device in its down-set too (dominance.OPEN_DOWN_MODES)
        self.open_down_sets: bool = True
        self._memo: PriceTable | None = None   # the `remembering` scope's times: per device, by op
        self._memo_ladder = self._holds()   # the ladder and grids the scope's times were priced with
        self._metadata = dict(metadata)
        self.heldout = dict(heldout or {})
        self.default_utilisation = float(default_utilisation)
        self._modelled = frozenset(models)

    # ---- public API ----------------------------------------------------------------------
    @property
    def metadata(self) -> dict:
        """version, trained_on devices, date, data sources, op classes (modelled and proxied)."""
        return dict(self._metadata)

    def is_modelled(self, op: OpSpec) -> bool:
        """False when no trained model covers the op's class (it gets bound / default utilisation)."""
        return self._kernels(op) is not None

    def relative_error(self, op_class: str, device=None) -> float:
        """Held-out (unseen-GPU) MAPE of the class; proxies add a margin; unknown classes a documented default.

        ``device`` (an accelerator or its name) matters only to a calibrated predictor, whose calibrated
        device has its own, measured, error."""
        if op_class in self.heldout:
            return float(self.heldout[op_class])
        proxy = PROXIED.get(op_class)
        if proxy:
            parts = [self.heldout[p] for p in proxy.split("+") if p in self.heldout]
            if parts:
                return float(max(parts) + PROXY_EXTRA_ERROR)
        return DEFAULT_RELATIVE_ERROR

    def bound_seconds(self, ops: Sequence[OpSpec], device) -> np.ndarray:
        """Physical lower bound per op (max of compute and memory time, plus launch latency), of the fastest
        algorithm the op may run (a 3x3 FP32 convolution's Winograd kernels do fewer multiplies: `winograd.py`)."""
        ops = list(ops)
        if not ops:
            return np.zeros(0)
        direct = rooflines(ops, [device])[:, 0]
        return winograd.least_bound(direct, ops, device, self._kernels)

    def predict_seconds(self, ops: Sequence[OpSpec], device) -> np.ndarray:
        """Predicted seconds per op on one device."""
        return self.predict_matrix(ops, [device])[:, 0]

    def predict_matrix(self, ops: Sequence[OpSpec], devices: Sequence) -> np.ndarray:
        """Predicted seconds, shape ``(len(ops), len(devices))``, all devices at once; no device slower than a measured
        device of its generation it dominates, nor (half-precision ops) faster than one that dominates it
        (`dominance.py`), except a calibrated one, which keeps its own."""
        ops, devices = list(ops), list(devices)
        if not ops or not devices:
            return np.zeros((len(ops), len(devices)))
        # TF32 exists from Ampere on: before it `allow_tf32` changes no kernel, so a TF32 op there is priced as its FP32
        # op; and on an AMD GPU PyTorch runs FP32 convolutions (MIOpen) in FP32 whatever cuDNN's flag says. Only where a
        # network prices the class in FP32 does the flag pick other kernels (a captured FP32 convolution carries cuDNN's
        # default flag; FP32 convolutions are the kernel network's): those ops are priced apart on those GPUs with the
        # flag cleared (no envelope set spans two generations). Elsewhere before Ampere the class models read the same
        # figures either way, and `_predict_enveloped` holds no such GPU to its twins on TF32 ops.
        older = [j for j, device in enumerate(devices) if _fp32_convolutions(device)]
        flagged = [i for i, op in enumerate(ops) if op.tf32 and op.op_class == "conv"] \
            if older and "fp32" in self._network_modes else []
        if not flagged:
            return self._predict_enveloped(ops, devices)
        if len(older) == len(devices):
            return self._predict_enveloped([_without_tf32(op) for op in ops], devices)
        out = self._predict_enveloped(ops, devices)
        out[np.ix_(flagged, older)] = self._predict_enveloped([_without_tf32(ops[i]) for i in flagged],
                                                              [devices[j] for j in older])
        return out

    def _predict_enveloped(self, ops: list[OpSpec], devices: list) -> np.ndarray:
        """`predict_matrix` of ops whose TF32 flags hold on every one of ``devices``."""
        # a step's ops repeat (every layer of a stack): expand and tabulate each distinct op once
        distinct_ops, inverse, keys = _distinct_ops(ops)
        if not self.device_envelope:
            return self._remembered(distinct_ops, keys, devices)[inverse]
        # never slower than a measured device of its generation it dominates, and on half-precision ops never faster
        # than a device of its generation that dominates it (dominance.py): the down-sets and up-sets are priced too
        modes = np.fromiter((op_mode(op) for op in distinct_ops), dtype=np.int64, count=len(distinct_ops))
        # half-precision ops only are raised to the GPUs above: the fp32 training times carry each harness's host lag
        half = np.fromiter((op.dtype in HELD_DTYPES for op in distinct_ops), dtype=bool, count=len(distinct_ops))
        measured = self._metadata.get("trained_on") or ()
        catalog = _catalog_devices()
        # every catalog GPU above one asked for, measured or not, is in its up-set on half-precision ops: priced too
        # (a measured device is never raised by them: each holds it in its down-set, so only unmeasured ones need them)
        trusted = set(measured)
        unmeasured = [d for d in devices if d.name not in trusted]
        above = stronger_unmeasured(unmeasured, catalog, measured) if self.unmeasured_up_sets and half.any() else []
        # an unmeasured device is also held up to its compute twins (same generation, SMs and peaks): priced with them
        named = devices + above
        found = twin_sets(named, catalog, measured)
        named_names = {d.name for d in named}
        asked = named + list({t.name: t for ts in found.values() for t in ts if t.name not in named_names}.values())
        where = {d.name: i for i, d in enumerate(asked)}
        twins = {i: [where[t.name] for t in ts] for i, ts in found.items()}     # by index into ``asked``
        # a TF32 op on a GPU without TF32 is an FP32 one, which no GPU is held to its twins on
        tf32_twins = {i: ts for i, ts in twins.items() if not _before_tf32(asked[i])}
        pool, sets = envelope_sets(asked, catalog, modes.tolist(), measured, unmeasured_above=self.unmeasured_up_sets,
                                   open_modes=OPEN_DOWN_MODES if self.open_down_sets else ())
        times = self._remembered(distinct_ops, keys, pool)
        # a device whose times an adjustment corrects (a calibration measured on it) keeps its own, and raises no
        # other device: what it measured is that machine's, not its generation's
        own = self.adjusted_devices([d.name for d in pool])
        held = half | np.isin(modes, TWIN_MODES)
        bounds = _twin_bounds(distinct_ops, modes, held, asked) if twins else None
        out = np.empty((len(distinct_ops), len(asked)))
        for mode, (ups, downs) in sets.items():
            rows = np.flatnonzero(modes == mode)
            lowest = times[rows][:, _padded([members[:1] if own[members[0]] else members for members in downs])].min(axis=2)
            if twins:
                _hold_to_twins(lowest, times[rows], downs, held[rows], bounds[rows],
                               tf32_twins if mode in TWIN_MODES else twins, own)
            # each asked device's kept up-set (itself first), for every device in one gather
            kept = _padded([up[:1] if own[j] else [e for e in up if e == up[0] or not own[downs[e][0]]]
                            for j, up in enumerate(ups)])
            out[rows, :len(ups)] = np.where(half[rows, None], lowest[:, kept].max(axis=2), lowest[:, kept[:, 0]])
        return out[:, :len(devices)][inverse]

    @contextlib.contextmanager
    def remembering(self):
        """A scope (one projection) in which each op's time on each device is predicted once: later calls with the
        same op and device, and the down-sets of the device envelope that several calls share, read it back."""
        if self._memo is not None:          # already inside one: the outer scope keeps it
            yield self
            return
        self._memo, self._memo_ladder = PriceTable(), self._holds()   # a ladder changed inside the scope bypasses it
        try:
            yield self
        finally:
            self._memo = None

    # ---- internals -------------------------------------------------------------------------
    def _holds(self) -> tuple[frozenset[str], frozenset[str]]:
        """The dtypes held from below and from above: what a remembered time was priced with."""
        return self.monotone, self.descending

    def _remembered(self, ops: list[OpSpec], keys: list | None, devices: list) -> np.ndarray:
        """`_predict_distinct`, reading and filling the `remembering` scope's times where one is open."""
        memo = self._memo
        if memo is None or keys is None or self._memo_ladder != self._holds():
            return self._predict_distinct(ops, devices)
        index = memo.rows(keys)
        known = memo.columns([device_key(d) for d in devices])
        times = memo.gather(index, known)
        missing = np.isnan(times)
        rows, columns = np.flatnonzero(missing.any(axis=1)), np.flatnonzero(missing.any(axis=0))
        if rows.size:
            fresh = self._predict_distinct([ops[i] for i in rows], [devices[j] for j in columns])
            block = np.ix_(rows, columns)
            times[block] = np.where(missing[block], fresh, times[block])   # what was remembered stays as it was
            for c, j in enumerate(columns.tolist()):
                new = missing[rows, j]
                known[j][index[rows[new]]] = fresh[new, c]
        return times

    def _predict_distinct(self, ops: list[OpSpec], devices: list, adjust: bool = True) -> np.ndarray:
        """`predict_matrix` of ops that are (mostly) distinct; ``adjust=False``: before any calibration."""
        out = np.zeros((len(ops), len(devices)))
        virtual, parent, mult, identity = self._expand(ops)
        cols = op_columns(virtual)
        # kernels repeat across ops (a convolution's backward kernels, attention's GEMMs): predict each
        # distinct kernel once and copy its row back
        first, inverse = _distinct(cols)
        distinct = [virtual[i] for i in first]
        unique = cols.take(first)
        # a held pointwise op or norm reads its family's grid of sizes (work_grid.py), not its own prediction, so it
        # is never faster than the same op with less work; its own row is not priced
        descend = np.fromiter((op.dtype in self.descending for op in distinct), dtype=bool, count=len(distinct))
        hold = descend | np.fromiter((op.dtype in self.monotone for op in distinct), dtype=bool, count=len(distinct))
        grid = work_grid(unique, hold, descend=descend)
        own = np.ones(len(distinct), dtype=bool)
        if grid is not None:
            own[grid.held] = False
        kept = np.flatnonzero(own)
        priced = unique if grid is None else unique.take(kept)
        # any other held op is never below the same op with less work (monotone.py); a rung shared by several ops
        # is priced once
        ladder, owner = ladder_columns(distinct, unique, self.monotone)
        if ladder is not None:
            rung_first, rung_inverse = _distinct(ladder)
            priced = priced.concat(ladder.take(rung_first))
        rungs = len(priced)
        if grid is not None:
            # a family held from above reaches far past its members; those rows are priced after the rest, and only
            # where they could lower a member (`_grid_times`)
            candidates, anchors = grid.candidate_rows()
            read_rows = np.setdiff1d(np.arange(len(grid.cols)), candidates, assume_unique=True)
            priced = priced.concat(grid.cols.take(read_rows))
        # a 3x3 FP32 convolution kernel costs the lesser of its direct and its Winograd kernels (winograd.py), both
        # before a calibration, which corrects the lesser as the convolution kernel it is
        found = winograd.alternatives([distinct[i] for i in kept], devices,
                                      lambda parts, on: self._predict_distinct(parts, on, adjust=False))
        with one_blas_thread():
            times = self._times(priced, devices, rungs_from=len(kept), adjust=adjust, alternatives=found)
            if grid is not None:
                grid_times = self._grid_times(grid, times[rungs:], read_rows, candidates, anchors, devices, adjust)
        distinct_times = np.empty((len(distinct), len(devices)))
        distinct_times[kept] = times[:len(kept)]
        if ladder is not None:
            np.maximum.at(distinct_times, owner, times[len(kept):rungs][rung_inverse])
        if grid is not None:
            own_bound = bound_seconds(matrix(unique.take(grid.held), device_columns(devices)))
            distinct_times[grid.held] = grid.held_times(grid_times, own_bound)
        return self._scatter(distinct_times[inverse], parent, mult, identity, out)

    def _grid_times(self, grid, read_times: np.ndarray, read_rows: np.ndarray, candidates: np.ndarray,
                    anchors: np.ndarray, devices: list, adjust: bool = True) -> np.ndarray:
        """Every grid row's times: the rows members read (``read_times``, priced already), and of the candidate rows
        beyond them (`WorkGrid.candidate_rows`) those whose roofline lies below their anchor's time on some device
        (`work_grid.needed_candidates`); the others stand at infinity, since none of them could lower a member. A
        device whose times an adjustment changes may be priced below its bound: there every candidate is priced."""
        if not candidates.size:
            return read_times
        out = np.full((len(grid.cols), len(devices)), np.inf)
        out[read_rows] = read_times
        cols = grid.cols.take(candidates)
        if self.adjusted_devices([d.name for d in devices]).any():
            needed = np.ones(candidates.size, dtype=bool)
        else:
            needed = needed_candidates(bound_seconds(matrix(cols, device_columns(devices))), out[anchors])
        rows = np.flatnonzero(needed)
        if rows.size:
            out[candidates[rows]] = self._times(cols.take(rows), devices, adjust=adjust)
        return out

    def _times(self, cols, devices: list, rungs_from: int | None = None, adjust: bool = True,
               alternatives: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """Seconds for every virtual op (rows of ``cols``) on every device; rows from ``rungs_from`` on are
        ladder rungs (`monotone.py`), whose times only matter where they exceed their owner's. ``alternatives``:
        ``(rows, seconds)``, another algorithm's price of those rows, taken where lower (`winograd.alternatives`);
        ``adjust=False``: the times before any calibration."""
        devs = device_columns(devices)
        bound = bound_seconds(matrix(cols, devs))
        times = bound / self.default_utilisation
        # the (op, device) pairs a network prices: its classes and modes, on devices that run the mode on
        # tensor cores (a Pascal GPU's pseudo-fp16 stays with the class models), and FP32, which no GPU runs on
        # tensor cores and the network learnt on CUDA cores; a class model's time there would be overwritten, so it
        # is not computed
        networks = [(net, np.flatnonzero(net.covers(cols))) for net in self.networks]
        netted = np.zeros(bound.shape, dtype=bool)
        for _, rows in networks:
            netted[rows] = self._network_prices(cols.mode[rows], devs)
        by_network = netted.copy()
        if rungs_from is not None:
            # a network is monotone in the work the ladder halves, so a rung it prices never exceeds its owner: its
            # bound (below the owner's bound, below the owner's time) stands in. An adjustment of the times (a
            # calibration, on its device) need not keep that order, so there every rung is priced.
            at_bound = np.zeros(bound.shape, dtype=bool)
            at_bound[rungs_from:] = netted[rungs_from:] & ~self.adjusted_devices(devs.names)[None, :]
            times[at_bound] = bound[at_bound]
            by_network &= ~at_bound
        for op_class, members in self.models.items():
            class_rows = np.flatnonzero(cols.op_class == op_class)
            for rows, on in _pattern_blocks(class_rows, ~netted[class_rows]):
                sub, sub_devs = _take(cols, rows), _take_devices(devs, on)
                feats = FEATURES[op_class][0](matrix(sub, sub_devs))
                shape = (rows.size, on.size)
                log_ratio = predict_ensemble_columns(members, feats, shape).reshape(shape)
                times[np.ix_(rows, on)] = bound[np.ix_(rows, on)] * np.exp(np.maximum(log_ratio, 0.0))  # util <= 1
        for net, net_rows in networks:
            for rows, on in _pattern_blocks(net_rows, by_network[net_rows]):
                pairs = matrix(_take(cols, rows), _take_devices(devs, on))
                block = np.ix_(rows, on)
                times[block] = np.maximum(bound[block], np.exp(net.log_seconds(pairs)))   # never below the roofline
        if alternatives is not None:
            rows, seconds = alternatives
            times[rows] = np.minimum(times[rows], seconds)
        return self.adjust_times(cols, devs, times, bound) if adjust else times

    @staticmethod
    def _network_prices(modes: np.ndarray, devs) -> np.ndarray:
        """``(ops, devices)``: where a network prices ops of these math modes (rows its classes and modes cover): on
        a device that runs the mode on tensor cores, and FP32 everywhere (no GPU runs it on tensor cores); a
        half-precision op on a GPU without tensor cores for it (a Pascal GPU's fp16) stays with the class models."""
        return (devs.tensor[:, modes].T > 0) | (modes == _FP32)[:, None]

    def adjusted_devices(self, names: Sequence[str]) -> np.ndarray:
        """Which of the devices ``names`` `adjust_times` may change: none here."""
        return np.zeros(len(names), dtype=bool)

    def adjust_times(self, cols, devs, times: np.ndarray, bound: np.ndarray) -> np.ndarray:
        """Hook for subclasses (a calibration): change the predicted seconds of the virtual ops ``cols``
        on the devices ``devs`` (`DeviceColumns`), given their bounds. The base predictor keeps them."""
        return times

    @staticmethod
    def _scatter(times: np.ndarray, parent: np.ndarray, mult: np.ndarray, identity: bool, out: np.ndarray) -> np.ndarray:
        """Sum virtual-op times (times multiplicity) into their parent ops' rows."""
        if identity:
            return times
        times *= mult[:, None]
        np.add.at(out, parent, times)
        return out

    @staticmethod
    def _ensemble(members: list[dict], x: np.ndarray) -> np.ndarray:
        total = predict_mlp(members[0], x)
        for params in members[1:]:
            total += predict_mlp(params, x)
        return total / len(members)

    def _expand(self, ops: list[OpSpec]):
        virtual: list[OpSpec] = []
        parent: list[int] = []
        mult: list[float] = []
        identity = True
        for i, op in enumerate(ops):
            parts = self._kernels(op)
            if parts is None:  # unmodelled: keep the op itself, predicted by the bound
                parts = [(op, 1.0)]
            elif len(parts) != 1 or parts[0][0] is not op or parts[0][1] != 1.0:
                identity = False
            for sub, m in parts:
                virtual.append(sub)
                parent.append(i)
                mult.append(m)
        return virtual, np.asarray(parent), np.asarray(mult), identity

    def _kernels(self, op: OpSpec) -> list[tuple[OpSpec, float]] | None:
        """What an op is priced as: a depthwise convolution as the streaming kernels it runs; a convolution in
        a mode a network prices as its forward, data-gradient and weight-gradient kernels (`conv_kernels`);
        anything else as `expand` says."""
        if op.op_class == "conv" and all(op.dims.get(k, 0) for k in ("n", "c_in", "c_out")):
            if (is_depthwise(op) and "elementwise" in self._modelled) or (
                    not is_depthwise(op) and _op_mode_name(op) in self._network_modes):
                return conv_kernels(op)
        return expand(op, self._modelled)

    def count_unmodelled(self, ops: Sequence[OpSpec]) -> int:
        """How many ops fall back to the bound with the default utilisation."""
        return sum(1 for op in ops if not self.is_modelled(op))


def _fp32_convolutions(device) -> bool:
    """Whether the device runs an FP32 convolution in FP32 whatever cuDNN's TF32 flag: an NVIDIA GPU before Ampere
    (no TF32), an AMD GPU (PyTorch does not pass the flag to MIOpen: pull request 190711, open in 2026-07; TF32 matmuls
    on an MI300 follow the matmul flag, and keep it)."""
    return _before_tf32(device) or getattr(device, "vendor", None) == "AMD"


def _without_tf32(op: OpSpec) -> OpSpec:
    """``op`` with its TF32 flag cleared (itself when it has none): how it runs on a GPU without TF32."""
    return replace(op, tf32=False) if op.tf32 else op


def _twin_bounds(ops: list[OpSpec], modes: np.ndarray, held: np.ndarray, devices: list) -> np.ndarray:
    """Each op's roofline on each device, as `bound_seconds` takes it (ones where an op is not ``held``)."""
    out = np.ones((len(ops), len(devices)))
    rows = np.flatnonzero(held)
    if rows.size:
        devs = device_columns(devices)
        flops = np.fromiter((max(ops[i].flops, 0.0) for i in rows), dtype=float, count=rows.size)
        moved = np.fromiter((max(ops[i].bytes_moved, 0.0) for i in rows), dtype=float, count=rows.size)
        out[rows] = roofline_seconds(flops[:, None], moved[:, None], devs.peaks[:, modes[rows]].T, devs.bandwidth[None, :])
    return out


def _hold_to_twins(lowest: np.ndarray, times: np.ndarray, downs: list, held: np.ndarray, bounds: np.ndarray,
                   twins: dict[int, list], own: np.ndarray) -> None:
    """Raise, in place, each unmeasured device's envelope times ``lowest`` (one column per entry of ``downs``, rows of
    one math mode) on its ``held`` rows (half precision and TF32) to its compute twins' envelope times scaled by their
    roofline bounds (`dominance.twin_sets`), never above the fastest measured device it dominates (the rest of its
    down-set in ``times``): more bandwidth on the same SMs and tensor cores buys the memory-bound part only. It runs
    before the up-sets take their maximum, so a device above a raised one is raised with it. A calibrated device
    neither moves nor moves another. ``twins`` is keyed by device index (``downs`` entries name devices first);
    ``bounds`` are the rows' rooflines per device (`_twin_bounds`)."""
    rows = np.flatnonzero(held)
    if not rows.size:
        return
    bounds = bounds[rows]
    entry = {members[0]: e for e, members in enumerate(downs)}
    for e, members in enumerate(downs):
        j = int(members[0])
        found = [entry[t] for t in twins.get(j, ()) if t in entry and not own[downs[entry[t]][0]]]
        if own[j] or not found:
            continue
        twin_devices = [int(downs[t][0]) for t in found]
        scaled = np.max(lowest[np.ix_(rows, found)] * bounds[:, [j]] / bounds[:, twin_devices], axis=1)
        below = times[np.ix_(rows, members[1:])].min(axis=1) if len(members) > 1 else np.inf
        lowest[rows, e] = np.maximum(lowest[rows, e], np.minimum(scaled, below))


def _catalog_devices() -> list:
    """The catalog's devices a prediction can bound (every down-set is taken over them)."""
    from predictor_models.hardware import default_catalog

    global _CATALOG_DEVICES
    catalog = default_catalog()
    if _CATALOG_DEVICES is None or _CATALOG_DEVICES[0] is not catalog:
        _CATALOG_DEVICES = (catalog, [d for d in catalog.list() if d.memory_bandwidth_gbs])
    return _CATALOG_DEVICES[1]


_CATALOG_DEVICES: tuple | None = None   # (the catalog, its devices with a bandwidth)


def _pattern_blocks(rows: np.ndarray, wanted: np.ndarray):
    """``(rows, devices)`` index blocks covering the True cells of ``wanted`` (``(len(rows), d)``): rows grouped by
    which devices they want (a few patterns: one per math mode), so each block is one dense matrix."""
    if rows.size == 0:
        return
    if wanted.all():
        yield rows, np.arange(wanted.shape[1])
        return
    # each row's pattern as bytes (8 devices a byte): sorting a few bytes per row is ~10x faster than sorting the
    # boolean rows themselves (`np.unique(..., axis=0)`), which a 10,000-op call paid for every class
    packed = np.packbits(wanted, axis=1)
    if packed.shape[1] <= 8:
        codes = np.pad(packed, ((0, 0), (0, 8 - packed.shape[1]))).view(np.uint64).reshape(-1)
    else:
        codes = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).reshape(-1)
    _, first, which = np.unique(codes, return_index=True, return_inverse=True)
    which = which.reshape(-1)
    for i, row in enumerate(first.tolist()):
        if wanted[row].any():
            yield rows[which == i], np.flatnonzero(wanted[row])


def _padded(sets: list) -> np.ndarray:
    """``(len(sets), longest)`` indices, each set's row padded with its first member (a minimum over the row is the
    set's): one gather for every down-set instead of one per set."""
    width = max(len(members) for members in sets)
    return np.array([list(members) + [members[0]] * (width - len(members)) for members in sets], dtype=np.int64)


def _take(cols, rows: np.ndarray):
    return cols if rows.size == len(cols) else cols.take(rows)


def _take_devices(devs, on: np.ndarray):
    return devs if on.size == len(devs.names) else devs.take(on)


def _distinct_ops(ops: list[OpSpec]) -> tuple[list[OpSpec], np.ndarray, list | None]:
    """The distinct ops (equal in every field, dims and name included), each op's index among them, and their keys
    (None when a dims value cannot be hashed). Dims in another insertion order count as another op: a missed merge
    costs time, never a wrong row."""
    index: dict = {}
    inverse = np.empty(len(ops), dtype=np.int64)
    try:
        for i, op in enumerate(ops):
            # the dims' names, then their values, in one flat tuple: its length says where the names end, and it is
            # built and hashed twice as fast as a tuple of (name, value) pairs
            key = (op.name, op.op_class, op.dtype, op.flops, op.bytes_read, op.bytes_written, op.tf32,
                   *op.dims, *op.dims.values())
            inverse[i] = index.setdefault(key, len(index))
    except TypeError:          # an unhashable dims value: every op on its own
        return ops, np.arange(len(ops)), None
    keys = list(index)
    if len(index) == len(ops):
        return ops, inverse, keys
    first = np.zeros(len(index), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(ops) - 1, -1, -1)
    return [ops[i] for i in first.tolist()], inverse, keys


def _distinct(cols) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the first occurrence of each distinct op row, and each row's index among them."""
    names = {name: i for i, name in enumerate(sorted(set(cols.op_class)))}
    code = np.fromiter((names[c] for c in cols.op_class), dtype=np.float64, count=len(cols))
    key = np.ascontiguousarray(np.column_stack([code, cols.mode, cols.flops, cols.bytes, cols.heavy, cols.softmax,
                                                cols.esize, cols.dims[:, cols.dims.any(axis=0)]]))
    rows = key.view(np.dtype((np.void, key.dtype.itemsize * key.shape[1]))).reshape(-1)
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _op_mode_name(op: OpSpec) -> str:
    return MODES[op_mode(op)]
