"""Trial, not adopted: the monotone networks run in float32 (issue 38's speed budget).

    python benchmarks/float32_network_trial.py [--pairs 30] [--json OUT]

Two measurements in one process:

- speed: `predict_matrix` on `predictor_speed.py`'s 10,000 ops x 40 devices with `MonoNet._rows` as shipped
  (float64) and in float32 (inputs, fused weights, both activations), alternated call by call, with the largest
  relative change of any prediction;
- monotonicity: NumPy's float32 ``exp`` over every float32 in [-40, 40] (the units' clipped range), in ascending
  order: each drop of the output is an input where a float32 unit could fall as its input grows.

The float64 units rest on exp and log that fell nowhere on fine sweeps (`tests/test_predictor_network.py`).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.step_errors import publish


def float32_range(lo: float, hi: float, chunk: int = 1 << 25):
    """Every float32 from ``lo`` to ``hi`` in ascending order, in chunks (enumerated by bit pattern)."""
    def bits(x: float) -> int:
        return int(np.array(x, dtype=np.float32).view(np.int32))

    if lo < 0:
        for start in range(bits(-lo), -1, -chunk):
            yield -np.arange(start, max(start - chunk, -1), -1, dtype=np.int32).view(np.float32)
        lo = 0.0
    first, last = bits(lo), bits(hi)
    for start in range(first, last + 1, chunk):
        yield np.arange(start, min(start + chunk, last + 1), dtype=np.int32).view(np.float32)


def drops(func, lo: float, hi: float) -> dict:
    """Inputs where ``func`` (elementwise, float32) gives less than at the float32 just below."""
    count, where, previous, n = 0, [], None, 0
    for x in float32_range(lo, hi):
        y = func(x)
        n += x.size
        fell = np.flatnonzero(np.diff(y) < 0)
        count += fell.size + int(previous is not None and y[0] < previous)
        where.extend(float(v) for v in x[fell + 1][:3])
        previous = y[-1]
    return {"inputs": n, "drops": count, "first_inputs_that_fell": sorted(where)[:10]}


def _rows32(self, inputs: np.ndarray) -> np.ndarray:
    """`MonoNet._rows` in float32."""
    from predictor_models.predictor import mono

    cached = self.__dict__.get("_trial_f32")
    if cached is None:
        from_inputs, bias, w2_t = self._fused
        cached = tuple(a.astype(np.float32) for a in (from_inputs, bias, w2_t, self.w3))
        object.__setattr__(self, "_trial_f32", cached)
    from_inputs, bias, w2_t, w3 = cached
    h1 = w2_t.shape[1]
    pre = from_inputs @ inputs.T.astype(np.float32)
    pre += bias
    hidden = w2_t @ mono.activate(pre[:h1])
    hidden += pre[h1:-1]
    return (w3 @ mono.activate(hidden) + pre[-1]).astype(np.float64)


def speed(pairs: int) -> dict:
    from benchmarks.predictor_speed import mixed_ops
    from predictor_models.hardware import list_hardware
    from predictor_models.predictor import load_predictor, mono

    predictor = load_predictor(None)
    devices = [d for d in list_hardware() if d.memory_bandwidth_gbs][:40]
    ops = mixed_ops(10_000)
    shipped = mono.MonoNet._rows
    try:
        predictor.predict_matrix(ops[:10], devices)
        base = predictor.predict_matrix(ops, devices)
        mono.MonoNet._rows = _rows32
        trial = predictor.predict_matrix(ops, devices)
        times = {"float64": [], "float32": []}
        for i in range(pairs):
            for name in (("float64", "float32") if i % 2 else ("float32", "float64")):
                mono.MonoNet._rows = shipped if name == "float64" else _rows32
                start = time.perf_counter()
                predictor.predict_matrix(ops, devices)
                times[name].append(time.perf_counter() - start)
    finally:
        mono.MonoNet._rows = shipped
    ratios = [b / a for a, b in zip(times["float64"], times["float32"])]
    return {"pairs": pairs, "float64_median_ms": round(statistics.median(times["float64"]) * 1e3, 1),
            "float32_median_ms": round(statistics.median(times["float32"]) * 1e3, 1),
            "ratio_median": round(statistics.median(ratios), 3),
            "ratio_quartiles": [round(q, 3) for q in statistics.quantiles(ratios, n=4)],
            "largest_relative_change": float(np.max(np.abs(trial / base - 1.0)))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    timing, exp = speed(args.pairs), drops(np.exp, -40.0, 40.0)
    result = {"benchmark": "float32_network_trial", "command": "python benchmarks/float32_network_trial.py"
              + (f" --pairs {args.pairs}" if args.pairs != 30 else ""), "date": time.strftime("%Y-%m-%d %H:%M"),
              "numpy": np.__version__, "speed": timing, "float32_exp_over_minus40_to_40": exp,
              "summary": {"float32_over_float64": timing["ratio_median"],
                          "largest_relative_change": timing["largest_relative_change"],
                          "float32_exp_drops": exp["drops"], "float32_inputs": exp["inputs"]}}
    return publish(result, args.json)


if __name__ == "__main__":
    sys.exit(main())
