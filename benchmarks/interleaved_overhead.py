"""A `Tracker` loop's overhead, with and without PreNeT interleaved in one process a few steps at a time.

    python benchmarks/interleaved_overhead.py [--workload loop_encoder_eval_checkpoints] [--repeats 4]
        [--chunk 5] [--aa] [--json benchmarks/results/interleaved_overhead.json]

`hf_overhead.py` compares whole runs tens of seconds apart; this shared machine's speed moves by several percent
between them, so its pairs scatter by up to 9% and the median of ten of them moved from 0.968 to 1.018 between two A/A
checks with nothing changed (`benchmarks/results/issue39_cpu_time/`). Two processes at once, one per core, were no
better (`twin_overhead.py`). Here one process runs both loops of a pair side by side: ``--chunk`` optimizer steps of
one (`loop_workloads.loop_steps`; five, about 60 ms of the default loop), then as many of the other, the order
flipping each round (A B, B A, ...), until both end. The chunk was chosen by the A/A check alone: four repeats spread
over 0.011 with five steps and 0.022 with 25 (`benchmarks/results/issue39_overhead/interleaved_*`). Each side's time
is the sum of its own chunks, from building its model and `Tracker` to the return of ``close()``; what slows the
machine for seconds or minutes slows both alike. The ratio is one side's time over the other's (with PreNeT /
without), one per repeat, with its median; ``--aa`` runs both sides without PreNeT: the instrument's own scatter.

What it changes, and which way: the `Tracker`'s clock also runs while the other side trains, so it sees each step
take about twice as long as it does. Its rules that are set in time rather than steps (refinements within 0.1% of
the time since the last, phase marks at most once per 0.2 s on short steps, the report written at most every 30 s)
then allow up to twice what they allow in a run of its own: if anything the ratio is high by that. Both sides share
the process's heap and collector, so a collection that PreNeT's allocations set off can fall in the other side's
chunk: if anything the ratio is low by that (young collections, well under a millisecond each; `gc_probe.py` counts
3-9 a run with PreNeT).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Generator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.hf_overhead import TARGET, prepare_process  # noqa: E402


def _advance(side: dict[str, Any], chunk: int) -> None:
    """Run ``chunk`` optimizer steps of ``side`` (fewer at its end), adding their wall time to ``side["s"]``."""
    started = time.perf_counter()
    try:
        for _ in range(chunk):
            next(side["steps"])
    except StopIteration as done:
        side["result"] = done.value
    side["s"] += time.perf_counter() - started


def interleave(sides: list[Generator[int, None, dict[str, Any]]], chunk: int) -> list[dict[str, Any]]:
    """Run the loops ``sides`` ``chunk`` steps at a time, the order flipping each round, until every one ends;
    returns each one's seconds (its own chunks only) and result."""
    state = [{"steps": steps, "s": 0.0, "result": None} for steps in sides]
    round_ = 0
    while any(side["result"] is None for side in state):
        for side in state if round_ % 2 == 0 else state[::-1]:
            if side["result"] is None:
                _advance(side, chunk)
        round_ += 1
    return state


def measure(workload: str, repeats: int, chunk: int, scale: float, out_dir: str, aa: bool) -> list[dict[str, Any]]:
    """A discarded warm-up run, then ``repeats`` interleaved pairs; side A has PreNeT unless ``aa``."""
    from benchmarks.loop_workloads import loop_steps, run_loop

    prepare_process()
    run_loop(workload, with_prenet=False, out_dir=f"{out_dir}/warm-up", scale=scale)
    repeats_out = []
    for repeat in range(repeats):
        # which side starts the first round flips with the repeat, as the order inside a round flips
        sides = {label: loop_steps(workload, with_prenet=(label == "A" and not aa), out_dir=f"{out_dir}/{label}",
                                   scale=scale) for label in ("A", "B")}
        order = ["A", "B"] if repeat % 2 == 0 else ["B", "A"]
        state = dict(zip(order, interleave([sides[label] for label in order], chunk)))
        report = state["A"]["result"]["report"]
        own = (report.actual or {}).get("own_time") if report is not None else None
        repeats_out.append({"a_s": state["A"]["s"], "b_s": state["B"]["s"], "ratio": state["A"]["s"] / state["B"]["s"],
                            "steps": state["A"]["result"]["steps"], "own_time_s": (own or {}).get("total_s")})
        print(f"repeat {repeat}: A {state['A']['s']:.3f} s, B {state['B']['s']:.3f} s, "
              f"ratio {repeats_out[-1]['ratio']:.4f}", file=sys.stderr, flush=True)
    return repeats_out


def summarise(workload: str, runs: list[dict[str, Any]], aa: bool) -> dict[str, Any]:
    ratios = [r["ratio"] for r in runs]
    own = [r["own_time_s"] / r["a_s"] for r in runs if r["own_time_s"]]
    return {"workload": workload, "aa": aa, "repeats": len(runs), "ratio_median": round(statistics.median(ratios), 4),
            "ratio_per_repeat": [round(r, 4) for r in ratios], "ratio_spread": round(max(ratios) - min(ratios), 4),
            "seconds_without_median": round(statistics.median(r["b_s"] for r in runs), 3),
            "own_time_share_median": round(statistics.median(own), 5) if own else None,
            "within_target": None if aa else statistics.median(ratios) <= TARGET, "target": TARGET}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="loop_encoder_eval_checkpoints")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--chunk", type=int, default=5, help="optimizer steps of one side before the other's")
    parser.add_argument("--scale", type=float, default=1.0, help="run length factor (0.05: a smoke test)")
    parser.add_argument("--aa", action="store_true", help="both sides without PreNeT: the instrument's own scatter")
    parser.add_argument("--out", default="/tmp/prenet-interleaved-overhead")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/interleaved_overhead.json"))
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.chunk < 1:
        parser.error("--repeats and --chunk must be at least 1")
    runs = measure(args.workload, args.repeats, args.chunk, args.scale, args.out, args.aa)
    summary = summarise(args.workload, runs, args.aa)
    print(json.dumps(summary, indent=1))
    command = "python benchmarks/interleaved_overhead.py " + " ".join(argv if argv is not None else sys.argv[1:])
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"benchmark": "interleaved_overhead", "command": command.strip(),
                                           "date": time.strftime("%Y-%m-%d %H:%M"), "chunk": args.chunk, "summary": summary,
                                           "runs": runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
