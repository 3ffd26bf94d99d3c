"""Overhead measured by twins: two warm processes run the same workload at the same moment, one with PreNeT.

    python benchmarks/twin_overhead.py [--workload loop_encoder_loader_epochs] [--pairs 8] [--aa] [--json PATH]

`hf_overhead.py` alternates runs in one process: each ratio compares two runs tens of seconds apart, and on this
shared machine the speed moves by 10% between them (its A/A checks: pairs 0.85-1.13), so ten pairs cannot place a 1%
effect. Here two processes (`serve`), each warmed by one run, start each pair's runs together, one on each core, so
that what slows the machine slows both alike. The processes swap sides pair by pair (A with PreNeT, then B), and the
pair ratios are reported with the geometric mean of each two consecutive ones (``swap_ratios``), in which a process's
own speed (memory layout, its core) cancels exactly. ``--aa``: nobody runs PreNeT, the instrument's own scatter.

What it cannot take out: the two runs share the machine's caches and memory bandwidth (alike on both sides), and the
slower run ends alone for its last percent or two (a slightly faster end for the side with PreNeT: the ratio is, if
anything, low by that part of the contention).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.hf_overhead import TARGET  # noqa: E402


def serve(workload: str, out_dir: str, scale: float, core: int | None = None) -> None:
    """A twin: (on ``core`` alone,) warm up, say READY, then for each line ``run 0|1`` from stdin run once and print
    the run's seconds."""
    from benchmarks.hf_overhead import cpu_seconds, prepare_process, runners

    if core is not None:
        os.sched_setaffinity(0, {core})
    prepare_process()
    run = runners()[workload]
    run(workload, with_prenet=False, out_dir=out_dir, scale=scale)   # warm-up: caches, allocator, lazy imports
    print("READY", flush=True)
    for line in sys.stdin:
        with_prenet = line.split()[1] == "1"
        cpu = cpu_seconds()
        result = run(workload, with_prenet=with_prenet, out_dir=out_dir, scale=scale)
        own = (result.get("report").actual or {}).get("own_time") if result.get("report") is not None else None
        print("RESULT " + json.dumps({"fit_s": result["fit_s"], "cpu_s": cpu_seconds() - cpu,
                                      "own_share": (own or {}).get("share")}), flush=True)


def _start(workload: str, out_dir: str, scale: float, core: int | None) -> subprocess.Popen:
    command = [sys.executable, __file__, "--serve", "--workload", workload, "--out", out_dir, "--scale", str(scale)]
    if core is not None:
        command += ["--core", str(core)]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)


def _read(twin: subprocess.Popen, marker: str) -> str:
    for line in twin.stdout:  # type: ignore[union-attr]
        if line.startswith(marker):
            return line[len(marker):].strip()
    raise RuntimeError(f"a twin process ended before {marker.strip()!r} (exit code {twin.wait()})")


def swap_ratios(ratios: list[float]) -> list[float]:
    """Geometric means of pairs (0, 1), (2, 3), ...: in each, either process ran PreNeT once, so its own speed cancels."""
    return [math.sqrt(ratios[i] * ratios[i + 1]) for i in range(0, len(ratios) - 1, 2)]


def measure(workload: str, pairs: int, out_dir: str, scale: float, aa: bool, pin: bool) -> dict[str, Any]:
    """``pairs`` pairs of simultaneous runs by two twins (``pin``: each on a core of its own), sides swapped pair by
    pair; the per-pair ratios (with PreNeT / without), their swapped geometric means, and every run."""
    cores = (0, 1) if pin and hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2 else (None, None)
    twins = [_start(workload, f"{out_dir}/twin{i}", scale, cores[i]) for i in range(2)]
    try:
        for twin in twins:
            _read(twin, "READY")
        runs = []
        for pair in range(pairs):
            prenet_side = pair % 2     # twin 0 runs PreNeT in even pairs, twin 1 in odd ones
            for i, twin in enumerate(twins):
                twin.stdin.write(f"run {int(i == prenet_side and not aa)}\n")  # type: ignore[union-attr]
                twin.stdin.flush()  # type: ignore[union-attr]
            results = [json.loads(_read(twin, "RESULT ")) for twin in twins]
            with_run, without_run = results[prenet_side], results[1 - prenet_side]
            runs.append({"pair": pair, "prenet_twin": prenet_side, "with": with_run, "without": without_run,
                         "fit_ratio": with_run["fit_s"] / without_run["fit_s"],
                         "cpu_ratio": with_run["cpu_s"] / without_run["cpu_s"]})
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    finally:
        for twin in twins:
            twin.stdin.close()  # type: ignore[union-attr]
            twin.wait(timeout=60)
    fit = [r["fit_ratio"] for r in runs]
    swapped = swap_ratios(fit)
    own = [r["with"]["own_share"] for r in runs if r["with"].get("own_share") is not None]
    return {"workload": workload, "pairs": pairs, "aa": aa, "pinned": cores != (None, None),
            "fit_ratio_median": round(statistics.median(fit), 4), "fit_ratio_per_pair": [round(x, 4) for x in fit],
            "swap_ratio_median": round(statistics.median(swapped), 4) if swapped else None,
            "swap_ratio_per_swap": [round(x, 4) for x in swapped],
            "cpu_ratio_median": round(statistics.median(r["cpu_ratio"] for r in runs), 4),
            "own_time_share_median": round(statistics.median(own), 5) if own else None,
            "fit_s_without_median": round(statistics.median(r["without"]["fit_s"] for r in runs), 3),
            "within_target": statistics.median(fit) <= TARGET, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="loop_encoder_loader_epochs")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--aa", action="store_true", help="nobody runs PreNeT: the instrument's own scatter")
    parser.add_argument("--no-pin", action="store_true", help="do not pin each twin to a core")
    parser.add_argument("--out", default="/tmp/prenet-twin-overhead")
    parser.add_argument("--json", default=None)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--core", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.workload, args.out, args.scale, args.core)
        return 0
    from benchmarks.result_file import write_result

    result = measure(args.workload, args.pairs, args.out, args.scale, args.aa, pin=not args.no_pin)
    summary = {k: v for k, v in result.items() if k != "runs"}
    print(json.dumps(summary, indent=1))
    if args.json:
        write_result(args.json, "twin_overhead", argv, summary=summary, runs=result["runs"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
