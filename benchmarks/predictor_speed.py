"""Timing of the vectorised prediction path: 10,000 mixed ops on 40 catalog devices (target <= 100 ms).

    python -m benchmarks.predictor_speed [--ops 10000] [--devices 40] [--repeats 5] [--predictor DIR]
                                         [--envelope-cost | --up-sets-cost | --open-down-sets-cost] [--json OUT]

``--predictor`` times another predictor folder, e.g. a calibration from `prenet calibrate` (its
device is predicted with the correction when it is among the devices).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from predictor_models.op_spec import OpSpec


def mixed_ops(count: int, seed: int = 0) -> list[OpSpec]:
    """A reproducible mix of GEMMs, convs, norms, pointwise ops and a few attention/optimizer ops."""
    rng = np.random.default_rng(seed)
    ops: list[OpSpec] = []
    dtypes = ("float32", "bfloat16", "float16")
    for i in range(count):
        dtype = dtypes[i % 3]
        s = 4 if dtype == "float32" else 2
        kind = i % 10
        if kind < 4:
            b, m, n, k = 1, *(int(x) for x in 2 ** rng.integers(5, 13, size=3))
            ops.append(OpSpec("gemm", dtype, 2.0 * m * n * k, (m * k + k * n) * s, m * n * s, {"b": b, "m": m, "n": n, "k": k},
                              dtype == "float32", "aten::mm"))
        elif kind == 4:
            n_, c, size = int(2 ** rng.integers(3, 7)), int(2 ** rng.integers(5, 10)), int(2 ** rng.integers(3, 7))
            flops = 2.0 * n_ * c * c * size * size * 9
            ops.append(OpSpec("conv", dtype, flops, (n_ * c * size * size + c * c * 9) * s, n_ * c * size * size * s,
                              {"n": n_, "c_in": c, "c_out": c, "h_in": size, "w_in": size, "h_out": size, "w_out": size,
                               "kh": 3, "kw": 3, "stride": 1, "groups": 1}, False, "aten::convolution"))
        elif kind in (5, 6):
            rows, cols = int(2 ** rng.integers(8, 15)), int(2 ** rng.integers(7, 13))
            ops.append(OpSpec("norm", dtype, 5.0 * rows * cols, rows * cols * s, rows * cols * s, {"rows": rows, "cols": cols},
                              False, "aten::native_layer_norm"))
        elif kind in (7, 8):
            numel = int(2 ** rng.integers(12, 26))
            ops.append(OpSpec("elementwise", dtype, numel, 2 * numel * s, numel * s, {"numel": numel, "inputs": 2}, False, "aten::add"))
        else:
            bsz, heads, seq, d = 4, 16, int(2 ** rng.integers(8, 12)), 64
            ops.append(OpSpec("attention", dtype, 4.0 * bsz * heads * seq * seq * d, 3 * bsz * heads * seq * d * s,
                              bsz * heads * seq * d * s, {"b": bsz, "heads": heads, "s_q": seq, "s_kv": seq, "d": d},
                              False, "aten::_scaled_dot_product_flash_attention"))
    return ops


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--devices", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--predictor", default=None, help="a predictor folder (default: the shipped one)")
    parser.add_argument("--envelope-cost", action="store_true",
                        help="alternate the device envelope on and off in this process (`--repeats` rounds) and "
                             "report both medians")
    parser.add_argument("--up-sets-cost", action="store_true",
                        help="alternate the unmeasured GPUs of the up-sets (`Predictor.unmeasured_up_sets`) on and off "
                             "in this process and report both medians")
    parser.add_argument("--open-down-sets-cost", action="store_true",
                        help="alternate the unmeasured GPUs of the FP32 down-sets (`Predictor.open_down_sets`) on and "
                             "off in this process and report both medians")
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    from predictor_models.hardware import list_hardware
    from predictor_models.predictor import load_predictor

    predictor = load_predictor(args.predictor)
    devices = [d for d in list_hardware() if d.memory_bandwidth_gbs][: args.devices]
    ops = mixed_ops(args.ops)
    predictor.predict_matrix(ops[:10], devices)  # warm caches (artifact load, imports)
    toggled = ("device_envelope" if args.envelope_cost else "unmeasured_up_sets" if args.up_sets_cost
               else "open_down_sets" if args.open_down_sets_cost else None)
    settings = (True, False) if toggled else (None,)
    times: dict = {on: [] for on in settings}
    for _ in range(args.repeats):
        for on in settings:               # alternated, so the machine's drift falls on both alike
            if toggled:
                setattr(predictor, toggled, on)
            start = time.perf_counter()
            out = predictor.predict_matrix(ops, devices)
            times[on].append(time.perf_counter() - start)
    if toggled:
        setattr(predictor, toggled, True)
    median = statistics.median(times[settings[0]])
    result = {"ops": len(ops), "devices": len(devices), "best_ms": min(times[settings[0]]) * 1e3, "median_ms": median * 1e3,
              "shape": list(out.shape), "all_finite_positive": bool(np.all(np.isfinite(out) & (out > 0))), "target_ms": 100}
    if args.envelope_cost:
        result["without_envelope_median_ms"] = statistics.median(times[False]) * 1e3
        result["runs_ms"] = {"with_envelope": [t * 1e3 for t in times[True]], "without": [t * 1e3 for t in times[False]]}
    if args.up_sets_cost or args.open_down_sets_cost:
        result[f"without_{toggled}_median_ms"] = statistics.median(times[False]) * 1e3
        result["paired_ratio_median"] = statistics.median(a / b for a, b in zip(times[True], times[False]))
        result["runs_ms"] = {"with": [t * 1e3 for t in times[True]], "without": [t * 1e3 for t in times[False]]}
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=1)
    return 0 if median <= 0.1 else 1


if __name__ == "__main__":
    sys.exit(main())
