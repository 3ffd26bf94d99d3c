"""A busy machine beside the run: do other hardware's rows stay put, and does the panel say so?

    python benchmarks/contention_trial.py [--repeats 2] [--burners 2] [--json benchmarks/results/contention_trial.json]

The same small plain loop with a `Tracker` (an MLP whose CPU step is a few milliseconds, so its GPU rows are
host-bound and carry the run's own host time), run alternately as it is and with ``--burners`` CPU-bound
processes beside it (each a busy Python loop, started before the loop and stopped after it). Each run is a
fresh process. Reported per run: the clean steps' median and spread, the load, whether the report names a
busy machine, and the step time of the H100 and A100 rows; summarised: the busy runs' rows against the
quiet runs' (ratio of medians), which should stay within the band. The "quiet" runs are only as quiet as
the machine is: what else ran is in their own load figures.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ["H100", "A100"]


def loop(out: str) -> dict[str, Any]:
    """One run of the loop with a Tracker; the figures read from its report."""
    import torch
    from torch import nn

    sys.path.insert(0, str(ROOT))
    from prenet_callbacks import Tracker
    from prenet_callbacks.contention import LINE_START

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    steps = 1500
    tracker = Tracker(total_steps=steps, model=model, optimizer=optimizer, targets=TARGETS,
                      report_path=f"{out}/prenet_report.json", print_report=False, html=False)
    for _ in range(steps):
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
        tracker.step()
    report = tracker.close()
    rows = {row["name"]: row for row in report.targets}
    found = report.measured.get("contention") or {}
    return {"fit_s": report.actual["fit_s"], "contention": found,
            "busy_line": next((line for line in report.limitations if line.startswith(LINE_START)), None),
            "host": {name: (rows.get(name) or {}).get("assumed", {}).get("host") for name in TARGETS},
            "step_s": {name: (rows.get(name) or {}).get("step_s") for name in TARGETS}}


def _burn(stop_at: float) -> None:
    while time.time() < stop_at:
        sum(i * i for i in range(10_000))


def run_one(busy: bool, burners: int, out: str) -> dict[str, Any]:
    procs = [multiprocessing.Process(target=_burn, args=(time.time() + 600,)) for _ in range(burners if busy else 0)]
    for proc in procs:
        proc.start()
    time.sleep(2.0 if busy else 0.0)   # the load average and the other processes settle in
    try:
        child = subprocess.run([sys.executable, __file__, "--child", out], stdout=subprocess.PIPE, text=True,
                               cwd=ROOT, timeout=900)
    finally:
        for proc in procs:
            proc.terminate()
            proc.join()
    line = next((l for l in child.stdout.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"the loop failed (exit {child.returncode})")
    return {"busy": busy, **json.loads(line[len("RESULT "):])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/contention_trial.json"))
    parser.add_argument("--out", default="/tmp/prenet-contention")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(loop(args.child)))
        return
    runs = []
    for repeat in range(args.repeats):
        for busy in (False, True):
            runs.append(run_one(busy, args.burners, args.out))
            print(json.dumps({"repeat": repeat, **runs[-1]}), flush=True)
    summary: dict[str, Any] = {"runs": len(runs), "burners": args.burners}
    for name in TARGETS:
        quiet = [r["step_s"][name] for r in runs if not r["busy"] and r["step_s"][name]]
        busy = [r["step_s"][name] for r in runs if r["busy"] and r["step_s"][name]]
        if quiet and busy:
            summary[f"{name}_busy_over_quiet"] = round(statistics.median(busy) / statistics.median(quiet), 3)
    summary["busy_runs_named"] = sum(1 for r in runs if r["busy"] and r["busy_line"])
    summary["quiet_runs_named"] = sum(1 for r in runs if not r["busy"] and r["busy_line"])
    print(json.dumps(summary, indent=1))
    command = "python benchmarks/contention_trial.py" + (f" --repeats {args.repeats}" if args.repeats != 2 else "") \
        + (f" --burners {args.burners}" if args.burners != 2 else "")
    Path(args.json).write_text(json.dumps({"benchmark": "contention_trial", "command": command,
                                           "date": time.strftime("%Y-%m-%d %H:%M"), "summary": summary,
                                           "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
