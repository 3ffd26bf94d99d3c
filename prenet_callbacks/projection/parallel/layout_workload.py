"""One model-parallel rank's share of a step, as a `Workload` the projection can price.

From the captured (or recorded) step: one micro-batch's forward and backward (the step's ops over its
accumulation, at the target's micro-batch size), tensor-split as Megatron runs it (`tensor_split.py`),
each unit cut by pipeline category (embedding / layers / vocabulary head) so that a stage takes its
layers' share; and the optimizer over the rank's parameters: the largest stage's over tp (the layers
split evenly, the embedding on the first stage, the LM head on the last, a tied head kept as a copy there).

A run measured on a catalog GPU stays anchored: each new unit carries its source unit's measured time in
proportion to what the predictor gives the source's ops of that category on the measured GPU, and keeps
those ops as its measured ops, so the ratio predicted(target) / predicted(measured) carries the split.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

import numpy as np

from prenet_callbacks.projection.parallel.model_layout import ModelLayout
from prenet_callbacks.projection.parallel.pipeline import stage_layers
from prenet_callbacks.projection.parallel.tensor_split import (
    TransformerShape,
    recognise,
    shard_scaled,
    split_units,
    walk_units,
)
from prenet_callbacks.projection.ops.flat import Flat, flat_of_pieces
from prenet_callbacks.projection.ops.workload import Unit, UnitViews, Workload, batch_scaled, unit_views

ACCUMULATION_UNIT = "gradient accumulation"   # estimate's and report_whatif's unit of gradient adds


@dataclass(frozen=True)
class MicroBatches:
    """A layout target's micro-batches: how many per replica and step, their size, and what that makes of
    the run's work."""

    count: int
    size: int | None            # samples per micro-batch (None: the run's, unknown)
    scale: float                # size / the captured micro-batch
    samples_per_step: float | None   # all replicas; None when the batch is unknown
    steps_factor: float         # target optimizer steps per run step (the same data)


def micro_batches(workload: Workload, layout: ModelLayout, convention: str) -> MicroBatches | str:
    """The target's micro-batches, or why they cannot be (a batch that does not divide)."""
    batch, run_acc = workload.batch_size, max(workload.accumulate, 1)
    run_samples = batch * run_acc * workload.world if batch else None
    if layout.global_batch:
        if not batch:
            return "global_batch= needs the run's micro-batch size, which this step does not record"
        count, rest = divmod(layout.global_batch, batch * layout.dp)
        if rest or not count:
            return (f"global_batch={layout.global_batch} is not a multiple of micro-batch {batch} x dp={layout.dp}"
                    f" = {batch * layout.dp}")
        return MicroBatches(count, batch, 1.0, float(layout.global_batch), run_samples / layout.global_batch)
    count = layout.microbatches or run_acc
    if convention == "global" and batch:
        size, rest = divmod(run_samples, count * layout.dp)
        if rest or not size:
            return (f"the run's global batch {run_samples} does not divide into {count} micro-batch(es) x "
                    f"dp={layout.dp}")
        return MicroBatches(count, size, size / batch, float(run_samples), 1.0)
    samples = batch * count * layout.dp if batch else None
    factor = run_samples / samples if samples else workload.world * run_acc / (count * layout.dp)
    return MicroBatches(count, batch, 1.0, samples, factor)


@dataclass
class RankStep:
    """The rank's units (one micro-batch's forward and backward, then the optimizer), their categories."""

    workload: Workload
    category: np.ndarray        # per unit: 0 pre, 1 layer, 2 post, 3 optimizer
    shape: TransformerShape
    param_share: float          # the rank's parameters / the model's (largest stage, over tp)
    unsplit_share: float        # GEMM FLOPs no rank could split


class _Split(NamedTuple):
    """One tensor-parallel split of a micro-batch's step (`_split_step`), shared by the ranks of every pp."""

    shape: TransformerShape
    units: list[Unit]                # the rank's forward and backward units
    measured: list[Unit] | None      # their measured twins (an anchored run), one list for every split of a shape
    category: np.ndarray             # per unit: 0 pre, 1 layer, 2 post
    unsplit: float                   # the share of GEMM FLOPs kept whole
    flat: Callable[[], Flat]         # makes the units' flat view
    measured_flat: Callable[[], Flat] | None   # makes the measured twins' (one for every split of a shape)
    views: Callable[[], UnitViews]   # makes the units' `unit_views`


def _per_micro_batch(units: Sequence[Unit], accumulate: float, scale: float) -> list[Unit]:
    """Forward and backward units at one micro-batch: counts over the accumulation, ops at `scale` x batch."""
    if accumulate == 1 and scale == 1.0:   # one micro-batch per step, as captured: the units as they are
        return [u for u in units if u.phase != "opt" and u.name != ACCUMULATION_UNIT]
    out = []
    for unit in units:
        if unit.phase == "opt" or unit.name == ACCUMULATION_UNIT:
            continue
        ops = [(batch_scaled(s, scale) if scale != 1.0 else s, c / accumulate) for s, c in unit.ops]
        out.append(unit.changed(ops=ops, measured_s=None if unit.measured_s is None else unit.measured_s / accumulate,
                           python_s=None if unit.python_s is None else unit.python_s / accumulate))
    return out


def model_shape(workload: Workload, scale: float = 1.0) -> tuple[TransformerShape | None, str | None]:
    """The transformer shape of one micro-batch of `workload` at `scale` x its batch, or why it has none."""
    return recognise(_per_micro_batch(workload.units, max(workload.accumulate, 1), scale))


def param_share(workload: Workload, shape: TransformerShape, layout: ModelLayout) -> float:
    """Parameters of the rank with the most (a stage's layers, its embedding or head, over tp) / the model's."""
    total = float(workload.params)
    if total <= 0:
        return 1.0 / (layout.tp * layout.pp)
    vocab_size = (shape.vocab or 0) * shape.hidden
    vocab = [n for n in workload.param_tensors if vocab_size and n == vocab_size] or (
        [vocab_size] if vocab_size and not workload.param_tensors else [])
    embedding, head = (vocab[0] if vocab else 0.0), (vocab[1] if len(vocab) > 1 else 0.0)
    per_layer = max(0.0, total - embedding - head) / shape.layers
    counts = stage_layers(shape.layers, layout.pp)
    last = len(counts) - 1
    stages = [n * per_layer + (embedding if s == 0 else 0.0)
              + ((head or (embedding if layout.pp > 1 else 0.0)) if s == last else 0.0) for s, n in enumerate(counts)]
    return min(1.0, max(stages) / layout.tp / total)


def rank_step(workload: Workload, layout: ModelLayout, mb: MicroBatches, predictor,
              cache: dict | None = None, memo=None) -> RankStep | str:
    """The rank's step, or why the model cannot be split (not a recognisable transformer). ``cache``: a dict
    shared by the targets of one projection (those with the same tp, sp and micro-batch share their split; those
    with the same layout on other GPUs share the rank's step); ``memo``: the projection's `PriceMemo`."""
    key = ("split", layout.tp, layout.sp, mb.scale)
    split = _cached(cache, key, lambda: _split_step(workload, layout, mb, predictor, memo, cache))
    if isinstance(split, str):
        return split
    # the targets with the same layout on other GPUs share the rank's step (and are priced together)
    return _cached(cache, ("rank", layout.tp, layout.sp, mb.scale, layout.pp, mb.size),
                   lambda: _rank_of(workload, layout, mb, split, _split_flats(cache, key, split)))


def _split_flats(cache: dict | None, key: tuple, split: _Split) -> tuple[Flat, Flat | None, UnitViews]:
    """The split units' flat view, their measured twins' and their `unit_views`, once per split (the ranks of every
    pp share them); the splits of one model shape share their measured units (one list), whose flat view is made
    once."""
    measured = split.measured
    measured_flat = None if measured is None else _cached(cache, ("measured flat", id(measured)), split.measured_flat)
    return _cached(cache, key + ("flats",), lambda: (split.flat(), measured_flat, split.views()))


def _cached(cache: dict | None, key: tuple, make):
    """``cache[key]``, made by ``make()`` and kept there the first time (no cache: made each time)."""
    if cache is None:
        return make()
    if key not in cache:
        cache[key] = make()
    return cache[key]


def _rank_of(workload: Workload, layout: ModelLayout, mb: MicroBatches, split: _Split,
             flats: tuple[Flat, Flat | None, UnitViews]) -> RankStep:
    """The rank's step from its split forward and backward units and its share of the optimizer (``flats``: the
    split units' flat views, which ranks of the same split with other pipeline stages share)."""
    shape, units, measured, category, unsplit = split[:5]
    share = param_share(workload, shape, layout)
    opt = workload.cached("optimizer units", lambda: [u for u in workload.units if u.phase == "opt"])
    rank_opt = [u.changed(ops=[(shard_scaled(s, share), c) for s, c in u.ops], measured_s=u.measured_s if measured
                        else None) for u in opt]
    # each parameter tensor's shard, at least one element (round() and np.rint both round half to even)
    tensors = np.maximum(1, np.rint(np.asarray(workload.param_tensors, dtype=float) * share)).astype(int).tolist()
    rank = workload.rebuilt(units=units + rank_opt, measured_units=measured + opt if measured else None,
                            params=workload.params * share, param_tensors=tensors,
                            accumulate=1, micro_batches=1.0, batch_size=mb.size)
    rank.share_flats(*flats)
    return RankStep(rank, np.concatenate([category, np.full(len(rank_opt), 3, dtype=int)]), shape, share, unsplit)


def _split_step(workload: Workload, layout: ModelLayout, mb: MicroBatches, predictor, memo=None,
                cache: dict | None = None) -> _Split | str:
    """The split at this layout's tp and sp (`_Split`), or why the model cannot be split."""
    accumulate = float(max(workload.accumulate, 1))
    micro, shape, reason = _micro_step(workload, accumulate, mb.scale, cache)
    if shape is None:
        return reason
    # the walk does not depend on tp: splits share it
    walked = _walked(cache, (accumulate, mb.scale), micro, shape, layout.sp)
    anchored = workload.anchored()
    if anchored:
        # what each new unit measured, from the walk alone (its pieces do not depend on tp): the units are made once
        source, category, _ = walked.outputs
        measured, measured_flat = _measured_units(workload, source, category, shape, accumulate, predictor, memo,
                                                  cache)
        measured_views = _cached(cache, ("measured views", id(measured)), lambda: unit_views(measured))
        times = _cached(cache, ("measured times", id(measured)), lambda: [(m.measured_s, m.python_s) for m in measured])
        split = split_units(micro, shape, layout.tp, layout.sp, walked, times)
        units = split.units

        def views() -> UnitViews:   # each unit: its source's phase, its measured twin's times (what `times` gave it)
            phases = _cached(cache, ("micro phases", id(micro)), lambda: unit_views(micro).phases)
            return UnitViews(phases[np.asarray(split.source, dtype=np.int64)], measured_views.measured_s,
                             measured_views.python_s)
    else:
        split, measured, measured_flat = split_units(micro, shape, layout.tp, layout.sp, walked), None, None
        units = _python_shared(split.units, split.source, len(split.units))

        def views() -> UnitViews:
            return unit_views(units)
    unsplit = split.unsplit_flops / split.gemm_flops if split.gemm_flops else 0.0
    return _Split(shape, units, measured, np.asarray(split.category, dtype=int), unsplit, split.flat, measured_flat,
                  views)


def _micro_step(workload: Workload, accumulate: float, scale: float, cache: dict | None):
    """(one micro-batch's forward and backward units, their transformer shape or None, why none), once per
    micro-batch size in a projection (``cache``)."""
    def make() -> tuple:
        micro = _micro_units(workload, accumulate, scale, cache)
        return (micro, *recognise(micro))

    return _cached(cache, ("micro", accumulate, scale), make)


def _micro_units(workload: Workload, accumulate: float, scale: float, cache: dict | None) -> list[Unit]:
    """The run's forward and backward units at one micro-batch (`_per_micro_batch`), once per projection."""
    return _cached(cache, ("micro units", accumulate, scale),
                   lambda: _per_micro_batch(workload.units, accumulate, scale))


def _walked(cache: dict | None, micro_key: tuple, units: list[Unit], shape: TransformerShape, sp: bool):
    """`walk_units` of a micro-batch's units (``micro_key``: its accumulation and scale), once per projection."""
    return _cached(cache, ("walk", *micro_key, shape, sp), lambda: walk_units(units, shape, sp))


def _python_shared(units: list[Unit], source: list[int], n_split: int) -> list[Unit]:
    """Unanchored units: no measured time; a source unit's Python time shared among its pieces by calls."""
    calls = [sum(c for _, c in u.ops) for u in units[:n_split]]
    per_source = np.bincount(source, weights=calls) if source else np.zeros(0)
    out = []
    for i, unit in enumerate(units):
        python = unit.python_s
        if python is not None and i < n_split:
            total = per_source[source[i]]
            python = python * (calls[i] / total if total > 0 else 1.0)
        out.append(unit.changed(measured_s=None, python_s=python))
    return out


def _measured_units(workload: Workload, source: list[int], category: list[int], shape: TransformerShape,
                    accumulate: float, predictor, memo=None,
                    cache: dict | None = None) -> tuple[list[Unit], Callable[[], Flat]]:
    """The run's own ops and time behind each split unit (``source`` and ``category`` of each; see the module
    docstring). ``cache``: the projection's (`rank_step`): the recorded step cut by category once for every split of
    the same model shape; where the run's own units are the micro-batch's, their walk is shared with its splits."""
    run_accumulate = accumulate / max(workload.micro_batches, 1e-12)
    def cut() -> tuple:
        if workload.measured_units is not None:
            recorded = _per_micro_batch(workload.measured_units, run_accumulate, 1.0)
            return recorded, split_units(recorded, shape, 1, False)
        recorded = _micro_units(workload, run_accumulate, 1.0, cache)
        return recorded, split_units(recorded, shape, 1, False, _walked(cache, (run_accumulate, 1.0), recorded, shape,
                                                                         False))

    recorded, whole = _cached(cache, ("recorded", shape, run_accumulate), cut)
    # the pieces (source unit, category) do not depend on tp or sp, so splits of one shape share the answer
    return _cached(cache, ("recorded pieces", shape, run_accumulate, tuple(source), tuple(category)),
                   lambda: _anchored_pieces(workload, recorded, whole, source, category, predictor, memo))


def _anchored_pieces(workload: Workload, recorded: list[Unit], whole, source: list[int], category: list[int],
                     predictor, memo) -> tuple[list[Unit], Callable[[], Flat]]:
    """Each split piece's recorded ops, with the source unit's measured time shared by the anchor's predictions, and
    what makes their flat view from the recorded cut's pieces (a piece without ops where the cut has none)."""
    from prenet_callbacks.projection.pricing.scaling import unit_matrix

    by_key = {(s, c): k for k, (s, c) in enumerate(zip(whole.source, whole.category))}
    found = [by_key.get(key) for key in zip(source, category)]
    parts = [recorded[s].changed(ops=[]) if k is None else whole.units[k] for s, k in zip(source, found)]
    empty = len(whole.pieces)
    piece_of = np.array([empty if k is None else whole.piece_of[k] for k in found], dtype=np.int64)
    pieces = np.bincount(source, minlength=len(recorded))
    # a source cut into one piece keeps all its time (the piece is the recorded unit's category cut, which
    # carries its times already): only the pieces of sources cut in several are predicted on the anchor
    shared = np.flatnonzero(pieces[source] > 1)
    predicted = np.zeros(len(parts))
    if shared.size:
        predicted[shared] = unit_matrix([parts[i] for i in shared.tolist()], [workload.anchor], predictor,
                                        memo)[0][:, 0]
    totals = np.bincount(source, weights=predicted, minlength=len(recorded))
    out = list(parts)
    for i in shared.tolist():
        origin = source[i]
        part, unit = parts[i], recorded[origin]
        share = predicted[i] / totals[origin] if totals[origin] > 0 else 1.0 / pieces[origin]
        out[i] = part.changed(measured_s=None if unit.measured_s is None else unit.measured_s * share,
                              python_s=None if unit.python_s is None else unit.python_s * share)
    return out, lambda: flat_of_pieces(whole.pieces + [[]], piece_of, in_order=False)
