"""The lattice trial's search is exact and its prices monotone (`benchmarks/gemm_lattice_trial.py`)."""
from __future__ import annotations

import itertools

import numpy as np

from benchmarks.gemm_lattice_trial import Lattice, _roofline, lattice_prices

PEAK, BANDWIDTH = 1e10, 1e9     # a slow device, so the lattice's rooflines climb past small times soon


def _synthetic(points: np.ndarray) -> np.ndarray:
    """A time per lattice point between its roofline and 6x it, fixed by the point (not monotone in it)."""
    rng = np.random.default_rng([int(x) for x in points.reshape(-1)] + [7])
    return _roofline(points, PEAK, BANDWIDTH) * np.exp(rng.uniform(0.0, np.log(6.0), size=len(points)))


def _price(points: np.ndarray) -> np.ndarray:
    return np.concatenate([_synthetic(p[None, :]) for p in points])


def test_the_suffix_minimum_equals_a_search_of_every_larger_point() -> None:
    lattice = Lattice(_price, PEAK, BANDWIDTH)
    corners = np.array([[0, 0, 0, 0], [0, 2, 1, 3], [1, 3, 3, 0], [0, 5, 2, 2]])
    limit = 12
    box = np.array(list(itertools.product(range(limit), repeat=4)))
    times = _price(box)
    for corner, held in zip(corners, lattice.held_times(corners)):
        above = np.all(box >= corner, axis=1)
        assert held == times[above].min()
        # the box is large enough: a point past it in any dimension has a roofline above the held time
        for axis in range(4):
            past = corner.copy()
            past[axis] = limit
            assert _roofline(past[None, :], PEAK, BANDWIDTH)[0] > held


def test_lattice_prices_never_fall_as_any_dimension_grows() -> None:
    lattice = Lattice(_price, PEAK, BANDWIDTH)
    rng = np.random.default_rng(3)
    for axis in range(4):
        base = np.exp(rng.uniform(0.0, np.log(40.0), size=4))
        grow = np.sort(np.exp(rng.uniform(0.0, np.log(30.0), size=25)))
        dims = np.tile(base, (grow.size, 1))
        dims[:, axis] *= grow
        bound = _roofline(np.log2(dims), PEAK, BANDWIDTH)      # any non-decreasing bound
        prices = lattice_prices(lattice, dims, bound)
        assert np.all(np.diff(prices) >= -1e-15 * prices[1:]), (axis, prices)


def test_the_ceilings_round_up_onto_their_lattices() -> None:
    from benchmarks.gemm_lattice_trial import _geometric_ceil, _tile_ceil

    for value in (1, 3, 63, 64, 65, 100, 1000, 4097):
        up = _geometric_ceil(value, 8)
        assert value <= up < value * (1 + 1 / 8) + 1e-9
        base = 2.0 ** np.floor(np.log2(up))
        assert abs((up / base - 1) * 8 - round((up / base - 1) * 8)) < 1e-9     # on an eighth of the octave
        tile = _tile_ceil(value, 64)
        assert tile >= value and (tile % 64 == 0 if value > 64 else np.log2(tile).is_integer())
