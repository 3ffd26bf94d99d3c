"""Measure eager PyTorch's per-op host costs on this machine's CPU and store them for the projection.

    python benchmarks/projection_host.py [--rounds 7] [--repeats 200] [--write]

A timing benchmark: run it on a quiet machine. Each round runs
`prenet_callbacks.projection.pricing.host.measure_host_costs` (a tiny transformer-like MLP's forward and
backward on CPU tensors of a few elements, an aten ``add`` on one-element tensors, a foreach AdamW
step on two tiny tensors); the minimum over rounds is kept (other processes only add time).
``--write`` stores the result in ``prenet_callbacks/projection/pricing/host_constants.json``, which `estimate`
and projections without a host measurement of their own use (with the CUDA launch cost of
`host.LAUNCH_S`). The JSON also goes to ``benchmarks/results/projection_host.json``.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prenet_callbacks.projection.pricing.host import CONSTANTS_PATH, LAUNCH_S, measure_host_costs

KEYS = ("fwd_op_s", "bwd_op_s", "aten_op_s", "opt_step_s")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--write", action="store_true", help="update prenet_callbacks/projection/pricing/host_constants.json")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results/projection_host.json"))
    args = parser.parse_args(argv)
    rounds = [measure_host_costs(args.repeats) for _ in range(args.rounds)]
    best = {k: min(r[k] for r in rounds) for k in KEYS}
    result = {**best, "launch_s": LAUNCH_S,
              "source": f"{_cpu_name()}, torch {rounds[0]['torch']}, {_dt.date.today().isoformat()}",
              "rounds": [{k: r[k] for k in KEYS} for r in rounds], "repeats": args.repeats}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    if args.write:
        CONSTANTS_PATH.write_text(json.dumps({k: result[k] for k in (*KEYS, "launch_s", "source")}, indent=1) + "\n")
    for key in KEYS:
        print(f"{key:12s} {best[key] * 1e6:8.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
