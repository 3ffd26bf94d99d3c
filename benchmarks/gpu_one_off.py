"""What a GPU run spends once beyond its steps, read from the GPU runs the project has (issue 40).

    python benchmarks/gpu_one_off.py      # writes benchmarks/results/gpu_one_off.json

A CPU run's one-off time (slow warm-up steps, a profiling window at the CPU's pace) is not what a GPU would
spend; the projection gives each target row its own (`prenet_callbacks/projection/rows/one_off.py`). Its figures
come from the committed reports of the H200 runs (2026-11-30): at the first prediction, the time elapsed in
training beyond the steps at their measured pace is the run's start-up (the first kernels, library handles,
cuDNN's choices) plus the excess of its profiled steps; the profiled steps' slowdown is the profiled window's
step (its phases) over the clean step. No GPU is needed: the reports are read, nothing is run.
"""
from __future__ import annotations

import json
import lzma
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORTS = sorted((ROOT / "benchmarks" / "results" / "gpu").glob("*.report.json.xz"))
OUT = ROOT / "benchmarks" / "results" / "gpu_one_off.json"


def one_run(path: Path) -> dict:
    report = json.loads(lzma.decompress(path.read_bytes()))
    first = report["predictions"][0]
    measured = report["measured"]
    setup = first["breakdown"]["setup_s"]
    step = first["step_s"]
    profiled = int(measured["profiled_steps"])
    profiled_step = measured["step_phases"]["total_s"]
    one_off = first["elapsed_s"] - setup - first["at_step"] * step
    excess = profiled * (profiled_step - step)
    return {"report": path.name, "device": report["current"]["name"], "at_step": first["at_step"],
            "elapsed_s": first["elapsed_s"], "setup_s": setup, "step_s": step, "one_off_s": round(one_off, 4),
            "profiled_steps": profiled, "profiled_step_s": profiled_step,
            "profiled_excess_s": round(excess, 4), "start_s": round(one_off - excess, 4),
            "profiled_slowdown": round(profiled_step / step, 3)}


def main() -> None:
    runs = [one_run(path) for path in REPORTS]
    summary = {"start_s": round(statistics.median(r["start_s"] for r in runs), 2),
               "profiled_slowdown": round(statistics.median(r["profiled_slowdown"] for r in runs), 1),
               "runs": len(runs)}
    OUT.write_text(json.dumps({"summary": summary, "runs": runs}, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
