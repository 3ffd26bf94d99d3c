"""Python's garbage collections inside runs with and without PreNeT, alternating in one process.

    python benchmarks/gc_probe.py [--workload loop_encoder_loader_epochs] [--pairs 4] [--json benchmarks/results/gc_probe.json]

A diagnostic for the whole-run overhead that PreNeT's own time does not hold (docs/overhead.md). Runs as
`hf_overhead.py` runs them (a discarded warm-up, then pairs in `hf_overhead.pair_order`), and reads, through
``gc.callbacks`` (which only watch), each run's collections per generation, their time, the objects alive before and
after, how many collections started while this project's code was on the stack (``collections_in_prenet``), and the
objects its middle collections moved to the oldest generation (``promoted``).
A full collection scans every object of the process: a training loop that frees what it makes hardly ever
triggers one, and a run that keeps more objects alive for a while (PreNeT's projections) moves the process
towards one.
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


# where a collection starts: in this project's code (PreNeT's own calls, or its profiler inside the user's ops)
_OWN_CODE = tuple(str(ROOT / part) for part in ("prenet_callbacks", "predictor_models", "integrations"))


class Collections:
    """Per-generation count and seconds of the collections seen since `reset` (a ``gc.callbacks`` entry, which only
    watches); ``when``: count only the collections that start while it returns True (a timed region, a PreNeT call).

    With ``sites=True`` it also counts, per generation, the collections that start while this project's code is on
    the stack (``in_prenet``: the allocation that crossed a threshold was PreNeT's, its profiler's inside a user op
    included), and the objects a middle collection moves to the oldest generation (``promoted``: its survivors, what
    brings the next full collection closer)."""

    def __init__(self, when: Callable[[], bool] | None = None, sites: bool = False) -> None:
        self.when = when
        self.sites = sites
        self._started: float | None = None
        self._young: int = 0
        self.reset()

    def reset(self) -> None:
        self.count, self.seconds = [0, 0, 0], [0.0, 0.0, 0.0]
        self.in_prenet, self.promoted = [0, 0, 0], 0

    def __call__(self, phase: str, info: dict) -> None:
        generation = info["generation"]
        if phase == "start":
            self._started = time.perf_counter() if self.when is None or self.when() else None
            if self._started is not None and self.sites:
                self._count_site(generation)
        elif self._started is not None:
            self.count[generation] += 1
            self.seconds[generation] += time.perf_counter() - self._started
            self._started = None
            if self.sites and generation == 1:
                self.promoted += max(0, self._young - info["collected"])

    def _count_site(self, generation: int) -> None:
        frame = sys._getframe(2)   # above this method and the callback
        while frame is not None:
            if frame.f_code.co_filename.startswith(_OWN_CODE):
                self.in_prenet[generation] += 1
                break
            frame = frame.f_back
        if generation == 1:   # what a middle collection examines: the two younger generations, all of it survivors or garbage
            self._young = len(gc.get_objects(0)) + len(gc.get_objects(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="loop_encoder_loader_epochs")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--out", default="/tmp/prenet-gc-probe")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/gc_probe.json"))
    args = parser.parse_args(argv)
    from benchmarks.hf_overhead import cpu_seconds, pair_order, prepare_process, runners
    from benchmarks.result_file import write_result

    prepare_process()
    run = runners()[args.workload]
    seen = Collections(sites=True)
    gc.callbacks.append(seen)
    run(args.workload, with_prenet=False, out_dir=args.out, scale=args.scale)   # warm-up: imports, caches
    runs = []
    for pair in range(args.pairs):
        for with_prenet in pair_order(pair):
            seen.reset()
            objects = len(gc.get_objects())
            started, cpu = time.perf_counter(), cpu_seconds()
            run(args.workload, with_prenet=with_prenet, out_dir=args.out, scale=args.scale)
            runs.append({"pair": pair, "with_prenet": with_prenet, "fit_s": round(time.perf_counter() - started, 4),
                         "cpu_s": round(cpu_seconds() - cpu, 4), "collections": list(seen.count),
                         "collections_in_prenet": list(seen.in_prenet), "promoted": seen.promoted,
                         "collection_ms": [round(s * 1e3, 2) for s in seen.seconds],
                         "objects_before": objects, "objects_after": len(gc.get_objects())})
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    gc.callbacks.remove(seen)
    side = lambda flag: [r for r in runs if r["with_prenet"] == flag]  # noqa: E731
    summary = {flag_name: {"full_collections": sum(r["collections"][2] for r in side(flag)),
                           "full_collection_ms": round(sum(r["collection_ms"][2] for r in side(flag)), 1),
                           "young_collections_per_run": [r["collections"][0] for r in side(flag)],
                           "young_collections_in_prenet_per_run": [r["collections_in_prenet"][0] for r in side(flag)],
                           "middle_collections": sum(r["collections"][1] for r in side(flag)),
                           "promoted_per_run": [r["promoted"] for r in side(flag)]}
               for flag_name, flag in (("with", True), ("without", False))}
    write_result(args.json, "gc_probe", argv, workload=args.workload, summary=summary, runs=runs)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
