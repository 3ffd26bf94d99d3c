"""The prediction's shortcuts give the numbers of the plain path: repeated ops tabulated once, class models skipped
where a network prices the pair, and a network's ladder rungs standing at their bound."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from benchmarks.predictor_speed import mixed_ops
from predictor_models.datasets.common import conv_op, elementwise_op, gemm_op, norm_op
from predictor_models.hardware import list_hardware
from predictor_models.op_spec import OpSpec
from predictor_models.predictor import Predictor, load_predictor
from predictor_models.predictor.model import _distinct_ops, _pattern_blocks


@pytest.fixture(scope="module")
def shipped() -> Predictor:
    return load_predictor(None)


@pytest.fixture(scope="module")
def devices() -> list:
    return [d for d in list_hardware() if d.memory_bandwidth_gbs]


class EveryRungPriced(Predictor):
    """The shipped models with an identity adjustment said to touch every device: no shortcut assumes the models'
    own order, so every ladder rung is priced by the model that prices its class and mode."""

    def __init__(self, base: Predictor) -> None:
        super().__init__(base.models, base.metadata, base.heldout, base.default_utilisation, base.networks)

    def adjusted_devices(self, names):
        return np.ones(len(names), dtype=bool)

    def adjust_times(self, cols, devs, times, bound):
        return times


def _mixed_step() -> list:
    """Half-precision convolutions (network-priced on tensor-core GPUs, fp32-priced on the others, each with a
    batch ladder), norms and adds with their ladders, GEMMs: what a step holds."""
    ops = []
    for dtype in ("float16", "bfloat16", "float32"):
        for n in (3, 16, 64):
            ops.append(conv_op(n, 64, 128, 56, 56, 3, 3, 1, 1, dtype))
            ops.append(conv_op(n, 256, 64, 28, 28, 1, 1, 2, 1, dtype))
        ops += [norm_op(4096, 768, dtype, name="aten::native_layer_norm"),
                elementwise_op(3 * 2 ** 20, 2, dtype, name="aten::add"), gemm_op(1, 4096, 768, 3072, dtype)]
    return ops


def _without_envelope(predictor: Predictor) -> Predictor:
    """The device envelope keeps a calibrated device's own times: off here, where rungs alone are compared (on
    a new instance: the shipped one is shared)."""
    predictor.device_envelope = False
    return predictor


def test_every_rung_priced_gives_the_same_times(devices):
    ops = _mixed_step()
    base = load_predictor(None)
    plain = Predictor(base.models, base.metadata, base.heldout, base.default_utilisation, base.networks)
    fast = _without_envelope(plain).predict_matrix(ops, devices)
    full = _without_envelope(EveryRungPriced(base)).predict_matrix(ops, devices)
    np.testing.assert_allclose(fast, full, rtol=1e-12)
    assert np.all(fast > 0)


def test_repeated_ops_get_the_rows_of_their_first_copy(shipped, devices):
    ops = _mixed_step()
    repeated = [ops[i % len(ops)] for i in range(5 * len(ops))]
    # equal content in new objects merges too; another label or dims key order never merges wrongly
    repeated += [replace(op) for op in ops] + [replace(ops[0], name="aten::cudnn_convolution")]
    out = shipped.predict_matrix(repeated, devices)
    alone = shipped.predict_matrix(ops, devices)
    np.testing.assert_allclose(out[:len(ops)], alone, rtol=1e-12)
    np.testing.assert_array_equal(out[:5 * len(ops)].reshape(5, len(ops), -1), np.broadcast_to(out[:len(ops)], (5, len(ops), len(devices))))
    np.testing.assert_allclose(out[5 * len(ops):6 * len(ops)], alone, rtol=1e-12)
    distinct, inverse, _ = _distinct_ops(repeated)
    assert len(distinct) == len(ops) + 1 and inverse.tolist()[:len(ops)] == list(range(len(ops)))


def test_a_benchmark_mix_predicts_as_each_op_alone(shipped, devices):
    ops = mixed_ops(300, seed=3)
    together = shipped.predict_matrix(ops, devices[:12])
    for i in range(0, 300, 37):   # the class models run in float32: a matrix of another shape rounds otherwise
        np.testing.assert_allclose(together[i], shipped.predict_matrix([ops[i]], devices[:12])[0], rtol=1e-6)


@pytest.mark.parametrize("devices", [7, 64, 65, 130])   # patterns of at most 8 bytes, and longer ones
def test_pattern_blocks_cover_exactly_the_wanted_cells(devices):
    rng = np.random.default_rng(devices)
    rows = np.arange(10, 50)
    patterns = rng.random((4, devices)) < 0.5
    patterns[0] = False                       # a row no device wants gets no block
    wanted = np.repeat(patterns, 10, axis=0)[rng.permutation(40)]
    covered = np.zeros((60, devices), dtype=int)
    blocks = list(_pattern_blocks(rows, wanted))
    for r, on in blocks:
        covered[np.ix_(r, on)] += 1
    expected = np.zeros((60, devices), dtype=int)
    expected[10:50] = wanted
    np.testing.assert_array_equal(covered, expected)
    assert len(blocks) == len({p.tobytes() for p in patterns[1:]})
    assert list(_pattern_blocks(rows[:0], wanted[:0])) == []


def test_ops_whose_dims_differ_in_names_or_values_stay_apart():
    base = OpSpec("gemm", "float32", 1e6, 1e3, 1e3, {"m": 1.0, "n": 2.0}, False, "aten::mm")
    others = [replace(base, dims={"m": 2.0, "n": 1.0}), replace(base, dims={"n": 1.0, "m": 2.0}),
              replace(base, dims={"m": 1.0}), replace(base, dims={"m": 1.0, "n": 2.0, "k": 0.0}), replace(base, dims={})]
    distinct, inverse, keys = _distinct_ops([base, *others, replace(base)])
    assert len(distinct) == 6 and inverse.tolist() == [0, 1, 2, 3, 4, 5, 0] and len(keys) == 6


class OneDeviceBent(Predictor):
    """An adjustment that does not keep the models' order (a calibration's may not), on the first device only;
    ``claim_all`` says every device may be adjusted, which turns every shortcut off."""

    def __init__(self, base: Predictor, claim_all: bool) -> None:
        super().__init__(base.models, base.metadata, base.heldout, base.default_utilisation, base.networks)
        self.claim_all = claim_all

    def adjusted_devices(self, names):
        out = np.zeros(len(names), dtype=bool)
        out[[i for i, name in enumerate(names) if name == "A100-SXM4-80GB" or self.claim_all]] = True
        return out

    def adjust_times(self, cols, devs, times, bound):
        for j, name in enumerate(devs.names):
            if name == "A100-SXM4-80GB":
                times[:, j] = 1e-4 * (times[:, j] / 1e-4) ** -0.5   # reverses the order: rungs pass their owners
        return times


def test_a_calibrated_device_keeps_every_rung_and_the_others_keep_the_shortcut(shipped):
    devices = [d for d in list_hardware() if d.name in ("A100-SXM4-80GB", "H100-SXM5", "V100-SXM2-32GB", "L4")]
    ops = _mixed_step()
    partial = _without_envelope(OneDeviceBent(shipped, claim_all=False)).predict_matrix(ops, devices)
    full = _without_envelope(OneDeviceBent(shipped, claim_all=True)).predict_matrix(ops, devices)
    np.testing.assert_allclose(partial, full, rtol=1e-12)


def test_a_projection_remembers_each_op_once_and_gives_the_same_rows(monkeypatch):
    """`Predictor.remembering` (a projection's scope, and the session's two projections of its first prediction): the
    rows of plain and layout targets equal those priced with nothing remembered, a projection prices no more (op,
    GPU) pairs with it (inside one projection its `PriceMemo` already sends each spec once), and a second projection
    in the same scope prices none."""
    import contextlib

    from benchmarks.projection_speed import synthetic_report, targets
    from prenet_callbacks.projection import project_report

    names = targets(12, 4)
    predictor = load_predictor(None)
    priced = {"cells": 0}
    original = Predictor._predict_distinct

    def counting(self, ops, devices):
        priced["cells"] += len(ops) * len(devices)
        return original(self, ops, devices)

    def twice() -> tuple[list, int, int]:
        priced["cells"] = 0
        with predictor.remembering():
            rows = project_report(synthetic_report(40), names, predictor=predictor)
            first = priced["cells"]
            project_report(synthetic_report(40), names, predictor=predictor)
        return rows, first, priced["cells"] - first

    monkeypatch.setattr(Predictor, "_predict_distinct", counting)
    remembered, with_memo, again = twice()
    monkeypatch.setattr(Predictor, "remembering", lambda self: contextlib.nullcontext(self))
    plain, without, again_without = twice()
    assert [r["name"] for r in remembered] == [r["name"] for r in plain] and len(plain) > 10
    for a, b in zip(remembered, plain):
        assert a["step_s"] == pytest.approx(b["step_s"], rel=1e-6), a["name"]
    assert with_memo <= without and again == 0 < again_without == without


def test_the_remembered_times_keep_their_rows_as_new_ops_and_devices_come():
    """The scope's table: a key keeps its row, a device's column grows (NaN for what it has not priced) and keeps
    what was written in it."""
    from predictor_models.predictor.price_table import PriceTable

    memo = PriceTable()
    rows = memo.rows([("a",), ("b",)])
    (column,) = memo.columns(["H100"])
    column[rows] = [1.0, 2.0]
    more = memo.rows([("c",), ("a",), ("d",), ("e",)])
    assert more.tolist() == [2, 0, 3, 4]
    h100, a100 = memo.columns(["H100", "A100"])
    assert h100[[0, 1]].tolist() == [1.0, 2.0] and np.isnan(h100[more[[0, 2, 3]]]).all()
    assert a100.size >= 5 and np.isnan(a100).all()
