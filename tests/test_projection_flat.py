"""The flat view of a step's ops (`projection/ops/flat.py`) and the per-target rewrites built on it."""
from __future__ import annotations

import numpy as np
import pytest

from predictor_models.hardware import lookup_hardware
from predictor_models.op_spec import OpSpec
from prenet_callbacks.projection.ops.flat import flatten
from prenet_callbacks.projection.ops.precision import parse_precision
from prenet_callbacks.projection.pricing.scaling import PriceMemo, unit_matrix
from prenet_callbacks.projection.ops.workload import Unit, Variant, Workload


def _gemm(m: int, flops: float = 1e9) -> OpSpec:
    return OpSpec("gemm", "bfloat16", flops, 1e6 * m, 1e6, {"b": 1, "m": m, "n": 64, "k": 64}, False, "aten::mm")


def _attention() -> OpSpec:
    return OpSpec("attention", "bfloat16", 4e9, 3e7, 1e7,
                  {"b": 8, "heads": 4, "s_q": 256, "s_kv": 256, "d": 64, "causal": 1, "sdpa": 1, "backward": 0},
                  False, "aten::_flash_attention_forward")


def _units() -> list[Unit]:
    shared = _gemm(512)            # one object in every layer, as a report's repeated layers give
    free = OpSpec("data_movement", "bfloat16", 0.0, 0.0, 0.0, {"numel": 0}, False, "aten::view")
    units = []
    for i in range(4):
        units.append(Unit(f"block.{i}", "fwd", [(shared, 1.0), (_gemm(512 + 64 * (i % 2)), 2.0), (_attention(), 1.0),
                                                 (free, 3.0)], measured_s=1e-3))
        units.append(Unit(f"block.{i}", "bwd", [(shared, 2.0), (_gemm(512), 1.0)], measured_s=2e-3))
    units.append(Unit("optimizer", "opt", [(OpSpec("optimizer", "float32", 1e6, 8e6, 4e6, {"numel": 1e6}), 1.0)]))
    return units


def _naive(units: list[Unit], value) -> np.ndarray:
    return np.array([sum(value(spec) * count for spec, count in u.ops) for u in units])


def test_flatten_keeps_every_unit_s_sums_and_lists_each_distinct_op_once():
    units = _units()
    flat = flatten(units)
    assert flat.n_units == len(units)
    # the shared object, the two other GEMM shapes (equal content shares a row), attention, view, optimizer
    assert len(flat.specs) == 5
    flops = flat.per_unit(np.array([[s.flops] for s in flat.specs]))[:, 0]
    np.testing.assert_allclose(flops, _naive(units, lambda s: s.flops))
    # free ops (no bytes, no FLOPs) launch no kernel
    np.testing.assert_allclose(flat.kernels, [sum(c for s, c in u.ops if s.flops or s.bytes_moved) for u in units])
    totals = {s.name: c for s, c in flat.distinct_counts() if s.op_class != "gemm"}
    assert totals["aten::view"] == 12.0 and totals["aten::_flash_attention_forward"] == 4.0


def test_rewritten_expands_replaces_and_keeps_unit_order():
    units = _units()
    flat = flatten(units)
    in_opt = np.array([u.phase == "opt" for u in units])
    sgd = [(OpSpec("optimizer", "float32", 5.0, 5.0, 5.0, {"numel": 1}), 2.0)]

    def parts_of(spec, in_opt_unit):
        if spec.op_class == "gemm":   # each GEMM becomes two half-size ones (new objects every call)
            half = OpSpec("gemm", spec.dtype, spec.flops / 2, spec.bytes_read, spec.bytes_written, dict(spec.dims))
            return [(half, 2.0), (OpSpec("elementwise", spec.dtype, 1.0, 8.0, 8.0, {"numel": 1}), 1.0)]
        return [(spec, 1.0)]

    out = flat.rewritten(parts_of, in_opt, replace_opt=sgd)
    flops = out.per_unit(np.array([[s.flops] for s in out.specs]))[:, 0]
    expected = _naive(units, lambda s: s.flops + (1.0 if s.op_class == "gemm" else 0.0))
    expected[-1] = 10.0   # the optimizer unit: only the replacement ops
    np.testing.assert_allclose(flops, expected)


def test_rewritten_tells_apart_new_objects_that_reuse_a_freed_id():
    """Specs made inside `parts_of` die after each call unless kept; CPython reuses their addresses.
    Each must still be interned by its own content, not by a dead object's id."""
    units = [Unit(f"u{i}", "fwd", [(_gemm(64 * (i + 1), flops=float(i + 1)), 1.0)]) for i in range(8)]
    flat = flatten(units)

    def parts_of(spec, _):
        unique = OpSpec("gemm", spec.dtype, spec.flops * 10, 1.0, 1.0, {"m": spec.dims["m"]})
        shared = OpSpec("elementwise", spec.dtype, 0.5, 4.0, 4.0, {"numel": 1})   # equal content every call
        return [(unique, 1.0), (shared, 1.0)]

    out = flat.rewritten(parts_of, np.zeros(len(units), dtype=bool))
    flops = out.per_unit(np.array([[s.flops] for s in out.specs]))[:, 0]
    np.testing.assert_allclose(flops, [10.0 * (i + 1) + 0.5 for i in range(8)])


def test_workload_variants_scale_the_batch_and_expand_math_attention():
    units = _units()
    workload = Workload(units=units, params=1e6, precision=parse_precision("bf16-mixed"))
    attention = workload.attention_specs()
    assert len(attention) == 1
    assert workload.flat_for(Variant()) is workload.flat()
    scaled = workload.flat_for(Variant(batch_scale=0.5))
    flops = scaled.per_unit(np.array([[s.flops] for s in scaled.specs]))[:, 0]
    base = _naive(units, lambda s: s.flops)
    np.testing.assert_allclose(flops[:-1], base[:-1] * 0.5)   # the optimizer does not scale with the batch
    assert flops[-1] == base[-1]
    math = workload.flat_for(Variant(attention=((attention[0], "math"),)))
    assert not any(s.op_class == "attention" for s in math.specs)   # the math path: GEMMs, softmax, ...
    assert math.kernels[0] > workload.flat().kernels[0]
    assert workload.flat_for(Variant(attention=((attention[0], "math"),))) is math   # cached


def test_unit_matrix_predicts_a_device_named_twice_once_and_alike(monkeypatch):
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()
    calls = []
    original = predictor.predict_matrix

    def spy(ops, devices):
        calls.append(len(devices))
        return original(ops, devices)

    monkeypatch.setattr(predictor, "predict_matrix", spy)
    a100, h100 = lookup_hardware("A100-SXM4-80GB"), lookup_hardware("H100-SXM5")
    both, _ = unit_matrix(_units(), [a100, h100, a100], predictor)
    alone, _ = unit_matrix(_units(), [a100], predictor)
    assert calls == [2, 1]
    np.testing.assert_allclose(both[:, 0], both[:, 2])
    np.testing.assert_allclose(both[:, 0], alone[:, 0])
    assert not np.allclose(both[:, 0], both[:, 1])


def _spied_predictor(monkeypatch) -> tuple:
    """The shipped predictor, and the list each `predict_matrix` call appends its (ops, devices) to."""
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()
    priced: list[tuple[int, int]] = []
    original = predictor.predict_matrix

    def spy(ops, devices):
        priced.append((len(ops), len(devices)))
        return original(ops, devices)

    monkeypatch.setattr(predictor, "predict_matrix", spy)
    return predictor, priced


def test_a_price_memo_predicts_only_the_specs_it_has_not_seen(monkeypatch):
    predictor, priced = _spied_predictor(monkeypatch)
    a100, h100 = lookup_hardware("A100-SXM4-80GB"), lookup_hardware("H100-SXM5")
    units = _units()
    memo = PriceMemo()
    first, _ = unit_matrix(units, [a100], predictor, memo)
    again, _ = unit_matrix(units, [a100], predictor, memo)        # nothing new: no prediction
    other = units + [Unit("head", "fwd", [(_gemm(4096), 1.0)])]
    more, _ = unit_matrix(other, [a100], predictor, memo)         # only the new GEMM
    wider, _ = unit_matrix(units, [a100, h100], predictor, memo)  # every spec, for the new GPU
    distinct = len(flatten(units).specs)
    assert priced == [(distinct, 1), (1, 1), (distinct, 2)]
    np.testing.assert_array_equal(again, first)
    np.testing.assert_allclose(more[:len(units)], first, rtol=1e-6)
    np.testing.assert_allclose(wider, unit_matrix(units, [a100, h100], predictor)[0], rtol=1e-6)


def test_the_predictor_runs_numpy_s_blas_on_one_thread():
    """Inside a training process every core is busy; a multi-threaded BLAS would wait for them."""
    threadpoolctl = pytest.importorskip("threadpoolctl", reason="scikit-learn's dependency, absent here")
    from predictor_models.predictor.model import one_blas_thread

    with one_blas_thread():
        blas = [lib for lib in threadpoolctl.threadpool_info() if lib.get("user_api") == "blas"]
        assert blas and all(lib["num_threads"] == 1 for lib in blas)


def test_flatten_after_a_flattened_head_equals_flattening_everything():
    """A layout target's rank reuses its split's flat view and adds its optimizer units."""
    units = _units()
    head, tail = units[:5], units[5:]
    whole, extended = flatten(units), flatten(tail, flatten(head))
    assert extended.n_units == whole.n_units
    assert [s.key for s in extended.specs] == [s.key for s in whole.specs]
    for name in ("unit_of", "op_of", "counts"):
        np.testing.assert_array_equal(getattr(extended, name), getattr(whole, name))


def test_flatten_goes_on_from_a_rewritten_view_as_from_a_flattened_one():
    """A flat view made by `Flat.rewritten` carries no interner of its own: flattening after it rebuilds one from its
    specs, and gives what flattening its units and the new ones at once gives."""
    units = _units()
    in_opt = np.array([u.phase == "opt" for u in units])
    head = flatten(units[:5]).rewritten(lambda spec, _: [(spec, 1.0)], in_opt[:5])
    extended, whole = flatten(units[5:], head), flatten(units)
    assert [s.key for s in extended.specs] == [s.key for s in whole.specs]
    for name in ("unit_of", "op_of", "counts"):
        np.testing.assert_array_equal(getattr(extended, name), getattr(whole, name))
    again = flatten(units[5:], head)   # the head's interner is not changed by what came after it
    np.testing.assert_array_equal(again.op_of, extended.op_of)
    assert len(head.specs) < len(extended.specs)


def test_unit_changed_is_dataclasses_replace():
    from dataclasses import fields, replace

    unit = Unit("block.0", "fwd", [(_gemm(512), 2.0)], measured_s=1e-3, python_s=2e-4, sequence=(0,))
    for changes in ({}, {"ops": []}, {"measured_s": None, "python_s": 5.0}, {"sequence": None, "ops": [(_gemm(64), 1.0)]}):
        assert unit.changed(**changes) == replace(unit, **changes)
    assert [f.name for f in fields(Unit)] == ["name", "phase", "ops", "measured_s", "python_s", "sequence"], \
        "a new Unit field must be carried by Unit.changed too"


def test_a_prefetch_prices_every_new_spec_in_one_call_and_later_calls_read_it(monkeypatch):
    predictor, priced = _spied_predictor(monkeypatch)
    a100, h100 = lookup_hardware("A100-SXM4-80GB"), lookup_hardware("H100-SXM5")
    units = _units()
    memo = PriceMemo()
    memo.prefetch(predictor, flatten(units).specs, [a100, h100, a100])
    on_a100, _ = unit_matrix(units, [a100], predictor, memo)
    on_h100, _ = unit_matrix(units, [h100], predictor, memo)
    assert priced == [(len(flatten(units).specs), 2)]
    np.testing.assert_allclose(on_a100, unit_matrix(units, [a100], predictor)[0], rtol=1e-6)   # BLAS blocks
    np.testing.assert_allclose(on_h100, unit_matrix(units, [h100], predictor)[0], rtol=1e-6)


def test_a_layout_transform_and_a_clone_of_the_same_bytes_stay_two_ops():
    """Dropping cuDNN's transforms on a target that does not run them keeps the model's own copy of the same tensor,
    and only the copy is a host-issued kernel (the flat view once merged them by content alone)."""
    from prenet_callbacks.projection.ops.layout import LAYOUT_NAME

    transform = OpSpec("data_movement", "float16", 0.0, 2e6, 2e6, {"numel": 1e6}, False, LAYOUT_NAME)
    clone = OpSpec("data_movement", "float16", 0.0, 2e6, 2e6, {"numel": 1e6}, False, "aten::clone")
    for order in ([(transform, 2.0), (clone, 1.0)], [(clone, 1.0), (transform, 2.0)]):
        workload = Workload([Unit("block", "fwd", order)], 1.0, parse_precision("16-true"))
        flat = workload.flat()
        assert len(flat.specs) == 2 and flat.kernels.tolist() == [1.0]
        kept = workload.flat_for(Variant(layout_transforms=False))
        assert [s.name for s in kept.specs] == ["aten::clone"] and kept.counts.tolist() == [1.0]


def test_targets_whose_variants_differ_are_priced_in_one_predictor_call(monkeypatch):
    """A T4 runs another attention kernel than an A100 (another flat view of the step): with a memo, both views'
    specs go to the predictor in one call, and each target's times are those it would have alone."""
    from prenet_callbacks.projection.ops.optimizer_ops import default_implementation
    from prenet_callbacks.projection.pricing.scaling import device_times

    predictor, priced = _spied_predictor(monkeypatch)
    accs = [lookup_hardware("A100-SXM4-80GB"), lookup_hardware("T4")]
    workload = Workload(_units(), 1e6, parse_precision("bf16-mixed"))
    variants = [workload.variant_for(acc, default_implementation(acc)) for acc in accs]
    flats = [workload.flat_for(v) for v in variants]
    assert flats[0] is not flats[1], "the test needs two variants"
    together = device_times(workload, accs, variants, predictor, PriceMemo())
    assert len(priced) == 1 and priced[0][1] == 2
    assert priced[0][0] == len({id(spec) for flat in flats for spec in flat.specs})
    for t, (acc, variant) in enumerate(zip(accs, variants)):
        alone = device_times(workload, [acc], [variant], predictor)
        np.testing.assert_allclose(together.per_unit[:, t], alone.per_unit[:, 0], rtol=1e-6)   # BLAS blocks


def test_per_unit_sums_in_float64_whatever_the_values_dtype():
    from prenet_callbacks.projection.ops.flat import Flat

    flat = Flat(specs=[None, None], unit_of=np.array([0, 0, 1]), op_of=np.array([0, 1, 1]),
                counts=np.array([1.5, 2.0, 0.5]), n_units=2)
    for values in (np.array([[3], [4]]), np.array([[3], [4]], dtype=np.float32)):   # ints, float32
        out = flat.per_unit(values)
        assert out.dtype == np.float64 and out[:, 0].tolist() == [1.5 * 3 + 2.0 * 4, 0.5 * 4]
