"""The ETA protocol (issue 39): every ETA workload of a declared split, N repeats, every run kept.

    python benchmarks/eta_protocol.py --split held_out|development|all [--repeats 3] [--only NAME ...]
                                      [--scale 1.0] [--json benchmarks/results/eta_protocol_SPLIT.json]

The splits are declared in `eta_splits.py` (DEVELOPMENT: what the ETA model's constants were chosen on;
HELD_OUT: what nothing was tuned on). Each run is a fresh process (no warm caches or threads carried over),
in round-robin order over the split's workloads, repeat after repeat, so a slow spell of the shared machine
touches every workload alike. The rows are the benchmarks' own: `eta_accuracy.run_one` for Lightning,
`hf_eta_accuracy.eta_row` for the Trainer, the Tracker loops and DeepSpeed engines (`attach()`); each row
adds the prediction against the wall time the user sees (`eta_summary.user_wall_figures`). The result file
is rewritten after every run (a stopped protocol keeps what it ran; ``--append`` adds repeats to it, each
invocation named in ``commands``) with every run, and summaries per
workload, per framework and per split (`eta_summary.py`: median, worst and spread of the error raw and at
the run's pace, band coverage, median half-width and band parts).
``--scale 0.05`` is a smoke run of the script (the development split's Lightning workloads keep their
length), not a measurement.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = ("lightning", "hf", "loop", "deepspeed")


def child(framework: str, name: str, out: str, scale: float) -> None:
    """In a fresh process: train one workload with its framework's callback and print its row."""
    if framework == "lightning":
        from benchmarks.eta_accuracy import run_one

        print("RESULT " + json.dumps(run_one(name, out)))
        return
    from benchmarks.hf_eta_accuracy import child as framework_child

    if framework == "hf":
        from benchmarks.heldout_workloads import HF
        from benchmarks.hf_workloads import WORKLOADS, run_trainer

        framework_child(run_trainer, {**WORKLOADS, **HF}, name, out, scale)
    elif framework == "loop":
        from benchmarks.heldout_workloads import LOOP
        from benchmarks.loop_workloads import WORKLOADS, run_loop

        framework_child(run_loop, {**WORKLOADS, **LOOP}, name, out, scale)
    elif framework == "deepspeed":
        from benchmarks.deepspeed_workloads import WORKLOADS, run_engine

        framework_child(run_engine, WORKLOADS, name, out, scale)
    else:
        raise SystemExit(f"unknown framework {framework!r} (one of {', '.join(FRAMEWORKS)})")


def planned(split: str, only: list[str] | None) -> list[tuple[str, str, str]]:
    """``(split, framework, workload)`` in run order; ``only`` keeps the named workloads (or frameworks)."""
    from benchmarks.eta_splits import SPLITS

    names = list(SPLITS) if split == "all" else [split]
    chosen = [(s, fw, name) for s in names for fw, name in SPLITS[s]]
    if only:
        chosen = [c for c in chosen if c[2] in only or c[1] in only]
        missing = set(only) - {c[2] for c in chosen} - {c[1] for c in chosen}
        if missing:
            raise SystemExit(f"not in split {split!r}: {', '.join(sorted(missing))}")
    return chosen


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="held_out", choices=["development", "held_out", "all"])
    parser.add_argument("--repeats", type=int, default=3, help="runs per workload, round-robin (default 3)")
    parser.add_argument("--only", nargs="*", help="workload or framework names (default: the whole split)")
    parser.add_argument("--scale", type=float, default=1.0, help="run length factor (smoke runs only)")
    parser.add_argument("--json", help="result file (default: benchmarks/results/eta_protocol_SPLIT.json)")
    parser.add_argument("--out", default="/tmp/prenet-eta-protocol", help="scratch directory for runs")
    parser.add_argument("--append", action="store_true",
                        help="add --repeats more repeats to the result file's runs (each invocation in `commands`)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.child:
        framework, name = args.child.split(":", 1)
        child(framework, name, args.out, args.scale)
        return
    if args.repeats < 1:
        raise SystemExit(f"--repeats must be >= 1, got {args.repeats}")
    from benchmarks.eta_summary import by, line, user_wall_figures
    from benchmarks.hf_eta_accuracy import _machine, run_child
    from prenet_callbacks.forecast.eta import _HOST_DRIFT

    order = planned(args.split, args.only)
    path = Path(args.json or ROOT / f"benchmarks/results/eta_protocol_{args.split}.json")
    os.environ["PRENET_BENCH_SCALE"] = str(args.scale)  # the held-out Lightning workloads read it
    command = "python benchmarks/eta_protocol.py " + " ".join(sys.argv[1:] if argv is None else argv)
    state = {"commands": [command.strip()], "started": time.strftime("%Y-%m-%d %H:%M"), "first_repeat": 0}
    rows: list[dict[str, Any]] = []
    if args.append and path.exists():  # more repeats of the same protocol: the file's runs are kept, none redone
        before = json.loads(path.read_text())
        rows = before["runs"]
        state.update(commands=before.get("commands", [before["command"]]) + state["commands"],
                     started=before["started"], first_repeat=before["repeats_done"])
    state["repeats"] = state["first_repeat"] + args.repeats
    for repeat in range(state["first_repeat"], state["repeats"]):
        for split, framework, name in order:
            row = run_child(__file__, f"{framework}:{name}", "--out", args.out, "--scale", str(args.scale))
            # the band's pace-drift allowance the run was made with: `band_drift_choice.py` rebuilds bands at others
            row.update(split=split, framework=framework, repeat=repeat, pace_drift_sigma=_HOST_DRIFT,
                       **user_wall_figures(row))
            rows.append(row)
            print(line(row), flush=True)
            _write(path, state, _machine(), args.scale, len(order), rows, by)
    print(json.dumps(json.loads(path.read_text())["splits"], indent=1))


def _write(path: Path, state: dict[str, Any], machine: str, scale: float, per_repeat: int,
           rows: list[dict[str, Any]], by: Any) -> None:
    result = {
        "benchmark": "eta_protocol", "command": " && ".join(state["commands"]), "commands": state["commands"],
        "started": state["started"], "updated": time.strftime("%Y-%m-%d %H:%M"), "machine": machine,
        "threads": int(os.environ.get("PRENET_BENCH_THREADS", "1")), "scale": scale,
        "repeats_planned": state["repeats"], "repeats_done": max(r["repeat"] for r in rows) + 1,
        "complete": len(rows) == state["repeats"] * per_repeat,
        "splits": by(rows, "split"),
        "frameworks": {split: by([r for r in rows if r["split"] == split], "framework")
                       for split in dict.fromkeys(r["split"] for r in rows)},
        "workloads": by(rows, "workload"),
        "runs": rows,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")

if __name__ == "__main__":
    main()
