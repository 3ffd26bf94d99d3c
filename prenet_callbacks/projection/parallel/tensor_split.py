"""What one tensor-parallel rank runs of a captured transformer step (Megatron-LM's split).

Shoeybi et al. 2019 ("Megatron-LM", section 3) split each block's GEMMs in pairs: the first of a pair
(QKV, the MLP's up/gate projections, the LM head) by its output columns, the second (attention out,
MLP down) by its input rows, so each rank computes 1/tp of the width and the pair needs one all-reduce
forward and one backward. Attention heads split with them; the residual stream between the pairs (layer
norms, dropouts, residual adds) runs whole on every rank, or split along the sequence with sequence
parallelism (Korthikanti et al. 2022). The embedding and the loss are vocabulary-parallel.

The step is walked in execution order, per phase, with a two-state machine ("stream": the residual width
`hidden` is whole; "parallel": inside a pair):

- a GEMM over the tokens (m = tokens) is split on its side that is not `hidden` (both are: the output for
  a GEMM entering a pair, the input for one leaving it); it enters the pair when it reads `hidden`, and
  leaves it when it writes `hidden` after a wider input or after other compute inside the pair (this is
  what tells the square attention-out projection from the square q projection); a weight-gradient GEMM
  (k = tokens) is split on its side that is not `hidden`; batched GEMMs (attention's QK^T / PV) and fused
  attention split their heads;
- a norm over `hidden` always stands on the stream; other ops of tokens x `hidden` (or x 1) elements
  follow the state; wider activations (tokens x 3h, x ffn, x vocab, scores) and weight-sized ops are
  split; ops of at most `hidden` elements (biases and norm weights) stay whole.

Each op also gets a pipeline category: "pre" (embedding lookups), "post" (ops over the vocabulary:
LM head, log-softmax, loss) or "layer" (the rest, spread evenly over the layers).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import Sequence

import numpy as np

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.ops.flat import Flat, flat_of_pieces
from prenet_callbacks.projection.ops.precision import esize
from prenet_callbacks.projection.ops.workload import Unit

CATEGORIES = ("pre", "layer", "post")


@dataclass(frozen=True)
class TransformerShape:
    """One micro-batch of a recognised decoder/encoder stack."""

    tokens: int        # micro-batch x sequence
    hidden: int
    heads: int
    layers: int
    seq: int
    vocab: int | None
    ffn: int | None
    fused_attention: bool   # SDPA calls (flash/efficient on the target) rather than matmul + softmax

    @property
    def batch(self) -> int:
        return max(1, self.tokens // max(self.seq, 1))


def _elements(spec: OpSpec) -> float:
    d = spec.dims or {}
    if "numel" in d:
        return float(d["numel"])
    if "rows" in d and "cols" in d:
        return float(d["rows"]) * float(d["cols"])
    return spec.bytes_written / esize(spec.dtype) if spec.bytes_written else 0.0


def _gemm_dims(spec: OpSpec) -> tuple[float, float, float, float] | None:
    d = spec.dims or {}
    try:
        return float(d.get("b", 1)), float(d["m"]), float(d["n"]), float(d["k"])
    except KeyError:
        return None


def recognise(units: Sequence[Unit]) -> tuple[TransformerShape | None, str | None]:
    """The transformer shape of one micro-batch's forward, or (None, why it is not one)."""
    # one pass over the forward's ops (a 500-layer step has thousands) sorts out what the checks below read; sums
    # are taken in the ops' order, as the checks' own sums would
    matrix = other = 0
    gemm_ops, fused, embeddings = [], [], []
    for unit in units:
        if unit.phase != "fwd":
            continue
        for s, c in unit.ops:
            op_class = s.op_class
            if op_class == "gemm":
                matrix += s.flops * c
                gemm_ops.append((s, c))
            elif op_class == "attention":
                matrix += s.flops * c
                if "heads" in (s.dims or {}):
                    fused.append((s, c))
            elif op_class == "conv" or op_class == "recurrent":
                work = s.flops * c
                matrix += work
                other += work
            elif op_class == "embedding":
                embeddings.append(s)
    if matrix <= 0:
        return None, "its forward has no matrix multiplications"
    if other > 0.05 * matrix:
        return None, f"{other / matrix:.0%} of its forward FLOPs are convolutions or recurrent layers"
    gemms = [(s, c, g) for s, c in gemm_ops if (g := _gemm_dims(s)) is not None]
    tokens_of = Counter()
    for s, c, g in gemms:
        if g[0] == 1:
            tokens_of[g[1]] += s.flops * c
    if not tokens_of:
        return None, "its forward has no GEMM over the tokens"
    tokens = int(tokens_of.most_common(1)[0][0])
    if fused:
        spec = max(fused, key=lambda sc: sc[0].flops * sc[1])[0]
        d = spec.dims
        heads, seq, head_dim = int(d["heads"]), int(d["s_q"]), int(d["d"])
        layers = round(sum(c for s, c in fused))
    else:
        # QK^T: (batch x heads) of (s x d)(d x s)
        scores = [(s, c) for s, c, g in gemms if g[0] > 1 and g[1] == g[2] and tokens % g[1] == 0]
        if not scores:
            return None, "no attention found in its forward (no scaled_dot_product_attention, no batched QK^T)"
        spec = max(scores, key=lambda sc: sc[0].flops * sc[1])[0]
        b, seq, _, head_dim = (int(x) for x in _gemm_dims(spec))
        heads = b // max(1, tokens // seq)
        layers = round(sum(c for s, c in scores if s.key == spec.key))
    hidden = heads * head_dim
    widths = [(g[2], s.flops * c) for s, c, g in gemms if g[0] == 1 and g[1] == tokens and g[3] == hidden]
    if heads < 1 or not widths:
        return None, f"no projection reads the attention width {heads} heads x {head_dim} (its hidden size)"
    vocab = max((int(s.dims["vocab"]) for s in embeddings if "vocab" in (s.dims or {})), default=None)
    ffn = max((int(n) for n, _ in widths if n != hidden and n != 3 * hidden and n != vocab), default=None)
    return TransformerShape(tokens, hidden, heads, max(layers, 1), seq, vocab, ffn, bool(fused)), None


@dataclass
class SplitResult:
    """Per-rank units, each unit's pipeline category, and what could not be split."""

    units: list[Unit]
    category: list[int]              # index into CATEGORIES, per unit
    source: list[int]                # the input unit each output unit comes from
    unsplit_flops: float = 0.0       # GEMM FLOPs kept whole on every rank
    gemm_flops: float = 0.0
    pieces: list[list] = field(default_factory=list)    # the distinct ops lists, in the order units first use them
    piece_of: list[int] = field(default_factory=list)   # per unit, its ops' index in `pieces`

    def flat(self) -> Flat:
        """``flatten(self.units)``, from each distinct piece once: units that walked alike share their ops."""
        return flat_of_pieces(self.pieces, np.asarray(self.piece_of, dtype=np.int64))


class _Splitter:
    """Per-op split, remembered per distinct op (a model's layers repeat)."""

    def __init__(self, shape: TransformerShape, tp: int, sp: bool) -> None:
        self.shape, self.f, self.sp = shape, 1.0 / tp, sp
        self.cache: dict[tuple, OpSpec] = {}
        # by the spec object first (its content key sorts its dims): the units hold their specs while one split runs
        self.by_object: dict[tuple[int, str], OpSpec] = {}

    def apply(self, spec: OpSpec, how: str) -> OpSpec:
        if how == "whole" or self.f == 1.0:
            return spec
        found = self.by_object.get((id(spec), how))
        if found is None:
            key = (spec.name, spec.key, how)
            found = self.cache.get(key)
            if found is None:
                found = self.cache[key] = _gemm_split(spec, how, self.f) if how.startswith("gemm_") else \
                    shard_scaled(spec, self.f)
            self.by_object[id(spec), how] = found
        return found


def _gemm_split(spec: OpSpec, how: str, f: float) -> OpSpec:
    """The GEMM with one dimension ("gemm_m", "gemm_n", "gemm_k", "gemm_b") at f times its size."""
    b, m, n, k = _gemm_dims(spec)
    dim = how[-1]
    new = {"b": b, "m": m, "n": n, "k": k}
    new[dim] *= f
    a_old, w_old, c_old = b * m * k, b * k * n, b * m * n
    a_new, w_new, c_new = new["b"] * new["m"] * new["k"], new["b"] * new["k"] * new["n"], new["b"] * new["m"] * new["n"]
    read = spec.bytes_read * (a_new + w_new) / (a_old + w_old) if a_old + w_old else spec.bytes_read * f
    written = spec.bytes_written * c_new / c_old if c_old else spec.bytes_written * f
    return OpSpec(spec.op_class, spec.dtype, spec.flops * f, read, written, {**spec.dims, **new}, spec.tf32, spec.name)


_SPLIT_DIMS = {"elementwise": ("numel",), "data_movement": ("numel",), "norm": ("rows",), "optimizer": ("numel",),
               "attention": ("heads", "kv_heads", "mask_bytes"), "embedding": ("vocab",), "other": ("numel",)}


def shard_scaled(spec: OpSpec, f: float) -> OpSpec:
    """The op on a share `f` of its elements (one rank's shard): FLOPs and bytes times f, the split dimension with
    them. An embedding's backward writes its vocabulary shard (every rank still reads all the indices)."""
    dims = dict(spec.dims or {})
    for key in _SPLIT_DIMS.get(spec.op_class, ()):
        if key in dims:
            dims[key] = max(1.0, dims[key] * f) if key == "kv_heads" else dims[key] * f
    if spec.op_class == "embedding":
        return OpSpec(spec.op_class, spec.dtype, spec.flops, spec.bytes_read, spec.bytes_written * f, dims,
                      spec.tf32, spec.name)
    return OpSpec(spec.op_class, spec.dtype, spec.flops * f, spec.bytes_read * f, spec.bytes_written * f, dims,
                  spec.tf32, spec.name)


class _Walk:
    """The two-state walk of one phase (see the module docstring)."""

    def __init__(self, shape: TransformerShape, sp: bool) -> None:
        self.shape, self.sp = shape, sp
        self.parallel = False
        self.compute_since_switch = True
        self.whole: list[float] = []    # FLOPs of the GEMMs kept whole on every rank, as met

    def _switch(self, parallel: bool) -> None:
        if parallel != self.parallel:
            self.parallel, self.compute_since_switch = parallel, False

    def how(self, spec: OpSpec, count: float) -> str:
        shape = self.shape
        h, tokens = shape.hidden, shape.tokens
        cls = spec.op_class
        if cls == "gemm":
            return self._gemm(spec, count)
        if cls == "attention":
            self.compute_since_switch = True
            return "scale"
        if cls == "embedding":
            backward = bool((spec.dims or {}).get("backward"))
            vocab = (spec.dims or {}).get("vocab")
            return "scale" if backward and shape.vocab and vocab == shape.vocab else self._stream()
        if cls in ("optimizer", "communication") or not (spec.bytes_read or spec.bytes_written):
            return "whole"
        n = _elements(spec)
        if cls == "norm" and (spec.dims or {}).get("cols") == h:
            self._switch(False)
            self.compute_since_switch = True
            return self._stream()
        if cls != "data_movement":
            self.compute_since_switch = True
        if n >= tokens and n % tokens == 0:
            width = n // tokens
            if width in (h, 1):
                return "scale" if self.parallel else self._stream()
            return "scale"
        return "whole" if n <= h else "scale"

    def _stream(self) -> str:
        return "scale" if self.sp else "whole"

    def _gemm(self, spec: OpSpec, count: float) -> str:
        dims = _gemm_dims(spec)
        if dims is None:
            self.whole.append(spec.flops * count)
            return "whole"
        b, m, n, k = dims
        h, tokens = self.shape.hidden, self.shape.tokens
        if b > 1:                       # attention's batched GEMMs: (batch x heads) split
            self.compute_since_switch = True
            return "gemm_b"
        if m == tokens:                 # activations in, activations out: k -> n wide
            return self._activation_gemm(n, k)
        if k == tokens:                 # weight gradient: (m x n) of the weight
            return "gemm_m" if m != h else "gemm_n"
        self.whole.append(spec.flops * count)
        return "whole"

    def _activation_gemm(self, n: float, k: float) -> str:
        h = self.shape.hidden
        if self.parallel:
            if n == h and (k != h or self.compute_since_switch):
                self._switch(False)     # leaves the pair: split on its input
                return "gemm_k"
            return "gemm_n"             # another GEMM entering the same pair (k and v after q, up after gate)
        if k == h and (n != h or self.compute_since_switch):
            self._switch(True)          # enters a pair: split on its output
            return "gemm_n"
        return "gemm_k"                 # another GEMM leaving it (backward: the k, v input gradients after q's)


def _category(spec: OpSpec, shape: TransformerShape) -> int:
    if spec.op_class == "embedding":
        return 0
    vocab, h = shape.vocab, shape.hidden
    if vocab:
        g = _gemm_dims(spec) if spec.op_class == "gemm" else None
        if g is not None:   # the LM head: hidden -> vocab, and its two gradients
            _, m, n, k = g
            return 2 if (n, k) == (vocab, h) or (n, k) == (h, vocab) or (m, n) == (vocab, h) else 1
        if _elements(spec) == shape.tokens * vocab:   # logits, log-probabilities, the loss over them
            return 2
    return 1


def _in_order(unit: Unit) -> list[tuple[int, float]]:
    """(op index, calls) of a unit as its ops ran: each recorded occurrence (`Unit.sequence`, a capture's) with
    its share of the op's calls, else the ops in the order listed."""
    sequence = unit.sequence
    if not sequence or set(sequence) != set(range(len(unit.ops))):
        return [(i, count) for i, (_, count) in enumerate(unit.ops)]
    seen = Counter(sequence)
    return [(i, unit.ops[i][1] / seen[i]) for i in sequence]


_SPEC, _COUNT = itemgetter(0), itemgetter(1)   # of a unit's (spec, calls) entries


def walk_units(units: Sequence[Unit], shape: TransformerShape, sp: bool) -> UnitWalks:
    """How each unit's ops split (`split_units`' first half, which does not depend on tp): walked in order, per
    phase. A model's repeated layers walk alike: a unit whose ops (the same spec objects, counts and order) meet
    the walk in the same state splits the same way, so it is walked once and its walk replayed."""
    walks = {phase: _Walk(shape, sp) for phase in ("fwd", "bwd")}
    seen: dict[tuple, _UnitWalk] = {}
    per_unit: list[_UnitWalk] = []
    gemm_flops: list[float] = []
    for unit in units:
        walk = walks.get(unit.phase)
        state = (walk.parallel, walk.compute_since_switch) if walk is not None else None
        key = (unit.phase, state, unit.sequence, tuple(map(id, map(_SPEC, unit.ops))), tuple(map(_COUNT, unit.ops)))
        found = seen.get(key)
        if found is None:
            found = seen[key] = _walk_unit(unit, walk, shape)
        elif walk is not None:
            walk.parallel, walk.compute_since_switch = found.after
            walk.whole += found.whole
        gemm_flops += found.gemm_flops
        per_unit.append(found)
    return UnitWalks(units, shape, sp, per_unit, sum(gemm_flops), sum(sum(w.whole) for w in walks.values()))


def split_units(units: Sequence[Unit], shape: TransformerShape, tp: int, sp: bool,
                walked: UnitWalks | None = None, times: Sequence[tuple] | None = None) -> SplitResult:
    """Each unit's ops as one tensor-parallel rank runs them, cut into one unit per pipeline category
    present (``category``). Optimizer units are left to the caller (their share is the rank's parameters).
    ``walked``: `walk_units` of these units, shape and sp, shared by the splits of several tp. ``times``: per output
    unit, the ``(measured_s, python_s)`` it carries in place of its source unit's (its order is `UnitWalks.pieces`')."""
    if walked is None:
        walked = walk_units(units, shape, sp)
    elif walked.units is not units or (walked.shape, walked.sp) != (shape, sp):
        raise ValueError("walked: a walk of other units (pass the same list), shape or sequence parallelism")
    splitter = _Splitter(shape, tp, sp)
    source, category, piece_of = walked.outputs
    if times is not None and len(times) != len(source):
        raise ValueError(f"times: one (measured_s, python_s) per output unit ({len(source)}), got {len(times)}")
    out = SplitResult([], list(category), list(source), walked.unsplit_flops, walked.gemm_flops,
                      piece_of=list(piece_of))
    # units that walked alike hold the same spec objects: their pieces are built once, in the order units first use
    # them, which is how `UnitWalks.outputs` numbers them (``piece_of``)
    first_use: dict[int, tuple[Unit, _UnitWalk]] = {}
    for unit, found in zip(units, walked.per_unit):
        first_use.setdefault(id(found), (unit, found))
    kept_whole: dict[int, bool] = {}
    for key, (unit, found) in first_use.items():
        pieces, kept_whole[key] = _pieces(unit, found, splitter)
        # the units that walked alike share each piece's ops list (nothing changes a unit's ops in place): a list per
        # unit was a third of the objects a split makes, and of the collections it set off
        out.pieces += [list(ops) for _, ops in pieces]
    whole = [kept_whole[id(found)] and unit.sequence is None for unit, found in zip(units, walked.per_unit)]
    # a unit kept whole (one piece, its ops as they were) is the unit itself, or carries its own ops with the given times
    if times is None:
        out.units = [unit if whole[s] else Unit(unit.name, unit.phase, out.pieces[k], unit.measured_s, unit.python_s,
                                                None)
                     for s, k, unit in zip(source, piece_of, map(units.__getitem__, source))]
    else:
        out.units = [Unit(unit.name, unit.phase, unit.ops if whole[s] else out.pieces[k], measured_s, python_s, None)
                     for s, k, unit, (measured_s, python_s) in zip(source, piece_of, map(units.__getitem__, source),
                                                                  times)]
    return out


@dataclass(frozen=True)
class UnitWalks:
    """`walk_units`' answer: each unit's walk, and the GEMM FLOPs met and kept whole."""

    units: Sequence[Unit]
    shape: TransformerShape
    sp: bool
    per_unit: list             # a `_UnitWalk` per unit (units that walked alike share one)
    gemm_flops: float
    unsplit_flops: float

    def pieces(self) -> tuple[list[int], list[int]]:
        """(source unit, category) of each unit `split_units` makes from this walk, at any tp: a unit gives one
        piece per category it holds, in the walk's order."""
        source, category, _ = self.outputs
        return list(source), list(category)

    @cached_property
    def outputs(self) -> tuple[list[int], list[int], list[int]]:
        """(source unit, category, piece number) of each unit `split_units` makes, at any tp; pieces are numbered
        in the order units first use them, those of units that walked alike (one `_UnitWalk`) shared."""
        distinct = list({id(found): found for found in self.per_unit}.values())   # in the order units first use them
        number_of = {id(found): i for i, found in enumerate(distinct)}
        which = [number_of[id(found)] for found in self.per_unit]
        counts = np.fromiter((len(found.parts) for found in distinct), dtype=np.int64, count=len(distinct))
        categories = np.fromiter((c for found in distinct for c, _ in found.parts), dtype=np.int64,
                                 count=int(counts.sum()))
        first = np.cumsum(counts) - counts            # each walk's first piece (and its first category)
        walk_of = np.asarray(which, dtype=np.int64)
        per_unit = counts[walk_of]
        source = np.repeat(np.arange(len(walk_of)), per_unit)
        # the k-th piece of a unit: its walk's first piece + k
        offset = np.arange(per_unit.sum()) - np.repeat(np.cumsum(per_unit) - per_unit, per_unit)
        number = np.repeat(first[walk_of], per_unit) + offset
        return source.tolist(), categories[number].tolist(), number.tolist()


@dataclass(frozen=True)
class _UnitWalk:
    parts: tuple           # (category, (((op index, how), calls), ...)) per category present, in order
    gemm_flops: list       # FLOPs of its GEMMs, as met
    whole: list            # of which kept whole
    after: tuple | None    # the walk's state after the unit


def _walk_unit(unit: Unit, walk: _Walk | None, shape: TransformerShape) -> _UnitWalk:
    """One unit walked from the walk's present state (which it advances)."""
    parts: dict[int, dict[tuple[int, str], float]] = {}
    gemm_flops = []
    mark = len(walk.whole) if walk is not None else 0
    for i, count in _in_order(unit):
        spec = unit.ops[i][0]
        how = walk.how(spec, count) if walk is not None else "whole"
        if spec.op_class == "gemm":
            gemm_flops.append(spec.flops * count)
        entries = parts.setdefault(_category(spec, shape), {})
        entries[(i, how)] = entries.get((i, how), 0.0) + count
    ordered = tuple((category, tuple(parts[category].items())) for category in sorted(parts))
    if walk is None:
        return _UnitWalk(ordered, gemm_flops, [], None)
    return _UnitWalk(ordered, gemm_flops, walk.whole[mark:], (walk.parallel, walk.compute_since_switch))


def _pieces(unit: Unit, found: _UnitWalk, splitter: _Splitter) -> tuple[tuple, bool]:
    """The unit's pieces at the splitter's tp: (category, ((split spec, calls), ...)) per category, and whether
    they are the unit's own ops unchanged (one piece, the same specs and calls in their order)."""
    pieces = tuple((category, tuple((splitter.apply(unit.ops[i][0], how), count) for (i, how), count in entries))
                   for category, entries in found.parts)
    unchanged = len(pieces) == 1 and len(pieces[0][1]) == len(unit.ops) and all(
        new is old and c == count for (new, c), (old, count) in zip(pieces[0][1], unit.ops))
    return pieces, unchanged
