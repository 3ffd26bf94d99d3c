"""The predictor never prices more work faster: pointwise ops and norms on their grid (work_grid.py, and
tests/test_predictor_work_grid.py), the work ladder (predictor_models/predictor/monotone.py) for the rest."""
from __future__ import annotations

import numpy as np
import pytest

from predictor_models.datasets.common import conv_op, elementwise_op, gemm_op, norm_op
from predictor_models.hardware import lookup_hardware
from predictor_models.predictor import Predictor
from predictor_models.predictor.monotone import HELD_DTYPES, ladder_columns, smaller_ops
from predictor_models.predictor.optable import op_columns
from prenet_callbacks.projection.pricing.predictor_source import default_predictor

GPUS = ("T4", "V100", "A100", "H100", "RTX 4090", "L4", "B200")


@pytest.fixture(scope="module")
def shipped() -> Predictor:
    return default_predictor()[0]


def _drops(times: np.ndarray) -> np.ndarray:
    """Ratio of each op's time to the next (2x the work) one's, per device: > 1 is a violation."""
    return times[:-1] / times[1:]


# fp32 ops are held from above: their public small-op times carry a host lag (monotone.DESCENDING_DTYPES)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_pointwise_time_never_falls_as_elements_double(shipped: Predictor, dtype: str) -> None:
    devices = [lookup_hardware(g) for g in GPUS]
    for inputs in (1, 2, 3):
        chain = [elementwise_op(2 ** i, inputs, dtype, name="aten::add") for i in range(6, 29)]
        assert _drops(shipped.predict_matrix(chain, devices)).max() <= 1 + 1e-6   # float rounding only


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_a_norm_never_falls_as_its_rows_double(shipped: Predictor, dtype: str) -> None:
    """Norms are held along their rows (`work_grid.GRID_DIMS`), their weights a fixed part of their bytes."""
    devices = [lookup_hardware(g) for g in GPUS]
    for cols in (64, 768, 4096):
        chain = [norm_op(2 ** i, cols, dtype, name="aten::native_layer_norm") for i in range(0, 17)]
        assert _drops(shipped.predict_matrix(chain, devices)).max() <= 1 + 1e-6


def test_the_lattice_holds_every_smaller_point_and_nothing_else(monkeypatch) -> None:
    import predictor_models.predictor.monotone as monotone

    op = norm_op(8, 4, "float32", name="aten::native_layer_norm")
    assert smaller_ops(op) == []     # norms and pointwise ops are held on their grid (work_grid.py), not a ladder
    assert [o.dims["n"] for o in smaller_ops(conv_op(8, 16, 16, 32, 32, 3, 3, 1, 1, "float16"))] == [4, 2, 1]
    monkeypatch.setitem(monotone.WORK_DIMS, "norm", ("rows",))          # the ladder is generic: as norms had
    monkeypatch.setitem(monotone.WORK_DIMS, "elementwise", ("numel",))
    assert [(o.dims["rows"], o.dims["cols"]) for o in smaller_ops(op)] == [(4, 4), (2, 4), (1, 4)]   # rows only
    monkeypatch.setitem(monotone.WORK_DIMS, "norm", ("rows", "cols"))   # a 2-D lattice, as norms had
    points = {(o.dims["rows"], o.dims["cols"]) for o in smaller_ops(op)}
    assert points == {(r, c) for r in (8, 4, 2, 1) for c in (4, 2, 1)} - {(8, 4)}
    smaller = smaller_ops(elementwise_op(1024, 2, "bfloat16", name="aten::mul"))
    assert [o.dims["numel"] for o in smaller] == [512, 256, 128, 64, 32, 16, 8, 4, 2, 1]
    assert all(o.bytes_read == 2 * o.bytes_written for o in smaller)
    assert smaller_ops(gemm_op(1, 64, 64, 64, "float32")) == []   # GEMMs are not held (module docstring)


def work_ladder(ops):
    """Every held op's `smaller_ops`, flattened, and for each the index of the op it belongs to (the reference)."""
    pairs = [(rung, i) for i, op in enumerate(ops) if op.dtype in HELD_DTYPES for rung in smaller_ops(op)]
    return [rung for rung, _ in pairs], [i for _, i in pairs]


def assert_columns_ladder_is_the_lattice(ops) -> None:
    """`ladder_columns` gives `work_ladder`'s rungs and owners, in order, field for field (and some rungs)."""
    expected, expected_owner = work_ladder(ops)
    found, owner = ladder_columns(ops, op_columns(ops))
    want = op_columns(expected)
    assert owner.tolist() == expected_owner and len(found) == len(want) > 0
    for field in ("op_class", "mode", "flops", "bytes", "dims", "heavy", "softmax", "esize"):
        assert np.array_equal(getattr(found, field), getattr(want, field)), field


def test_the_ladder_built_as_columns_is_the_lattice_of_ops(monkeypatch) -> None:
    """`ladder_columns` (what predictions use) builds the same rungs, in the same order, as `work_ladder`."""
    import predictor_models.predictor.monotone as monotone

    monkeypatch.setitem(monotone.WORK_DIMS, "norm", ("rows",))
    monkeypatch.setitem(monotone.WORK_DIMS, "elementwise", ("numel",))
    ops = [norm_op(96, 640, "bfloat16", name="aten::native_layer_norm"), gemm_op(1, 64, 64, 64, "bfloat16"),
           elementwise_op(3000, 3, "float16", name="aten::gelu"), elementwise_op(4096, 2, "float32", name="aten::add"),
           norm_op(1, 1, "bfloat16", name="aten::softmax")]
    assert_columns_ladder_is_the_lattice(ops)
    assert ladder_columns(ops[1:2], op_columns(ops[1:2]))[0] is None


def test_the_columns_ladder_matches_the_lattice_on_random_ops_and_a_2d_lattice(monkeypatch) -> None:
    """The vectorised rungs (one work dimension) and the per-op lattice (several) give `work_ladder`'s rungs, in
    order, for sizes that are not powers of two, below 2, and past `MAX_RUNGS` halvings."""
    import predictor_models.predictor.monotone as monotone

    rng = np.random.default_rng(7)
    ops = []
    for i in range(60):
        dtype = ("bfloat16", "float16", "float32")[i % 3]
        size = float(rng.choice([1, 1.5, 2, 3, 7, 1024, 3000, 65536, 65537, 2 ** 20 + 3, 1e9]))
        ops.append(elementwise_op(size, 1 + i % 3, dtype, name="aten::add") if i % 2 else
                   norm_op(int(rng.integers(1, 300)), int(rng.integers(1, 300)), dtype, name="aten::native_layer_norm"))
    monkeypatch.setitem(monotone.WORK_DIMS, "norm", ("rows", "cols"))   # mixes a 2-D lattice with the 1-D rungs
    monkeypatch.setitem(monotone.WORK_DIMS, "elementwise", ("numel",))
    assert_columns_ladder_is_the_lattice(ops)
