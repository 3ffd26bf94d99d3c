"""Speed of the monotone networks' units and layers against the textbook form, alternated in one process.

    python benchmarks/mono_units_speed.py [--repeats 41] [--json OUT]

`mono.tanh` and `mono.softplus` build the units from exp and log, and `MonoNet` runs units along the first axis
with the inputs' parts of every layer in one product. This times, round by round in turn:

- ``units``: each unit on a ``(16, 4096)`` block (one half of a block's first layer) against NumPy's ``tanh`` and
  ``logaddexp(0, x)``;
- ``networks``: every network call of one `predict_matrix` of `predictor_speed.py`'s 10,000 ops on 40 devices
  (its rows captured once), as shipped against the module docstring's formula computed layer by layer, rows first,
  with NumPy's units (the form before 2026-12-07's change).

It reports medians with quartiles and the largest difference of the outputs.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def textbook(net, mono: np.ndarray, free: np.ndarray) -> np.ndarray:
    """The module docstring's network, rows first, NumPy's tanh and logaddexp (the form the change replaced)."""
    def act(h):
        half = h.shape[1] // 2
        out = np.empty_like(h)
        out[:, :half] = np.tanh(h[:, :half])
        out[:, half:] = np.logaddexp(0.0, h[:, half:])
        return out

    out = np.empty(mono.shape[0])
    for start in range(0, mono.shape[0], 4096):
        z = (mono[start:start + 4096] - net.mean) / net.scale
        f = free[start:start + 4096]
        h1 = act(z @ net.w1m + f @ net.w1f + net.b1)
        h2 = act(h1 @ net.w2 + f @ net.w2f + net.b2)
        out[start:start + 4096] = h2 @ net.w3 + z @ net.ws + f @ net.w3f + net.b3
    return out


def captured_calls():
    """(network, monotone inputs, free inputs) of every network call in one benchmark prediction."""
    from benchmarks.predictor_speed import mixed_ops
    from predictor_models.hardware import list_hardware
    from predictor_models.predictor import load_predictor
    from predictor_models.predictor.mono import MonoNet

    predictor = load_predictor(None)
    devices = [d for d in list_hardware() if d.memory_bandwidth_gbs][:40]
    calls = []
    shipped = MonoNet.__call__

    def record(net, mono, free):
        calls.append((net, mono, free))
        return shipped(net, mono, free)

    MonoNet.__call__ = record
    try:
        predictor.predict_matrix(mixed_ops(10_000), devices)
    finally:
        MonoNet.__call__ = shipped
    return calls


def alternate(sides: dict, repeats: int) -> dict:
    """Each side's times (ms), the sides run in turn, their order flipped each round."""
    times = {name: [] for name in sides}
    names = list(sides)
    for i in range(repeats):
        for name in names if i % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            sides[name]()
            times[name].append((time.perf_counter() - start) * 1e3)
    return {name: {"median_ms": round(statistics.median(t), 4),
                   "quartiles_ms": [round(q, 4) for q in statistics.quantiles(t, n=4)]} for name, t in times.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=41)
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    from predictor_models.predictor import mono

    block = np.random.default_rng(0).normal(scale=3.0, size=(16, 4096))
    out = np.empty_like(block)
    units = alternate({"tanh": lambda: mono.tanh(block, out), "numpy_tanh": lambda: np.tanh(block, out=out),
                       "softplus": lambda: mono.softplus(block, out),
                       "numpy_logaddexp": lambda: np.logaddexp(0.0, block, out=out)}, args.repeats * 5)
    calls = captured_calls()
    rows = sum(m.shape[0] for _, m, _ in calls)
    diff = max(float(np.max(np.abs(net(m, f) - textbook(net, m, f)))) for net, m, f in calls)
    networks = alternate({"shipped": lambda: [net(m, f) for net, m, f in calls],
                          "textbook": lambda: [textbook(net, m, f) for net, m, f in calls]}, args.repeats)
    result = {"benchmark": "mono_units_speed", "command": "python benchmarks/mono_units_speed.py " + " ".join(argv or sys.argv[1:]),
              "date": time.strftime("%Y-%m-%d %H:%M"), "repeats": args.repeats, "units_block": list(block.shape),
              "units": units, "network_calls": len(calls), "network_rows": rows, "networks": networks,
              "max_abs_diff_log_seconds": diff,
              "ratios": {"tanh": round(units["tanh"]["median_ms"] / units["numpy_tanh"]["median_ms"], 3),
                         "softplus": round(units["softplus"]["median_ms"] / units["numpy_logaddexp"]["median_ms"], 3),
                         "networks": round(networks["shipped"]["median_ms"] / networks["textbook"]["median_ms"], 3)}}
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
