"""PreNeT's own time in a process's first fit: what a user who runs one training script pays.

    python benchmarks/first_fit_own_time.py [--workload loop_encoder_loader_epochs] [--processes 3] [--json PATH]

`hf_overhead.py` discards each process's first run (a warm-up), so what only a first fit pays (parsing the hardware
catalog, loading the predictor, the eager host-cost probe, the first projection's lazy imports) is not in its
figures. Here every process runs one `Tracker` loop (`loop_workloads.py`) once, with PreNeT, and its report's
``actual.own_time`` is read (`prenet_callbacks.session.own_time`): the total, its share of the fit and its parts.
Beside them, the garbage collections that ran inside PreNeT's own time (``gc_in_own_ms``, ``gc_in_own_count``, per
generation, watched through ``gc.callbacks`` by this script, not by the library): a collection runs where an
allocation finds a generation over its threshold, whoever allocates, so a full collection that imports left due
(torch's, the framework's) can fall inside PreNeT's first call and be counted as its time.
Processes run one after another; to compare two versions of the code, run this in each checkout by turns.
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.gc_probe import Collections  # noqa: E402
from benchmarks.result_file import write_result  # noqa: E402

PARTS = ("total_s", "share", "per_batch_us", "profiling_s", "predictions_s", "end_s", "gc_in_own_s")


class CollectionsInOwnTime(Collections):
    """The collections that start while a PreNeT session call is on the stack (an `OwnTime` of the process in an
    event); ``OwnTime`` instances are registered by `watch`."""

    def __init__(self) -> None:
        self.accounts: list = []
        super().__init__(when=lambda: any(account.depth for account in self.accounts))

    def watch(self, own_time_class) -> None:
        """Register every `OwnTime` made from now on (the session makes one per fit)."""
        original, accounts = own_time_class.__init__, self.accounts

        def init(account, *args, **kwargs) -> None:
            original(account, *args, **kwargs)
            accounts.append(account)

        own_time_class.__init__ = init


def one_fit(workload: str) -> dict:
    """One fit of ``workload`` with a `Tracker`, in this process: its wall time and ``actual.own_time``. Torch's
    threads as `hf_overhead`'s runs; nothing of PreNeT is loaded before the fit (that is what it measures)."""
    from benchmarks.hf_overhead import bench_threads
    from benchmarks.loop_workloads import run_loop
    from prenet_callbacks.session.own_time import OwnTime

    bench_threads()
    seen = CollectionsInOwnTime()
    seen.watch(OwnTime)
    gc.callbacks.append(seen)
    try:
        with tempfile.TemporaryDirectory() as out:
            run = run_loop(workload, with_prenet=True, out_dir=out)
    finally:
        gc.callbacks.remove(seen)
    return {"fit_s": round(run["fit_s"], 3), **run["report"].actual["own_time"],
            "gc_in_own_s": round(sum(seen.seconds), 4), "gc_in_own_count": seen.count,
            "gc_in_own_ms": [round(s * 1e3, 2) for s in seen.seconds]}


def summarise(runs: list[dict]) -> dict:
    """Median, smallest and largest of each figure over the processes."""
    return {key: {"median": statistics.median(r[key] for r in runs), "min": min(r[key] for r in runs),
                  "max": max(r[key] for r in runs)} for key in ("fit_s", *PARTS)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="loop_encoder_loader_epochs")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--json", default=str(HERE / "results/first_fit_own_time.json"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(one_fit(args.workload)))
        return 0
    runs = []
    for _ in range(args.processes):
        out = subprocess.run([sys.executable, __file__, "--child", "--workload", args.workload],
                             capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
        print(runs[-1])
    result = write_result(args.json, "first_fit_own_time", argv, workload=args.workload, runs=runs,
                          summary=summarise(runs))
    print(json.dumps(result["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
