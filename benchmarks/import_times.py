"""What importing the adapters costs, and which frameworks each one pulls in.

    python benchmarks/import_times.py [--repeats 5] [--base DIR] [--json benchmarks/results/import_times.json]

Each arm is a fresh ``python -c`` process that imports what a user's script imports and builds the
callback; the parent times the child's whole run (interpreter start included), wall clock and CPU time (user +
system, from ``getrusage``: on a shared host the wall clock moves with the neighbours' load, the CPU time
much less), and the child reports which of
``lightning.pytorch``, ``pytorch_lightning``, ``deepspeed`` and ``transformers`` ended up in ``sys.modules``.
Arms run round-robin (every arm once, then again), so a noisy machine slows all arms alike; every run is kept
and the medians are reported with their range. ``--base DIR`` adds every PreNeT arm again with the source tree
``DIR`` first on ``sys.path`` (e.g. ``git archive <commit> | tar -x -C DIR``): before and after in one run.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WATCHED = ("lightning.pytorch", "pytorch_lightning", "deepspeed", "transformers")

# name -> (code the user's script runs, whether it imports PreNeT)
ARMS: dict[str, tuple[str, bool]] = {
    "torch": ("import torch", False),
    "torch + lightning": ("import torch, lightning.pytorch", False),
    "lightning + PreNeTCallback": ("import lightning.pytorch\nfrom prenet_callbacks import PreNeTCallback\n"
                                   "PreNeTCallback()", True),
    "pytorch_lightning + PreNeTCallback": ("import pytorch_lightning\nfrom prenet_callbacks import PreNeTCallback\n"
                                           "PreNeTCallback()", True),
    "transformers + PreNeTTrainerCallback": ("import transformers\n"
                                             "from prenet_callbacks import PreNeTTrainerCallback\n"
                                             "PreNeTTrainerCallback()", True),
    "Tracker": ("from prenet_callbacks import Tracker", True),
}


def _child_code(code: str, tree: str | None) -> str:
    head = f"import sys\nsys.path.insert(0, {tree!r})\n" if tree else ""
    tail = ("\nimport json\n"
            f"print('LOADED ' + json.dumps([m for m in {WATCHED!r} if m in sys.modules]))\n"
            "pc = sys.modules.get('prenet_callbacks')\n"
            "print('FROM ' + (pc.__file__ if pc else ''))\n")
    return head + code + tail


def run_arm(code: str, tree: str | None) -> dict:
    env = {**os.environ, "DS_ACCELERATOR": os.environ.get("DS_ACCELERATOR", "cpu")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", _child_code(code, tree)], capture_output=True, text=True,
                           cwd="/tmp", env=env, timeout=300)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if child.returncode != 0:
        raise SystemExit(f"arm failed:\n{code}\n{child.stderr[-2000:]}")
    lines = child.stdout.splitlines()
    loaded = json.loads(next(line for line in lines if line.startswith("LOADED "))[7:])
    source = next(line for line in lines if line.startswith("FROM "))[5:]
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "loaded": loaded, "prenet_from": source}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--base", help="a source tree to import PreNeT from for the 'before' arms")
    parser.add_argument("--base-label", default="before")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/import_times.json"))
    args = parser.parse_args()
    plan = [(name, code, None) for name, (code, _) in ARMS.items()]
    if args.base:
        plan += [(f"{name} ({args.base_label})", code, str(Path(args.base).resolve()))
                 for name, (code, ours) in ARMS.items() if ours]
    runs: dict[str, list[dict]] = {name: [] for name, _, _ in plan}
    for repeat in range(args.repeats):
        for name, code, tree in plan:
            runs[name].append(run_arm(code, tree or str(ROOT)))
            print(json.dumps({"repeat": repeat, "arm": name, **runs[name][-1]}), flush=True)
    summary = {}
    for name, rows in runs.items():
        walls, cpus = [r["wall_s"] for r in rows], [r["cpu_s"] for r in rows]
        summary[name] = {"median_s": round(statistics.median(walls), 2), "min_s": min(walls), "max_s": max(walls),
                         "cpu_median_s": round(statistics.median(cpus), 2), "cpu_min_s": min(cpus),
                         "cpu_max_s": max(cpus), "loaded": rows[-1]["loaded"]}
    print(json.dumps(summary, indent=1))
    command = "python benchmarks/import_times.py" + (f" --repeats {args.repeats}" if args.repeats != 5 else "") \
        + (" --base DIR" if args.base else "")
    Path(args.json).write_text(json.dumps({"benchmark": "import_times", "command": command,
                                           "date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(),
                                           "base": args.base_label if args.base else None,
                                           "summary": summary, "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
