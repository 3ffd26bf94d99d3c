"""What a checkpoint file is assumed to cost before the run has saved one, chosen on the development split.

    python benchmarks/save_cost_choice.py --development DEV.json [DEV2.json ...] [--held-out HELD.json ...]
                                          [--held-out-used OVERHEAD_S RATE] [--json OUT]

Until a run has saved a checkpoint, the ETA prices each planned file at ``overhead + state bytes / write rate``
(`prenet_callbacks/forecast/eta.py`, `_per_checkpoint_file`): the framework's fixed work around a save (building the
checkpoint, opening and closing its files) and the bytes of the parameters and optimizer state. Each run of an ETA
protocol file (`eta_protocol.py`, whose rows carry `eta_summary.save_figures`) tells how many files the first
prediction priced that way, the state's bytes, and what the run's checkpoint files then cost. For each candidate
(overhead, rate) on a grid, a run's error is its checkpoint part redone with the candidate, less what its saves took,
as a share of the run's time (what that part adds to the first prediction's error). The choice is the candidate with
the smallest worst error over the development runs (ties: the smaller median); the held-out runs are only reported,
at the choice and at the constants before it. Runs whose first prediction had a measured file (or no save) do not
count: the constants do not reach them. The development files' first predictions must have used the constants
before (``--before``); held-out files run after the choice say theirs (``--held-out-used``).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402

OVERHEADS_S = [round(0.001 * i, 3) for i in range(0, 41)]          # 0 to 40 ms a file
RATES = [100e6, 200e6, 400e6, 800e6, 1600e6]                          # bytes a second


def _estimated(saves: dict, before: tuple[float, float]) -> bool:
    """Whether the first prediction priced its files with the constants (``before``), not a measured file."""
    overhead, rate = before
    first = saves.get("first_checkpoint_file_s")
    if not first or not saves.get("first_checkpoints_s"):
        return False
    return abs(first - (overhead + (saves.get("state_bytes") or 0.0) / rate)) < 6e-4   # the report rounds to 0.1 ms


def cases(files: list[str], before: tuple[float, float]) -> list[dict]:
    """The runs the constants reach: files priced, state bytes, the run's checkpoint seconds and time."""
    out = []
    for path in files:
        for run in json.loads(Path(path).read_text())["runs"]:
            saves = run.get("saves") or {}
            if not _estimated(saves, before):
                continue
            out.append({"workload": run["workload"], "framework": run.get("framework"), "repeat": run.get("repeat"),
                        "files_priced": saves["first_checkpoints_s"] / saves["first_checkpoint_file_s"],
                        "state_bytes": saves.get("state_bytes") or 0.0,
                        "file_s": saves.get("checkpoint_file_s"),
                        "actual_s": saves.get("checkpoints_actual_s") or 0.0,
                        "run_s": run.get("actual_fit_s") or run["actual_s"]})
    return out


def errors(runs: list[dict], overhead: float, rate: float) -> list[float]:
    """Each run's checkpoint part at (overhead, rate) less what its saves took, as a share of its time."""
    return [(r["files_priced"] * (overhead + r["state_bytes"] / rate) - r["actual_s"]) / r["run_s"] for r in runs]


def summary(runs: list[dict], overhead: float, rate: float) -> dict:
    found = [abs(e) for e in errors(runs, overhead, rate)]
    return {"runs": len(found), "worst_abs": round(max(found), 4) if found else None,
            "median_abs": round(statistics.median(found), 4) if found else None}


def choose(runs: list[dict]) -> tuple[float, float]:
    """The grid point with the smallest worst error over ``runs`` (ties: the smaller median)."""
    def score(point: tuple[float, float]) -> tuple[float, float]:
        found = [abs(e) for e in errors(runs, *point)]
        return round(max(found), 6), round(statistics.median(found), 6)

    return min(((o, r) for o in OVERHEADS_S for r in RATES), key=score)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--development", nargs="+", required=True, help="eta_protocol.py files of the development split")
    parser.add_argument("--held-out", nargs="*", default=[], help="eta_protocol.py files of the held-out split")
    parser.add_argument("--before", nargs=2, type=float, default=[0.02, 400e6], metavar=("OVERHEAD_S", "RATE"),
                        help="the constants before the choice, reported beside it (default 0.02 s and 400 MB/s)")
    parser.add_argument("--held-out-used", nargs=2, type=float, metavar=("OVERHEAD_S", "RATE"),
                        help="the constants the held-out files' first predictions used (default: --before)")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/save_cost_choice.json"))
    args = parser.parse_args(argv)
    before = (args.before[0], args.before[1])
    used = (args.held_out_used[0], args.held_out_used[1]) if args.held_out_used else before
    development, held_out = cases(args.development, before), cases(args.held_out, used)
    if not development:
        parser.error("no development run priced a checkpoint file with the constants: nothing to choose on")
    chosen = choose(development)
    figures = {name: {"development": summary(development, *point), "held_out": summary(held_out, *point)}
               for name, point in (("before", before), ("chosen", chosen))}
    result = write_result(args.json, "save_cost_choice", argv, chosen_overhead_s=chosen[0], chosen_rate=chosen[1],
                          before_overhead_s=before[0], before_rate=before[1], figures=figures,
                          development=development, held_out=held_out)
    print(json.dumps({k: result[k] for k in ("chosen_overhead_s", "chosen_rate", "figures")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
