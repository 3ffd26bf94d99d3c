"""Where the overhead of `Tracker` or `PreNeTTrainerCallback` sits, step by step: one workload with and without,
alternating in one process.

    python benchmarks/step_overhead.py [--workload loop_encoder_loader_epochs] [--pairs 4] [--json OUT]

`hf_overhead.py` judges the whole run (with / without); on a shared machine its pairs scatter by more than PreNeT
costs a short run. This reads each run's wall clock at every optimizer step (the progress marks of
`loop_workloads.run_loop` and `hf_workloads.run_trainer`, the same on both sides), so the difference between the
two sides can be placed: the start (the
warm-up, the profiling window, the first prediction: the first ``--head`` steps), the steady steps after it, and
the end (after the last step: `Tracker.close`, the end of ``trainer.train()``). Per step, the medians over the runs of each side are compared
(a median per step is robust to the odd slow step of a busy machine); a segment's excess is the sum over its
steps. Beside it, the session's own account (``actual.own_time``, `prenet_callbacks/session/own_time.py`),
which leaves out the profiled steps' own slowing (they are training steps). The order within a pair alternates
(without first, then with first) so that neither side always runs second. After a discarded warm-up run the
first fit with PreNeT in the process pays its one-off imports: the first pair is kept and reported apart.
Writes ``benchmarks/results/step_overhead.json`` (``--json``).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _run(name: str, with_prenet: bool, out_dir: str, scale: float) -> dict[str, Any]:
    from benchmarks.hf_overhead import runners

    result = runners()[name](name, with_prenet=with_prenet, out_dir=out_dir, scale=scale, record_bar=True)
    marks = [result["bar"][step][0] for step in sorted(result["bar"])]
    report = result["report"]
    first = report.predictions[0]["at_step"] if report is not None and report.predictions else None
    return {"with_prenet": with_prenet, "fit_s": result["fit_s"], "step_s": np.diff([0.0] + marks).tolist(),
            "close_s": result["fit_s"] - marks[-1],
            "own_time": report.actual.get("own_time") if report is not None else None, "first_prediction_at": first}


def measure(name: str, pairs: int, out_dir: str, scale: float) -> list[dict[str, Any]]:
    """A discarded warm-up run, then ``pairs`` x (without, with), the order alternating pair by pair."""
    from benchmarks.hf_overhead import pair_order, prepare_process

    prepare_process()
    _run(name, False, out_dir, scale)
    runs = []
    for pair in range(pairs):
        for with_prenet in pair_order(pair):
            run = _run(name, with_prenet, out_dir, scale)
            run["pair"] = pair
            runs.append(run)
            print(f"pair {pair} prenet={int(with_prenet)}: {run['fit_s']:.3f} s", file=sys.stderr, flush=True)
    return runs


def summarise(runs: list[dict[str, Any]], head: int) -> dict[str, Any]:
    """Excess of the median "with" run over the median "without" run, per segment, in ms; the first pair apart."""
    later = [r for r in runs if r["pair"] > 0] or runs
    side = {flag: [r for r in later if r["with_prenet"] == flag] for flag in (True, False)}
    steps = min(len(r["step_s"]) for r in later)
    per_step = {flag: np.median([r["step_s"][:steps] for r in side[flag]], axis=0) for flag in side}
    excess = per_step[True] - per_step[False]
    # the step whose end made the first prediction; a Trainer's marks come from a callback called before PreNeT's,
    # so there the prediction's cost falls in the next step's interval
    first = [r["first_prediction_at"] for r in side[True] if r["first_prediction_at"]]
    at = int(statistics.median(first)) if first else None
    median = lambda key, flag: statistics.median(r[key] for r in side[flag])  # noqa: E731
    own = [r["own_time"] for r in side[True] if r["own_time"]]
    segments = {f"steps 1-{head}": excess[:head].sum(), f"steps {head + 1}-{steps}": excess[head:].sum(),
                "close": median("close_s", True) - median("close_s", False)}
    first_pair = {flag: next(r["fit_s"] for r in runs if r["pair"] == 0 and r["with_prenet"] == flag)
                  for flag in (True, False)}
    return {"runs_per_side": len(side[True]), "steps": steps, "first_prediction_at_step": at,
            "fit_s_median": {"with": round(median("fit_s", True), 4), "without": round(median("fit_s", False), 4)},
            "fit_ratio_of_medians": round(median("fit_s", True) / median("fit_s", False), 4),
            "excess_ms": {k: round(v * 1e3, 1) for k, v in segments.items()},
            "excess_total_ms": round(sum(segments.values()) * 1e3, 1),
            "excess_at_first_prediction_step_ms": round(float(excess[at - 1]) * 1e3, 1) if at else None,
            "steady_excess_per_step_us": round(float(np.median(excess[head:])) * 1e6, 1),
            "steady_step_ms": round(float(np.median(per_step[False][head:])) * 1e3, 2),
            "own_time_ms": {key: round(statistics.median(o[key] for o in own) * 1e3, 1)
                            for key in ("total_s", "profiling_s", "predictions_s", "end_s")} if own else None,
            "own_time_per_batch_us": statistics.median(o["per_batch_us"] for o in own) if own else None,
            "first_pair_fit_ratio": round(first_pair[True] / first_pair[False], 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="loop_encoder_loader_epochs",
                        help="a `loop_workloads.py` loop or an `hf_workloads.py` Trainer workload")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--head", type=int, default=40, help="steps counted as the start (warm-up, profiling, "
                                                             "the first prediction)")
    parser.add_argument("--scale", type=float, default=1.0, help="run length factor (0.05: a smoke test)")
    parser.add_argument("--out", default="/tmp/prenet-step-overhead")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/step_overhead.json"))
    args = parser.parse_args(argv)
    runs = measure(args.workload, args.pairs, args.out, args.scale)
    summary = summarise(runs, args.head)
    print(json.dumps(summary, indent=1))
    default_json = Path(args.json).resolve() == ROOT / "benchmarks/results/step_overhead.json"
    command = ("python benchmarks/step_overhead.py"
               + (f" --workload {args.workload}" if args.workload != "loop_encoder_loader_epochs" else "")
               + (f" --pairs {args.pairs}" if args.pairs != 4 else "") + (f" --head {args.head}" if args.head != 40 else "")
               + ("" if default_json else f" --json {args.json}"))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"benchmark": "step_overhead", "command": command, "workload": args.workload,
                                           "date": time.strftime("%Y-%m-%d %H:%M"), "summary": summary,
                                           "runs": [{k: v for k, v in r.items() if k != "step_s"} for r in runs]},
                                          indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
