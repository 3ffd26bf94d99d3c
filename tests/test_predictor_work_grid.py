"""Held pointwise ops and norms never get faster with more work, at any size (predictor/work_grid.py)."""
from __future__ import annotations

import numpy as np
import pytest

from predictor_models.datasets.common import elementwise_op, norm_op
from predictor_models.hardware import list_hardware, lookup_hardware
from predictor_models.predictor import Predictor
from predictor_models.predictor import model as model_module
from predictor_models.predictor import work_grid as grid_module
from predictor_models.predictor.bound import bound_seconds, matrix
from predictor_models.predictor.devices import device_columns
from predictor_models.predictor.monotone import DESCENDING_DTYPES, HELD_DTYPES
from predictor_models.predictor.optable import op_columns
from predictor_models.predictor.work_grid import work_grid
from prenet_callbacks.projection.pricing.predictor_source import default_predictor


@pytest.fixture(scope="module")
def shipped() -> Predictor:
    return default_predictor()[0]


def _random_family(rng: np.random.Generator, sizes: np.ndarray, dtype: str | None = None) -> list:
    """One family (alike in all but the work dimension) at the given sizes, of a random kind and of ``dtype`` (or a
    random one)."""
    dtype = dtype or str(rng.choice(["bfloat16", "float16", "float32"]))   # fp32 held from above (DESCENDING_DTYPES)
    if rng.random() < 0.5:
        inputs = int(rng.integers(1, 4))
        name = str(rng.choice(["aten::add", "aten::mul", "aten::gelu", "aten::exp"]))
        return [elementwise_op(float(s), inputs, dtype, name=name) for s in sizes]
    cols = int(rng.choice([1, 7, 64, 333, 768, 4096, 12288]))
    name = str(rng.choice(["aten::native_layer_norm", "aten::_softmax"]))
    return [norm_op(int(s), cols, dtype, name=name) for s in sizes]


def test_more_work_is_never_faster_at_any_size_on_random_families_and_gpus(shipped: Predictor) -> None:
    """Sizes drawn at random (not powers of two apart), each family on random catalog GPUs: 0 violations."""
    rng = np.random.default_rng(20261206)
    catalog = [d for d in list_hardware(vendor="NVIDIA") if d.memory_bandwidth_gbs]
    checked = 0
    for _ in range(40):
        sizes = np.unique(np.round(np.exp(rng.uniform(0.0, np.log(2e8), size=25))).clip(1))
        family = _random_family(rng, sizes)
        devices = [catalog[i] for i in rng.choice(len(catalog), size=5, replace=False)]
        times = shipped.predict_matrix(family, devices)
        assert (times[1:] >= times[:-1] * (1 - 1e-9)).all()
        checked += times[1:].size
    assert checked > 3000


def test_a_held_op_is_never_below_its_roofline(shipped: Predictor) -> None:
    rng = np.random.default_rng(3)
    devices = [lookup_hardware(g) for g in ("T4", "A100", "H100", "B200", "L4")]
    family = _random_family(rng, np.unique(np.round(np.exp(rng.uniform(0, np.log(1e9), size=40)))))
    times = shipped.predict_matrix(family, devices)
    bounds = np.column_stack([shipped.bound_seconds(family, d) for d in devices])
    assert (times >= bounds * (1 - 1e-9)).all()


class _Dipping(Predictor):
    """Raw times that rise to 1e6 FLOPs and fall beyond: the grid must hold them."""

    @staticmethod
    def raw(flops: np.ndarray) -> np.ndarray:
        return np.where(flops < 1e6, 1e-8 * flops, 1e-2 * (1e6 / np.maximum(flops, 1.0)))

    def _times(self, cols, devices, rungs_from=None, adjust=True, alternatives=None):
        return np.repeat(self.raw(np.asarray(cols.flops, dtype=float))[:, None], len(devices), axis=1)


def test_the_grid_holds_a_dipping_model_at_its_running_maximum() -> None:
    model = _Dipping({}, {})
    device = lookup_hardware("A100")
    chain = [elementwise_op(2 ** i, 1, "bfloat16", name="aten::relu") for i in range(10, 26)]   # 1 FLOP an element
    model.monotone = frozenset()
    raw = model.predict_matrix(chain, [device])[:, 0]
    assert (raw[1:] < raw[:-1]).any()                    # the raw model dips
    model.monotone = HELD_DTYPES
    held = model.predict_matrix(chain, [device])[:, 0]
    assert (held[1:] >= held[:-1]).all()
    # at a grid point the time is the running maximum of the raw times on the grid below it
    grid = 2.0 ** (np.arange(0, 51) / grid_module.STEPS_PER_OCTAVE)
    assert held[-1] == pytest.approx(_Dipping.raw(grid).max())
    assert held[:10] == pytest.approx(raw[:10])           # below the dip the raw times are kept


def _price_every_row(monkeypatch) -> None:
    """Make the predictor price every grid row beyond a family's members (`work_grid.needed_candidates`)."""
    monkeypatch.setattr(model_module, "needed_candidates", lambda bounds, anchors: np.ones(len(bounds), dtype=bool))


class _PhysicalDipping(_Dipping):
    """The dipping model never below the roofline, as every predictor's `_times` is."""

    def _times(self, cols, devices, rungs_from=None, adjust=True, alternatives=None):
        return np.maximum(super()._times(cols, devices), bound_seconds(matrix(cols, device_columns(devices))))


def test_an_fp32_family_is_held_from_above_whatever_else_the_step_holds() -> None:
    """From above, each size takes the least time of any larger size up to the grid's reach (256 GiB moved): the dip
    lowers the sizes below it, never raises one, and an op's price is the same alone as beside larger members."""
    model = _PhysicalDipping({}, {})
    device = lookup_hardware("A100")
    chain = [elementwise_op(2 ** i, 1, "float32", name="aten::relu") for i in range(10, 26)]   # 1 FLOP an element
    model.monotone, model.descending = HELD_DTYPES, frozenset()
    raw = model.predict_matrix(chain, [device])[:, 0]
    assert (raw[1:] < raw[:-1]).any()                    # the raw model dips, and fp32 is not held from below
    model.descending = DESCENDING_DTYPES
    held = model.predict_matrix(chain, [device])[:, 0]
    assert (held[1:] >= held[:-1]).all()
    assert (held <= raw * (1 + 1e-12)).all() and (held < raw * 0.5).any()   # lowered where it dipped, never raised
    alone = np.array([model.predict_matrix([op], [device])[0, 0] for op in chain])
    assert alone == pytest.approx(held, rel=1e-12)
    # on a grid point the time is the least over the grid's larger sizes up to the reach
    reach = grid_module.LARGEST_OP_BYTES / ((chain[0].bytes_read + chain[0].bytes_written) / 2 ** 10)
    steps = grid_module.STEPS_PER_OCTAVE
    sizes = 2.0 ** (np.arange(10 * steps, np.ceil(steps * np.log2(reach)) + 1) / steps)
    larger = model.predict_matrix([elementwise_op(s, 1, "float32", name="aten::relu") for s in sizes], [device])
    model.descending = frozenset()
    raw_larger = model.predict_matrix([elementwise_op(s, 1, "float32", name="aten::relu") for s in sizes], [device])
    assert held[0] == pytest.approx(raw_larger.min(), rel=1e-12)
    assert larger[0, 0] == pytest.approx(held[0], rel=1e-12)


def test_rows_beyond_the_members_are_priced_only_where_they_could_lower_one(shipped: Predictor, monkeypatch) -> None:
    """Pricing every candidate row beyond a family's members gives the same times as pricing only those whose roofline
    lies below their anchor's time (`work_grid.needed_candidates`), on random fp32 families and catalog GPUs."""
    rng = np.random.default_rng(20261207)
    catalog = [d for d in list_hardware(vendor="NVIDIA") if d.memory_bandwidth_gbs]
    ops = []
    for _ in range(12):
        sizes = np.unique(np.round(np.exp(rng.uniform(0.0, np.log(2e8), size=int(rng.integers(1, 8))))).clip(1))
        ops += _random_family(rng, sizes, "float32")
    devices = [catalog[i] for i in rng.choice(len(catalog), size=8, replace=False)]
    pruned = shipped.predict_matrix(ops, devices)
    _price_every_row(monkeypatch)
    # the class models run in float32: rows priced in another matrix round otherwise
    np.testing.assert_allclose(shipped.predict_matrix(ops, devices), pruned, rtol=1e-6)


def test_a_family_shares_one_grid_that_keeps_its_other_columns() -> None:
    """Norms of one width share a grid from one row up to the largest; another width is another family; fp32 is not
    held (its public small-op times carry a host lag)."""
    ops = [norm_op(rows, 768, "bfloat16", name="aten::native_layer_norm") for rows in (100, 1000, 4096)]
    ops.append(norm_op(1000, 64, "bfloat16", name="aten::native_layer_norm"))
    ops.append(norm_op(1000, 768, "float32", name="aten::native_layer_norm"))
    cols = op_columns(ops)
    hold = np.array([op.dtype in HELD_DTYPES for op in ops])
    grid = work_grid(cols, hold, steps_per_octave=2)
    assert grid.held.tolist() == [0, 1, 2, 3]
    assert grid.family_starts.tolist() == [0, 21]        # 64 columns: 1 .. 2^10 in half octaves (21 points)
    assert len(grid.cols) == 21 + 25                     # 768 columns: 1 .. 2^12 (4096 is a grid point)
    widths = grid.cols.dims[:, list(op_columns([ops[0]]).dims[0]).index(768.0)]
    assert set(widths[:21]) == {64.0} and set(widths[21:]) == {768.0}
    # 4096 rows sit on a grid point: no interpolation
    assert grid.weight[2] == 0.0 and grid.lower[2] == grid.upper[2] == 21 + 24
    assert work_grid(op_columns(ops[4:]), np.array([False])) is None


def test_grid_rows_scale_flops_and_bytes_with_the_work() -> None:
    op = elementwise_op(3000.0, 2, "float16", name="aten::add")
    grid = work_grid(op_columns([op]), np.array([True]), steps_per_octave=1)
    sizes = 2.0 ** np.arange(len(grid.cols))
    assert len(grid.cols) == 13                           # 1 .. 4096, the first power of two at or above 3000
    assert np.allclose(grid.cols.flops, op.flops / 3000.0 * sizes)
    assert np.allclose(grid.cols.bytes, (op.bytes_read + op.bytes_written) / 3000.0 * sizes)
    assert grid.lower[0] == 11 and grid.upper[0] == 12
    assert grid.weight[0] == pytest.approx(np.log2(3000.0) - 11)


def test_row_groups_number_rows_as_numpys_unique_does() -> None:
    rng = np.random.default_rng(7)
    for n, k in ((1, 3), (2, 1), (40, 6), (300, 9)):
        rows = rng.choice([0.0, -0.0, 0.5, 2.0, 1e9], size=(n, k))
        rows[n // 2:] = rows[: n - n // 2]   # repeated rows
        expected = np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1)
        np.testing.assert_array_equal(grid_module._row_groups(rows), expected)
    assert grid_module._row_groups(np.zeros((0, 4))).size == 0


class _CheapLargeOpsOnOne(Predictor):
    """An adjustment that need not keep the roofline: on one device, ops moving over 1 GiB at a thousandth."""

    def __init__(self, shipped: Predictor, device: str) -> None:
        super().__init__(shipped.models, shipped._metadata, shipped.heldout, networks=shipped.networks)
        self.device = device

    def adjusted_devices(self, names):
        return np.array([name == self.device for name in names])

    def adjust_times(self, cols, devs, times, bound):
        large = (np.asarray(cols.bytes) > 2.0 ** 30)[:, None] & self.adjusted_devices(devs.names)[None, :]
        return np.where(large, times / 1000.0, times)


def test_a_device_an_adjustment_changes_prices_every_row_beyond_the_members(shipped: Predictor, monkeypatch) -> None:
    """An adjusted device's times may lie below their bound, so no row beyond a family's members is left unpriced for
    it: the times are those of pricing every row (the bounds alone would leave out the far rows it makes cheap)."""
    adjusted = _CheapLargeOpsOnOne(shipped, "A100-SXM4-80GB")
    devices = [lookup_hardware("A100-SXM4-80GB"), lookup_hardware("T4")]
    ops = [elementwise_op(float(n), 2, "float32", name="aten::add") for n in (1e3, 3e4, 1e6)]
    ops += [norm_op(r, 768, "float32", name="aten::native_layer_norm") for r in (8, 512)]
    priced = adjusted.predict_matrix(ops, devices)
    _price_every_row(monkeypatch)
    np.testing.assert_allclose(adjusted.predict_matrix(ops, devices), priced, rtol=1e-6)
