"""Trial (issue 38): FP32 and TF32 GEMMs held from above on a lattice of sizes in all four dimensions.

    python benchmarks/gemm_lattice_trial.py --variant shipped|lattice|interpolated [--in-sample] [--json OUT]
    python benchmarks/gemm_lattice_trial.py --variant shipped --ceilings [--json OUT]

A larger GEMM's kernel can do a smaller one's work (padding), so a GEMM should never cost more than any GEMM at
least as large in b, m, n and k. The class model breaks that on FP32 and TF32 GEMMs (`predictor_physics.py`: 885 grid
steps, all where the larger GEMM takes 5-58 us). Here each such GEMM is priced from a lattice of GEMMs whose b, m, n
and k are powers of two: each lattice point takes the least class-model time over the lattice points at least as
large in every dimension (a suffix minimum in four dimensions), and a GEMM between lattice points is the multilinear
interpolation of its cell's 16 corners in log time and log size, then held at or above its own roofline. A lattice
that is non-decreasing in each dimension interpolates to a non-decreasing function, so the price is monotone in the
work for every input. The suffix minimum needs only the lattice points whose roofline on the device lies below the
corner's own time: a point at or above it cannot lower the corner (a time is never below its roofline), and every
point in between on a monotone path has a smaller roofline, so the search from each corner stops there and is exact.

``--in-sample`` scores the shipped class model and the lattice on the training set's FP32 and TF32 GEMM rows (MAPE
per GPU; the lattice's cost on the rows the class model was fitted to). The whole-step sets are those of
`tf32_conv_levelled_trial.py`. The predictor is patched in this process only.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402

HELD_MODES = (0, 1)     # fp32 and tf32 (`devices.MODES`)
DIMS = ("b", "m", "n", "k")
STEPS = np.eye(4, dtype=np.int64)
CORNERS = np.array(list(itertools.product((0, 1), repeat=4)), dtype=np.int64)   # (16, 4)


def lattice_columns(points: np.ndarray, mode: int):
    """`OpColumns` of the FP32 GEMMs at the lattice ``points`` (rows of log2 b, m, n, k), in math ``mode``."""
    from predictor_models.predictor.optable import DIM_KEYS, OpColumns

    b, m, n, k = (2.0 ** points[:, i] for i in range(4))
    dims = np.zeros((len(points), len(DIM_KEYS)))
    for i, key in enumerate(DIMS):
        dims[:, DIM_KEYS.index(key)] = 2.0 ** points[:, i]
    count = len(points)
    return OpColumns(np.full(count, "gemm", dtype=object), np.full(count, mode, dtype=np.int64), 2.0 * b * m * n * k,
                     4.0 * (b * m * k + b * k * n + b * m * n), dims, np.zeros(count), np.zeros(count),
                     np.full(count, 4.0))


def _roofline(points: np.ndarray, peak: float, bandwidth: float) -> np.ndarray:
    from predictor_models.predictor.bound import LAUNCH_S

    b, m, n, k = (2.0 ** points[:, i] for i in range(4))
    return np.maximum(2.0 * b * m * n * k / peak, 4.0 * (b * m * k + b * k * n + b * m * n) / bandwidth) + LAUNCH_S


class Lattice:
    """The lattice times of one device and math mode, priced on demand by ``price(points) -> seconds``."""

    def __init__(self, price, peak: float, bandwidth: float, hold: bool = True) -> None:
        self.price, self.peak, self.bandwidth, self.hold = price, peak, bandwidth, hold
        self.times: dict[tuple, float] = {}
        self.held: dict[tuple, float] = {}
        self.points_priced = 0

    def _ensure(self, points: list[tuple]) -> None:
        fresh = [p for p in dict.fromkeys(points) if p not in self.times]
        if fresh:
            seconds = self.price(np.array(fresh, dtype=np.int64))
            self.times.update(zip(fresh, seconds.tolist()))
            self.points_priced += len(fresh)

    def held_times(self, corners: np.ndarray) -> np.ndarray:
        """The suffix minimum at each corner: the least time over the lattice points at least as large in every
        dimension (searched only where the roofline lies below the corner's own time)."""
        keys = [tuple(c) for c in corners.tolist()]
        if not self.hold:       # the lattice's own times: interpolation alone, for comparison
            self._ensure(keys)
            return np.array([self.times[k] for k in keys])
        todo = [c for c in dict.fromkeys(keys) if c not in self.held]
        if todo:
            self._ensure(todo)
            # every point reachable from a corner through points whose roofline is below that corner's time
            reach: dict[tuple, float] = {}
            frontier = {c: self.times[c] for c in todo}
            while frontier:
                for p, limit in frontier.items():
                    reach[p] = max(reach.get(p, 0.0), limit)
                nxt: dict[tuple, float] = {}
                cand = np.array([p for p in frontier], dtype=np.int64)
                limits = np.array([frontier[p] for p in frontier])
                for step in STEPS:
                    up = cand + step
                    ok = _roofline(up, self.peak, self.bandwidth) < limits
                    for p, limit in zip(map(tuple, up[ok].tolist()), limits[ok].tolist()):
                        if reach.get(p, 0.0) < limit and nxt.get(p, 0.0) < limit:
                            nxt[p] = limit
                frontier = nxt
            self._ensure(list(reach))
            best: dict[tuple, float] = {}
            for p in sorted(reach, key=sum, reverse=True):   # larger points first
                value = self.times[p]
                for step in STEPS:
                    q = tuple(np.add(p, step).tolist())
                    if q in best:
                        value = min(value, best[q])
                best[p] = value
            for c in todo:
                self.held[c] = best[c]
        return np.array([self.held[k] for k in keys])


def lattice_prices(lattice: Lattice, dims: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Seconds of GEMMs with ``dims`` (rows of b, m, n, k) from ``lattice``: the multilinear interpolation of their
    cells' held corner times in log time and log size, at or above ``bound``."""
    u = np.log2(np.maximum(dims, 1.0))
    lo = np.floor(u + 1e-9).astype(np.int64)
    frac = np.clip(u - lo, 0.0, 1.0)
    log_t = np.zeros(len(dims))
    for corner in CORNERS:
        weight = np.prod(np.where(corner == 1, frac, 1.0 - frac), axis=1)
        use = weight > 0
        if use.any():
            log_t[use] += weight[use] * np.log(lattice.held_times(lo[use] + corner))
    return np.maximum(np.exp(log_t), bound)


def install(hold: bool = True) -> dict:
    """Price the default predictor's FP32 and TF32 GEMMs from their lattices (this process only; ``hold``: the suffix
    minimum, else the lattice's own times, interpolation alone); returns the lattices by (device, mode)."""
    from predictor_models.predictor.bound import bound_seconds, matrix
    from predictor_models.predictor.devices import device_columns
    from predictor_models.predictor.model import Predictor
    from predictor_models.predictor.optable import DIM_KEYS
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()
    original = Predictor._times
    lattices: dict = {}
    inside = []

    def times(self, cols, devices, rungs_from=None):
        out = original(self, cols, devices, rungs_from)
        if self is not predictor or inside:
            return out
        rows = np.flatnonzero((cols.op_class == "gemm") & np.isin(cols.mode, HELD_MODES))
        if not rows.size:
            return out
        inside.append(True)
        try:
            sub = cols.take(rows)
            devs = device_columns(devices)
            bound = bound_seconds(matrix(sub, devs))
            dims = np.stack([sub.dims[:, DIM_KEYS.index(k)] for k in DIMS], axis=1)
            for j, device in enumerate(devices):
                for mode in HELD_MODES:
                    these = np.flatnonzero(sub.mode == mode)
                    if not these.size:
                        continue
                    key = (device.name, mode)
                    if key not in lattices:
                        lattices[key] = Lattice(
                            lambda points, d=device, m=mode: original(predictor, lattice_columns(points, m), [d])[:, 0],
                            float(devs.peaks[j, mode]), float(devs.bandwidth[j]), hold)
                    out[rows[these], j] = lattice_prices(lattices[key], dims[these], bound[these, j])
        finally:
            inside.pop()
        return out

    Predictor._times = times
    return lattices


def in_sample() -> dict:
    """MAPE of the current default predictor on the training set's FP32 and TF32 GEMM rows, per GPU."""
    from predictor_models.hardware import lookup_hardware
    from predictor_models.train import load_training_set
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()
    ts, _ = load_training_set(None, None, None)
    keep = (ts.ops.op_class == "gemm") & np.isin(ts.ops.mode, HELD_MODES)
    out, total, n = {}, 0.0, 0
    for gpu in sorted(set(ts.gpu[keep].tolist())):
        rows = np.flatnonzero(keep & (ts.gpu == gpu))
        held = ts.take(rows)
        predicted = predictor.predict_seconds([s.op for s in held.samples], lookup_hardware(gpu))
        ape = np.abs(predicted / held.seconds - 1.0)
        out[gpu] = {"n": int(rows.size), "mape": round(float(ape.mean()), 4)}
        total, n = total + float(ape.sum()), n + int(rows.size)
        print(gpu, out[gpu], flush=True)
    out["all"] = {"n": n, "mape": round(total / n, 4)}
    return out


def _geometric_ceil(value: float, per_octave: int) -> float:
    """The smallest point at or above ``value`` of a lattice with ``per_octave`` evenly spaced points per octave."""
    value = max(float(value), 1.0)
    base = 2.0 ** np.floor(np.log2(value))
    return base * (1.0 + np.ceil((value / base - 1.0) * per_octave - 1e-9) / per_octave)


def _tile_ceil(value: float, tile: int) -> float:
    """Up to the next power of two at or below ``tile``, then to the next multiple of ``tile``."""
    value = max(float(value), 1.0)
    return 2.0 ** np.ceil(np.log2(value) - 1e-12) if value <= tile else float(np.ceil(value / tile) * tile)


# lattices whose point above a GEMM would price it (a step function, no interpolation): (b, m, n, k) -> point
CEILINGS = {
    "m_n_tiles_of_64_b_k_8_per_octave": lambda b, m, n, k: (_geometric_ceil(b, 8), _tile_ceil(m, 64),
                                                           _tile_ceil(n, 64), _geometric_ceil(k, 8)),
    "m_n_tiles_of_32_b_k_16_per_octave": lambda b, m, n, k: (_geometric_ceil(b, 16), _tile_ceil(m, 32),
                                                            _tile_ceil(n, 32), _geometric_ceil(k, 16)),
    "all_4_per_octave": lambda b, m, n, k: tuple(_geometric_ceil(x, 4) for x in (b, m, n, k)),
}


def ceiling_in_sample(rows_per_gpu: int = 4000, seed: int = 0) -> dict:
    """The class model priced at each GEMM's lattice point above (`CEILINGS`, without any hold), against the training
    rows (up to ``rows_per_gpu`` FP32 and TF32 GEMMs per GPU, drawn at random): what a step-function lattice costs."""
    from predictor_models.datasets.common import gemm_op
    from predictor_models.hardware import lookup_hardware
    from predictor_models.train import load_training_set
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()
    ts, _ = load_training_set(None, None, None)
    keep = (ts.ops.op_class == "gemm") & np.isin(ts.ops.mode, HELD_MODES)
    rng = np.random.default_rng(seed)
    errors: dict[str, list] = {"class_model": [], **{name: [] for name in CEILINGS}}
    out: dict = {}
    for gpu in sorted(set(ts.gpu[keep].tolist())):
        rows = np.flatnonzero(keep & (ts.gpu == gpu))
        if rows.size > rows_per_gpu:
            rows = rng.choice(rows, rows_per_gpu, replace=False)
        held = ts.take(rows)
        device, ops = lookup_hardware(gpu), [s.op for s in held.samples]
        ape = {"class_model": np.abs(predictor.predict_seconds(ops, device) / held.seconds - 1.0)}
        for name, ceiling in CEILINGS.items():
            points = [gemm_op(*ceiling(*(op.dims[d] for d in DIMS)), "float32", tf32=op.tf32) for op in ops]
            ape[name] = np.abs(predictor.predict_seconds(points, device) / held.seconds - 1.0)
        for name, values in ape.items():
            errors[name].append(values)
        out[gpu] = {"n": int(rows.size), **{name: round(float(v.mean()), 4) for name, v in ape.items()}}
        print(gpu, out[gpu], flush=True)
    out["all"] = {name: round(float(np.concatenate(v).mean()), 4) for name, v in errors.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    from benchmarks import network_fp32_trial

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("shipped", "lattice", "interpolated"), required=True,
                        help="interpolated: the lattice's own times interpolated, without the suffix minimum")
    parser.add_argument("--in-sample", action="store_true", help="only the training rows' MAPE per GPU")
    parser.add_argument("--ceilings", action="store_true",
                        help="only the class model at each GEMM's lattice point above (`CEILINGS`), on a sample of "
                             "the training rows")
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data"))
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    lattices = install(hold=args.variant == "lattice") if args.variant != "shipped" else {}
    if args.ceilings:
        result = {"variant": args.variant, "ceilings": ceiling_in_sample()}
    elif args.in_sample:
        result = {"variant": args.variant, "in_sample": in_sample()}
    else:
        result = {"variant": args.variant, **network_fp32_trial.evaluate_with_hostbound(Path(args.data))}
    result["lattice_points_priced"] = sum(lat.points_priced for lat in lattices.values())
    print(json.dumps({k: v for k, v in result.items() if k != "h200_rows"}, indent=1))
    if args.json:
        write_result(args.json, "gemm_lattice_trial", argv, **result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
