"""What one tensor-parallel rank runs of a captured transformer step, against a hand count."""
from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch import nn

from layout_models import LlamaBlock, ids, tiny_lm
from prenet_callbacks import estimate
from prenet_callbacks.projection.parallel.layout_workload import model_shape
from prenet_callbacks.projection.parallel.tensor_split import CATEGORIES, recognise, split_units

# TinyLM defaults: vocab 128, hidden 64, 2 layers, 4 heads, MLP 256, sequence 16; batch 2 -> 32 tokens
T, H, V, FFN, L = 32, 64, 128, 256, 2


def _workload(**model):
    return estimate(tiny_lm(**model), ids(), targets=[], optimizer="adamw").workload


def _split(workload, tp, sp=False):
    shape, reason = model_shape(workload)
    assert reason is None
    units = [u for u in workload.units if u.phase != "opt"]
    return shape, split_units(units, shape, tp, sp)


def _ops(split, phase, op_class):
    return [(s, c) for u in split.units if u.phase == phase for s, c in u.ops if s.op_class == op_class]


def _gemms(split, phase):
    out = Counter()
    for s, c in _ops(split, phase, "gemm"):
        if s.dims.get("b", 1) == 1:
            out[(s.dims["m"], s.dims["n"], s.dims["k"])] += c
    return out


def test_the_captured_gpt_is_recognised():
    shape, _ = model_shape(_workload())
    assert (shape.tokens, shape.hidden, shape.heads, shape.layers, shape.seq, shape.vocab, shape.ffn) == \
        (T, H, 4, L, 16, V, FFN)
    assert shape.fused_attention


def test_each_rank_runs_half_of_every_gemm_as_megatron_splits_them():
    _, split = _split(_workload(), tp=2)
    # forward, by hand: per layer QKV by columns (n 3h/2), out projection by rows (k h/2), MLP up by columns
    # (n ffn/2), MLP down by rows (k ffn/2); the LM head by vocabulary columns (n V/2)
    by_hand = Counter({(T, 3 * H // 2, H): L, (T, H, H // 2): L, (T, FFN // 2, H): L, (T, H, FFN // 2): L,
                       (T, V // 2, H): 1})
    assert _gemms(split, "fwd") == by_hand
    whole = _split(_workload(), tp=1)[1]
    for phase in ("fwd", "bwd"):
        total = sum(s.flops * c for s, c in _ops(whole, phase, "gemm"))
        assert sum(s.flops * c for s, c in _ops(split, phase, "gemm")) == pytest.approx(total / 2)
    assert split.unsplit_flops == 0.0


def test_backward_gemms_split_on_the_same_sides():
    _, split = _split(_workload(), tp=2)
    bwd = _gemms(split, "bwd")
    # input gradients: the column layers' by their (split) output k, the row layers' by their (split) output n
    assert bwd[(T, H, 3 * H // 2)] == L and bwd[(T, H // 2, H)] == L and bwd[(T, FFN // 2, H)] == L
    # weight gradients over the tokens: the split side of each weight
    assert bwd[(3 * H // 2, H, T)] + bwd[(H, 3 * H // 2, T)] == L


def test_heads_split_and_the_residual_stream_stays_whole_without_sequence_parallelism():
    _, split = _split(_workload(), tp=2)
    attention = _ops(split, "fwd", "attention")
    assert attention and all(s.dims["heads"] == 2 for s, _ in attention)
    norms = [(s, c) for s, c in _ops(split, "fwd", "norm") if s.dims.get("cols") == H]
    assert sum(c for _, c in norms) == 2 * L + 1 and all(s.dims["rows"] == T for s, _ in norms)   # ln1, ln2, ln_f
    adds = [s for s, c in _ops(split, "fwd", "elementwise") if s.name == "aten::add" and s.dims["numel"] in (T * H, T * H / 2)]
    assert adds and all(s.dims["numel"] == T * H for s in adds)                     # residual adds: whole


def test_sequence_parallelism_splits_the_norms_and_the_residual_stream():
    _, split = _split(_workload(), tp=2, sp=True)
    norms = [s for s, _ in _ops(split, "fwd", "norm") if s.dims.get("cols") == H]
    assert norms and all(s.dims["rows"] == T / 2 for s in norms)
    adds = [s for s, c in _ops(split, "fwd", "elementwise") if s.name == "aten::add"]
    assert adds and all(s.dims["numel"] <= T * H / 2 for s in adds)


def test_vocabulary_parallel_embedding_and_the_pipeline_categories():
    _, split = _split(_workload(), tp=4)
    embedding = [(s, cat) for u, cat in zip(split.units, split.category) for s, _ in u.ops
                 if s.op_class == "embedding"]
    assert embedding and all(CATEGORIES[cat] == "pre" for _, cat in embedding)
    token_grad = [s for s, _ in embedding if s.dims.get("backward") and s.dims.get("vocab") == V / 4]
    assert token_grad, "the token embedding's gradient is a vocabulary shard"
    head_shapes = {(T, V / 4, H), (T, H, V / 4), (V / 4, H, T), (H, V / 4, T)}   # forward, its two gradients
    head = [cat for u, cat in zip(split.units, split.category) for s, _ in u.ops
            if s.op_class == "gemm" and (s.dims["m"], s.dims["n"], s.dims["k"]) in head_shapes]
    assert len(head) == 3 and all(CATEGORIES[cat] == "post" for cat in head)


def test_square_projections_enter_and_leave_the_pair_by_what_ran_between():
    """q (h -> h) enters a column split, o (h -> h) leaves by rows; the pointwise work on q and k is inside the
    pair (split), the residual adds outside (whole)."""
    workload = _workload(block=LlamaBlock, ffn=96)
    _, split = _split(workload, tp=2)
    fwd = _gemms(split, "fwd")
    assert fwd[(T, H // 2, H)] == 3 * L          # q, k, v by columns
    assert fwd[(T, H, H // 2)] == L              # o by rows
    assert fwd[(T, 48, H)] == 2 * L and fwd[(T, H, 48)] == L   # gate, up by columns (96 / 2), down by rows
    rotary = [s for s, _ in _ops(split, "fwd", "elementwise") if s.name == "aten::mul" and s.dims["numel"] < T * H]
    assert rotary, "the pointwise work on q and k is split with the heads"
    residual = [s for s, _ in _ops(split, "fwd", "elementwise") if s.name == "aten::add" and s.dims["numel"] == T * H]
    assert len(residual) >= 1


def test_a_model_without_attention_is_not_a_transformer():
    with torch.device("meta"):
        mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))
    workload = estimate(mlp, torch.empty(32, 64, device="meta"), targets=[]).workload
    shape, reason = recognise(workload.units)
    assert shape is None and "no attention" in reason


def _module_units(layers: int) -> list:
    """One unit per projection (as a capture of separate modules gives), the walk's state changing between them,
    and a GEMM over no token dimension (kept whole); the layers share their spec objects."""
    from predictor_models.op_spec import OpSpec
    from prenet_callbacks.projection.ops.workload import Unit

    def gemm(m, n, k):
        return OpSpec("gemm", "float32", 2.0 * m * n * k, 4.0 * (m * k + k * n), 4.0 * m * n,
                      {"b": 1, "m": m, "n": n, "k": k}, False, "aten::mm")

    attention = OpSpec("attention", "float32", 1e6, 1e4, 1e4, {"b": 2, "heads": 4, "s_q": 16, "s_kv": 16, "d": 16,
                                                               "causal": 1, "sdpa": 1, "backward": 0})
    add = OpSpec("elementwise", "float32", T * H, 8.0 * T * H, 4.0 * T * H, {"numel": T * H, "inputs": 2})
    modules = [("q", [(gemm(T, H, H), 1.0)]), ("attn", [(attention, 1.0)]), ("o", [(gemm(T, H, H), 1.0)]),
               ("add", [(add, 1.0)]), ("up", [(gemm(T, FFN, H), 1.0)]), ("down", [(gemm(T, H, FFN), 1.0)]),
               ("router", [(gemm(7, H, H), 2.0)])]
    return [Unit(f"layers.{i}.{name}", "fwd", ops) for i in range(layers) for name, ops in modules]


def test_repeated_layers_split_as_if_each_were_walked_on_its_own():
    """Layers that share spec objects are walked once and replayed; a copy of every spec (no sharing) must give
    the same split, unit by unit, with the walk's state carried from one unit to the next."""
    from dataclasses import replace

    workload = _workload(layers=4)
    lm_shape, _ = model_shape(workload)
    modules = _module_units(3)
    cases = [([u for u in workload.units if u.phase != "opt"], lm_shape),
             (modules, recognise(modules)[0])]
    for units, shape in cases:
        copied = [u.changed(ops=[(replace(s, dims=dict(s.dims)), c) for s, c in u.ops]) for u in units]
        for tp, sp in ((2, False), (4, True), (1, False)):
            shared, alone = split_units(units, shape, tp, sp), split_units(copied, shape, tp, sp)
            assert (shared.category, shared.source) == (alone.category, alone.source)
            assert [(u.name, u.phase, [(s.name, s.key, c) for s, c in u.ops]) for u in shared.units] == \
                [(u.name, u.phase, [(s.name, s.key, c) for s, c in u.ops]) for u in alone.units]
            assert (shared.gemm_flops, shared.unsplit_flops) == (alone.gemm_flops, alone.unsplit_flops)
    assert split_units(modules, cases[1][1], 2, False).unsplit_flops == 3 * 2 * (2.0 * 7 * H * H)


def test_one_walk_serves_every_tp_and_untouched_units_are_kept_as_they_are():
    """The walk (how each op splits) does not depend on tp: a walk shared by several splits gives what each split
    walked alone gives. At tp=1 a unit of one category is the unit itself (no copy); a unit that records its op
    order is still copied (its pieces drop the order); a walk of other units is refused."""
    from prenet_callbacks.projection.parallel.tensor_split import walk_units

    workload = _workload(layers=3)
    shape, _ = model_shape(workload)
    units = [u for u in workload.units if u.phase != "opt"]
    for sp in (False, True):
        walked = walk_units(units, shape, sp)
        for tp in (1, 2, 4):
            shared, alone = split_units(units, shape, tp, sp, walked), split_units(units, shape, tp, sp)
            assert (shared.category, shared.source) == (alone.category, alone.source)
            assert [(u.name, u.phase, u.ops, u.sequence) for u in shared.units] == \
                [(u.name, u.phase, u.ops, u.sequence) for u in alone.units]
            assert (shared.gemm_flops, shared.unsplit_flops) == (alone.gemm_flops, alone.unsplit_flops)
            # the walk alone says where each output unit comes from, and the units can carry given times
            assert walked.pieces() == (alone.source, alone.category)
            times = [(0.001 * i, None if i % 2 else 0.5 * i) for i in range(len(alone.units))]
            timed = split_units(units, shape, tp, sp, walked, times)
            assert [(u.measured_s, u.python_s) for u in timed.units] == times
            assert [(u.name, u.phase, u.ops) for u in timed.units] == [(u.name, u.phase, u.ops) for u in alone.units]
    with pytest.raises(ValueError, match="walk of other units"):
        split_units(list(units), shape, 2, False, walk_units(units, shape, False))

    modules = _module_units(2)
    whole = split_units(modules, recognise(modules)[0], 1, False)
    assert all(piece is unit for piece, unit in zip(whole.units, modules)) and len(whole.units) == len(modules)
    ordered = [u.changed(sequence=tuple(range(len(u.ops)))) for u in modules]
    kept = split_units(ordered, recognise(ordered)[0], 1, False)
    assert all(piece is not unit and piece.sequence is None and piece.ops == unit.ops
               for piece, unit in zip(kept.units, ordered))
    split = split_units(modules, recognise(modules)[0], 2, False)   # split GEMMs are new specs: copies
    assert any(piece is not unit for piece, unit in zip(split.units, modules))


def test_a_splits_flat_view_from_its_pieces_is_the_flattened_units():
    """`SplitResult.flat` walks each distinct piece once; it must give what `flatten` of the units gives (the same
    specs in the same order, entries, counts), and a flat view that goes on from it (a rank's optimizer units)."""
    from prenet_callbacks.projection.ops.flat import flatten

    workload = _workload(layers=3)
    shape, _ = model_shape(workload)
    units = [u for u in workload.units if u.phase != "opt"]
    opt = [u for u in workload.units if u.phase == "opt"]
    modules = _module_units(3)
    for source, shape_of in ((units, shape), (modules, recognise(modules)[0])):
        for tp, sp in ((1, False), (2, False), (4, True)):
            split = split_units(source, shape_of, tp, sp)
            built, walked = split.flat(), flatten(split.units)
            assert built.specs == walked.specs and all(a is b for a, b in zip(built.specs, walked.specs))
            for name in ("unit_of", "op_of", "counts"):
                assert getattr(built, name).tolist() == getattr(walked, name).tolist(), name
            assert built.n_units == walked.n_units == len(split.units)
            after = flatten(opt, built)
            assert after.op_of.tolist() == flatten(split.units + opt).op_of.tolist()
            if source is modules:   # three layers of one module each: those that walked alike share pieces
                assert len(split.pieces) < len(split.units)


def test_the_units_of_layers_that_walked_alike_share_their_pieces_ops_lists():
    """Each distinct piece's ops list is made once and held by every unit that walked alike (a list per unit was a
    third of the objects a 500-layer split made); what each unit holds is what a split of it alone holds."""
    modules = _module_units(3)
    shape = recognise(modules)[0]
    split = split_units(modules, shape, 2, False)
    by_name = {u.name: u for u in split.units}
    originals = {u.name: u for u in modules}
    split_gemms = [name for name in ("layers.1.up", "layers.1.down", "layers.1.q", "layers.1.o")
                   if by_name[name] is not originals[name]]   # split GEMMs: new units with new specs
    assert split_gemms
    # layers 1 and 2 walk alike (layer 0 starts the walk): their new units share the pieces' lists
    assert all(by_name[name].ops is by_name[name.replace("layers.1.", "layers.2.")].ops for name in split_gemms)
    assert by_name["layers.1.up"].ops is not by_name["layers.1.down"].ops
    for unit in split.units:
        assert isinstance(unit.ops, list)
    alone = split_units(modules, shape, 2, False)
    assert [u.ops for u in split.units] == [u.ops for u in alone.units]


@pytest.mark.parametrize("model, example, why", [
    (nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.Conv2d(16, 16, 3)), torch.randn(2, 3, 16, 16),
     "of its forward FLOPs are convolutions or recurrent layers"),
    (nn.Sequential(nn.LayerNorm(8), nn.ReLU()), torch.randn(4, 8), "its forward has no matrix multiplications"),
])
def test_a_model_that_is_no_transformer_is_not_recognised_and_says_why(model, example, why):
    workload = estimate(model, example, targets=[], optimizer="sgd").workload
    shape, reason = recognise(workload.units)
    assert shape is None and why in reason


def test_walk_outputs_number_pieces_in_the_order_units_first_use_them():
    from prenet_callbacks.projection.parallel.tensor_split import walk_units

    from benchmarks.projection_speed import synthetic_report
    from prenet_callbacks.projection.from_report import workload_from_report

    workload = workload_from_report(synthetic_report(40))   # its layers cycle over 35 shapes: some walk alike
    shape, _ = model_shape(workload)
    walked = walk_units([u for u in workload.units if u.phase != "opt"], shape, False)
    first, pieces, expected = {}, 0, ([], [], [])
    for i, found in enumerate(walked.per_unit):   # the numbering spelt out unit by unit
        n = len(found.parts)
        if id(found) not in first:
            first[id(found)], pieces = pieces, pieces + n
        expected[0].extend([i] * n)
        expected[1].extend(c for c, _ in found.parts)
        expected[2].extend(range(first[id(found)], first[id(found)] + n))
    assert walked.outputs == expected
    assert len(set(map(id, walked.per_unit))) < len(walked.per_unit)   # some units walked alike (shared pieces)
