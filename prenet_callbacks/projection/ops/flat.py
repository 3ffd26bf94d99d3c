"""A step's ops as flat arrays: one entry per (unit, op), the distinct op specs listed once.

A model of 500 layers has thousands of (unit, op) entries but a few hundred distinct ops (its layers
repeat). Everything per entry here is a NumPy array, and everything per op is done once per distinct
spec, so predicting, rewriting for a target (`Flat.rewritten`) and summing per unit stay fast.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.ops.autocast import CAST_NAME
from prenet_callbacks.projection.ops.layout import LAYOUT_NAME


def issued_inside(spec: OpSpec) -> bool:
    """Whether the kernel is launched from C++ inside another op's call rather than issued by the step."""
    return spec.name in (LAYOUT_NAME, CAST_NAME)


def spec_key(spec: OpSpec) -> tuple:
    """What makes two specs the same op: its content (`OpSpec.key`; OpSpec's own equality leaves `dims` out) and its
    name, which says what the op is beyond its bytes: a cuDNN layout transform and an ``aten::clone`` of one tensor
    move the same bytes, but only the transform is dropped where cuDNN does not transpose (`is_layout_op`) and
    only the clone is issued by the host (`issued_inside`)."""
    return spec.name, spec.key


class _Interner:
    """Distinct specs in first-seen order: by object first (cheap), by content second."""

    def __init__(self) -> None:
        self.specs: list[OpSpec] = []
        self._by_key: dict[tuple, int] = {}
        self._by_object: dict[int, int] = {}
        self._alive: list[OpSpec] = []   # every object looked up: an id is only unique while it lives

    def copy(self) -> "_Interner":
        """An interner that goes on from this one's specs (and keeps the objects its ids name alive)."""
        other = _Interner()
        other.specs, other._by_key = list(self.specs), dict(self._by_key)
        other._by_object, other._alive = dict(self._by_object), list(self._alive)
        return other

    def index(self, spec: OpSpec) -> int:
        found = self._by_object.get(id(spec))
        if found is None:
            key = spec_key(spec)
            found = self._by_key.get(key)
            if found is None:
                found = self._by_key[key] = len(self.specs)
                self.specs.append(spec)
            self._by_object[id(spec)] = found
            self._alive.append(spec)
        return found


@dataclass(frozen=True)
class Flat:
    """The (unit, op, count) entries of a step's units and their distinct specs."""

    specs: list[OpSpec]
    unit_of: np.ndarray      # (entries,) unit index
    op_of: np.ndarray        # (entries,) index into `specs`
    counts: np.ndarray       # (entries,) calls per step
    n_units: int
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def kernels(self) -> np.ndarray:
        """Ops the host issues per unit, each at the host model's per-op cost. Ops that move no byte
        and do no FLOP launch nothing; kernels a library or autocast launches from C++ inside another
        op's call (cuDNN's layout transforms, autocast's casts) ride on that op's host cost."""
        if "kernels" not in self._cache:
            works = np.array([(s.bytes_moved > 0 or s.flops > 0) and not issued_inside(s) for s in self.specs],
                             dtype=float)
            weights = self.counts * works[self.op_of]
            self._cache["kernels"] = np.bincount(self.unit_of, weights=weights, minlength=self.n_units)
        return self._cache["kernels"]

    @property
    def spec_counts(self) -> np.ndarray:
        """Calls per step of each distinct spec, over all units."""
        if "spec_counts" not in self._cache:
            self._cache["spec_counts"] = np.bincount(self.op_of, weights=self.counts, minlength=len(self.specs))
        return self._cache["spec_counts"]

    @property
    def class_masks(self) -> dict[str, np.ndarray]:
        """``{op_class: (specs,) bool}``: which distinct specs are of each class."""
        if "classes" not in self._cache:
            classes = np.array([s.op_class for s in self.specs], dtype=object)
            self._cache["classes"] = {name: classes == name for name in set(classes.tolist())}
        return self._cache["classes"]

    def per_unit(self, spec_values: np.ndarray) -> np.ndarray:
        """``(units, columns)`` sums of ``count x spec_values[spec]`` (``spec_values``: ``(specs, columns)``)."""
        # (columns, entries): each column's weights contiguous for its bincount (three times faster than strided)
        weights = np.asarray(spec_values, dtype=float).T[:, self.op_of]
        weights *= self.counts
        out = np.empty((self.n_units, spec_values.shape[1]))
        for j, column in enumerate(weights):   # one bincount per column: much faster than np.add.at
            out[:, j] = np.bincount(self.unit_of, weights=column, minlength=self.n_units)
        return out

    def distinct_counts(self) -> list[tuple[OpSpec, float]]:
        """Each distinct spec with its calls per step over all units."""
        return list(zip(self.specs, self.spec_counts.tolist()))

    def rewritten(self, parts_of: Callable[[OpSpec, bool], Sequence[tuple[OpSpec, float]]],
                  in_opt_unit: np.ndarray, replace_opt: Sequence[tuple[OpSpec, float]] | None = None) -> "Flat":
        """The entries with each op replaced by ``parts_of(spec, in_opt)`` (ops x multiplicity), asked
        once per distinct (spec, in an optimizer unit); with `replace_opt`, the optimizer units' entries
        are dropped and each optimizer unit gets those ops instead."""
        entry_opt = in_opt_unit[self.unit_of]
        keep = ~entry_opt if replace_opt is not None else np.ones(len(self.op_of), dtype=bool)
        kind = self.op_of[keep] * 2 + entry_opt[keep]
        kinds, inverse = np.unique(kind, return_inverse=True)
        interner = _Interner()
        lengths, new_ops, mults = [], [], []
        for k in kinds.tolist():
            parts = parts_of(self.specs[k // 2], bool(k % 2))
            lengths.append(len(parts))
            for spec, mult in parts:
                new_ops.append(interner.index(spec))
                mults.append(mult)
        lengths_a = np.asarray(lengths, dtype=int)
        starts = np.cumsum(lengths_a) - lengths_a
        per_entry = lengths_a[inverse]
        source = np.repeat(np.arange(len(kind)), per_entry)
        offset = np.arange(per_entry.sum()) - np.repeat(np.cumsum(per_entry) - per_entry, per_entry)
        position = np.repeat(starts[inverse], per_entry) + offset
        unit_of = self.unit_of[keep][source]
        op_of = np.asarray(new_ops, dtype=int)[position]
        counts = self.counts[keep][source] * np.asarray(mults, dtype=float)[position]
        if replace_opt:
            opt_units = np.flatnonzero(in_opt_unit)
            extra_ops = np.array([interner.index(spec) for spec, _ in replace_opt], dtype=int)
            extra_counts = np.array([count for _, count in replace_opt], dtype=float)
            unit_of = np.concatenate([unit_of, np.repeat(opt_units, len(replace_opt))])
            op_of = np.concatenate([op_of, np.tile(extra_ops, len(opt_units))])
            counts = np.concatenate([counts, np.tile(extra_counts, len(opt_units))])
        return Flat(interner.specs, unit_of.astype(int), op_of.astype(int), counts.astype(float), self.n_units)


def _interner_of(flat: Flat) -> _Interner:
    """The interner that made ``flat``'s specs (rebuilt for a flat made otherwise: distinct by content, in order)."""
    interner = flat._cache.get("interner")
    if interner is None:
        interner = flat._cache["interner"] = _Interner()
        for spec in flat.specs:
            interner.index(spec)
    return interner


def flatten(units: Sequence, before: Flat | None = None) -> Flat:
    """The flat view of `units` (each with ``ops``: a list of ``(OpSpec, count)``). ``before``: the flat view of
    units that come first (the result is ``flatten(those + units)``, without walking them again)."""
    entries = [entry for u in units for entry in u.ops]
    objects = [spec for spec, _ in entries]
    counts = np.array([count for _, count in entries], dtype=float)
    first = before.n_units if before is not None else 0
    unit_of = np.repeat(np.arange(first, first + len(units)), [len(u.ops) for u in units])
    # units that come after ``before`` go on from its interner: its specs keep their indices
    interner = _Interner() if before is None else _interner_of(before).copy()
    # repeated layers share spec objects: each object is interned once (in first-seen order), every entry looked up
    # by its id in C (the objects list keeps them alive, so an id names one object throughout)
    ids = list(map(id, objects))
    index_of = {key: interner.index(spec) for key, spec in dict(zip(ids, objects)).items()}
    op_of = np.fromiter(map(index_of.__getitem__, ids), dtype=int, count=len(ids))
    if before is None:
        flat = Flat(interner.specs, unit_of.astype(int), op_of, counts, len(units))
    else:
        flat = Flat(interner.specs, np.concatenate([before.unit_of, unit_of]).astype(int),
                    np.concatenate([before.op_of, op_of]).astype(int), np.concatenate([before.counts, counts]),
                    first + len(units))
    flat._cache["interner"] = interner
    return flat


def flat_of_pieces(pieces: Sequence[Sequence[tuple[OpSpec, float]]], piece_of: np.ndarray,
                   in_order: bool = True) -> Flat:
    """``flatten`` of units whose ops are ``pieces[piece_of[u]]`` (unit ``u``): each distinct piece is walked once, and
    the entries are gathered from them in NumPy. ``pieces`` must be in the order the units first use them (as
    ``flatten`` meets the specs), so that the specs and their indices are those ``flatten`` gives; ``in_order=False``:
    they are in any order (put in that order first; pieces no unit uses are left out)."""
    if not in_order and len(piece_of):
        used, first = np.unique(piece_of, return_index=True)
        order = used[np.argsort(first)]
        renumbered = np.empty(len(pieces), dtype=np.int64)
        renumbered[order] = np.arange(len(order))
        pieces, piece_of = [pieces[i] for i in order.tolist()], renumbered[piece_of]
    interner = _Interner()
    lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    ops = np.array([interner.index(spec) for piece in pieces for spec, _ in piece], dtype=int)
    counts = np.array([count for piece in pieces for _, count in piece], dtype=float)
    per_unit = lengths[piece_of]
    starts = np.cumsum(lengths) - lengths
    ends = np.cumsum(per_unit)
    entry = np.repeat(starts[piece_of] - (ends - per_unit), per_unit) + np.arange(int(ends[-1]) if len(ends) else 0)
    flat = Flat(interner.specs, np.repeat(np.arange(len(piece_of)), per_unit).astype(int), ops[entry], counts[entry],
                len(piece_of))
    flat._cache["interner"] = interner
    return flat
