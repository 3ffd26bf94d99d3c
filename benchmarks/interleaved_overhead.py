"""A run's overhead, with and without PreNeT interleaved in one process a few steps at a time.

    python benchmarks/interleaved_overhead.py [--workload loop_encoder_eval_checkpoints] [--repeats 4]
        [--chunk 5] [--aa] [--json benchmarks/results/interleaved_overhead.json]
    python benchmarks/interleaved_overhead.py --lightning [--workload lstm_val_every_epoch] ...
    python benchmarks/interleaved_overhead.py --trainer [--workload causal_lm_eval_steps_checkpoints] ...

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
``--lightning`` does the same with `overhead.py`'s fits (`overhead.run_one`, the callback's defaults): each side's
``fit()`` runs in a thread of its own, and a callback after the others (PreNeT's included) hands the turn over every
``--chunk`` training batches (`Relay`); the waiting thread sleeps, so one fit runs at a time. ``--trainer`` does
the same with `hf_overhead.py`'s `Trainer` runs (`hf_workloads.run_trainer`), handing over every ``--chunk``
optimizer steps; it is not yet a tighter instrument: its A/A checks scattered from 0.968 to 1.048, with the threads
free to move between cores and with both pinned to one (a trial, not kept), where the loop's and Lightning's stayed
within 0.988 to 1.010 (`benchmarks/results/issue39_overhead/interleaved_trainer_aa_*.json`).

What it changes, and which way: PreNeT's clock also runs while the other side trains, so it sees each step
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
import threading
import time
from pathlib import Path
from typing import Any, Callable, Generator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.hf_overhead import TARGET, prepare_process  # noqa: E402
from benchmarks.result_file import write_result  # noqa: E402


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


class Relay:
    """Threads that take turns: the one whose turn it is runs, the others wait; each one's own seconds are summed.

    A side calls `begin` before its run, `hand_over` every few steps (the next side in ``order`` still running
    gets the turn, and the caller waits for its own) and `finish` at its end."""

    def __init__(self, order: list[str]) -> None:
        self.order = order
        self.turn = order[0]
        self.done: set[str] = set()
        self.seconds = dict.fromkeys(order, 0.0)
        self.since = 0.0
        self.condition = threading.Condition()

    def begin(self, me: str) -> None:
        with self.condition:
            self.condition.wait_for(lambda: self.turn == me)
            self.since = time.perf_counter()

    def hand_over(self, me: str) -> None:
        with self.condition:
            following = self._next(me)
            if following == me:
                return   # everyone else has finished: keep going
            self.seconds[me] += time.perf_counter() - self.since
            self.turn = following
            self.condition.notify_all()
            self.condition.wait_for(lambda: self.turn == me)
            self.since = time.perf_counter()

    def finish(self, me: str) -> None:
        with self.condition:
            self.seconds[me] += time.perf_counter() - self.since
            self.done.add(me)
            self.turn = self._next(me)
            self.condition.notify_all()

    def _next(self, me: str) -> str:
        at = self.order.index(me)
        for label in self.order[at + 1:] + self.order[:at]:
            if label not in self.done:
                return label
        return me


def threaded_pair(run: Callable[[str, Callable[[], None]], Any], order: list[str]) -> dict[str, Any]:
    """Run ``run(side, hand_over)`` for each side of ``order`` in a thread of its own, one at a time (`Relay`):
    a side calls ``hand_over()`` to give the turn to the next; returns each side's seconds and result."""
    relay = Relay(order)
    results: dict[str, Any] = {}

    def side(me: str) -> None:
        relay.begin(me)
        try:
            results[me] = run(me, lambda: relay.hand_over(me))
        except BaseException as error:  # noqa: BLE001 - raised again in the caller's thread
            results[me] = error
        finally:
            relay.finish(me)

    threads = [threading.Thread(target=side, args=(me,), name=f"side-{me}") for me in order]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for me in order:
        if isinstance(results[me], BaseException):
            raise results[me]
    return {me: {"s": relay.seconds[me], "result": results[me]} for me in order}


def lightning_side(workload: str, chunk: int, out_dir: str, prenet: dict[str, bool], scale: float = 1.0) -> Callable:
    """`threaded_pair`'s ``run`` for an `overhead.py` fit: a callback after the others (PreNeT's included) hands
    the turn over every ``chunk`` training batches. Its workloads have one length (``scale`` must be 1)."""
    import lightning.pytorch as pl

    from benchmarks.overhead import run_one

    if scale != 1.0:
        raise ValueError(f"--scale {scale}: overhead.py's Lightning workloads have one length; leave --scale at 1")

    class HandOver(pl.Callback):
        def __init__(self, hand_over: Callable[[], None]) -> None:
            self.hand_over, self.batches = hand_over, 0

        def on_train_batch_end(self, *args: Any) -> None:
            self.batches += 1
            if self.batches % chunk == 0:
                self.hand_over()

    def run(me: str, hand_over: Callable[[], None]) -> dict[str, Any]:
        result = run_one(workload, prenet[me], f"{out_dir}/{me}", extra_callbacks=(HandOver(hand_over),))
        return {"steps": result["steps"], "own_time": result["own_time"]}

    return run


def trainer_side(workload: str, chunk: int, out_dir: str, prenet: dict[str, bool], scale: float = 1.0) -> Callable:
    """`threaded_pair`'s ``run`` for an `hf_workloads.py` `Trainer`: a callback after PreNeT's hands the turn over
    every ``chunk`` optimizer steps."""
    from transformers import TrainerCallback

    from benchmarks.hf_workloads import run_trainer

    class HandOver(TrainerCallback):
        def __init__(self, hand_over: Callable[[], None]) -> None:
            self.hand_over = hand_over

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step % chunk == 0:
                self.hand_over()

    def run(me: str, hand_over: Callable[[], None]) -> dict[str, Any]:
        result = run_trainer(workload, with_prenet=prenet[me], out_dir=f"{out_dir}/{me}", scale=scale,
                             extra_callbacks=(HandOver(hand_over),))
        report = result["report"]
        return {"steps": result["steps"], "own_time": (report.actual or {}).get("own_time") if report else None}

    return run


SIDES = {"lightning": lightning_side, "trainer": trainer_side}


def side_order(repeat: int) -> list[str]:
    """Which side goes first: A in even repeats, B in odd ones (as the order inside a round flips)."""
    return ["A", "B"] if repeat % 2 == 0 else ["B", "A"]


def repeat_record(repeat: int, a_s: float, b_s: float, steps: int, own_time: dict | None) -> dict[str, Any]:
    """One repeat's row (side A's seconds over side B's, A's steps and own time), printed as it comes."""
    print(f"repeat {repeat}: A {a_s:.3f} s, B {b_s:.3f} s, ratio {a_s / b_s:.4f}", file=sys.stderr, flush=True)
    return {"a_s": a_s, "b_s": b_s, "ratio": a_s / b_s, "steps": steps, "own_time_s": (own_time or {}).get("total_s")}


def measure_threaded(kind: str, workload: str, repeats: int, chunk: int, out_dir: str, aa: bool,
                     scale: float = 1.0) -> list[dict[str, Any]]:
    """`measure` for runs that own their loop (``kind``: a Lightning fit or a `Trainer`, `SIDES`): the process
    prepared as `hf_overhead.py` prepares it, a discarded warm-up run, then ``repeats`` pairs in two threads
    taking turns (`threaded_pair`)."""
    prepare_process()
    run = SIDES[kind](workload, chunk, out_dir, {"A": not aa, "B": False}, scale)
    run("B", lambda: None)   # warm-up, alone and without PreNeT: caches, allocator, lazy imports
    runs = []
    for repeat in range(repeats):
        state = threaded_pair(run, side_order(repeat))
        a = state["A"]["result"]
        runs.append(repeat_record(repeat, state["A"]["s"], state["B"]["s"], a["steps"], a["own_time"]))
    return runs


def measure(workload: str, repeats: int, chunk: int, scale: float, out_dir: str, aa: bool) -> list[dict[str, Any]]:
    """A discarded warm-up run, then ``repeats`` interleaved pairs; side A has PreNeT unless ``aa``."""
    from benchmarks.loop_workloads import loop_steps, run_loop

    prepare_process()
    run_loop(workload, with_prenet=False, out_dir=f"{out_dir}/warm-up", scale=scale)
    runs = []
    for repeat in range(repeats):
        order = side_order(repeat)
        sides = [loop_steps(workload, with_prenet=(label == "A" and not aa), out_dir=f"{out_dir}/{label}", scale=scale)
                 for label in order]
        state = dict(zip(order, interleave(sides, chunk)))
        a = state["A"]["result"]
        own = (a["report"].actual or {}).get("own_time") if a["report"] is not None else None
        runs.append(repeat_record(repeat, state["A"]["s"], state["B"]["s"], a["steps"], own))
    return runs


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
    parser.add_argument("--workload", help="a `loop_workloads.py` loop (default loop_encoder_eval_checkpoints), or "
                                            "with --lightning a `workloads.py` fit (default lstm_val_every_epoch)")
    framework = parser.add_mutually_exclusive_group()
    framework.add_argument("--lightning", action="store_true",
                        help="Lightning fits in two threads taking turns every --chunk batches, as overhead.py runs them")
    framework.add_argument("--trainer", action="store_true",
                        help="Hugging Face Trainer runs (hf_workloads.py) in two threads taking turns every --chunk steps")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--chunk", type=int, default=5, help="optimizer steps of one side before the other's")
    parser.add_argument("--scale", type=float, default=1.0, help="run length factor (0.05: a smoke test)")
    parser.add_argument("--aa", action="store_true", help="both sides without PreNeT: the instrument's own scatter")
    parser.add_argument("--out", default="/tmp/prenet-interleaved-overhead")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/interleaved_overhead.json"))
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.chunk < 1:
        parser.error("--repeats and --chunk must be at least 1")
    if args.lightning or args.trainer:
        kind = "lightning" if args.lightning else "trainer"
        workload = args.workload or {"lightning": "lstm_val_every_epoch", "trainer": "causal_lm_eval_steps_checkpoints"}[kind]
        runs = measure_threaded(kind, workload, args.repeats, args.chunk, args.out, args.aa, args.scale)
    else:
        workload = args.workload or "loop_encoder_eval_checkpoints"
        runs = measure(workload, args.repeats, args.chunk, args.scale, args.out, args.aa)
    summary = summarise(workload, runs, args.aa)
    print(json.dumps(summary, indent=1))
    write_result(args.json, "interleaved_overhead", argv, chunk=args.chunk, summary=summary, runs=runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
