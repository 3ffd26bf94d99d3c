"""A busy machine beside the run: do other hardware's rows stay put, and does the panel say so?

    python benchmarks/contention_trial.py [--repeats 2] [--burners 2] [--workload tracker|lightning] [--steps 400]
                                          [--json benchmarks/results/contention_trial.json]

The same small training run, alternately as it is and with ``--burners`` CPU-bound processes beside it (each a
busy Python loop, started before the run and stopped after it): ``tracker``, a plain loop with a `Tracker` (an
MLP whose CPU step is a few milliseconds, so its GPU rows are host-bound and carry the run's own host time), or
``lightning``, the same MLP in a Lightning fit with `PreNeTCallback` (the issue's trial). Each run is a fresh
process and every run is kept. Reported per run: the threads' wait for a CPU, the clean steps' quantiles, the
load, the busy line if the report has one, the step time and host time of the H100 and A100 rows, and the
same report projected as before issue 40 (host time from the mean step: ``rows_from_mean``); summarised: the
busy runs' rows against the quiet runs' (ratio of medians), which should stay within the rows' band. The "quiet" runs are only as quiet as the machine is: what else ran is in their own figures.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ["H100", "A100"]


def _model_and_data():
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    return model, torch.randn(64, 256), torch.randint(0, 10, (64,))


def _tracker_run(out: str, steps: int):
    import torch
    from torch import nn

    from prenet_callbacks import Tracker

    model, x, y = _model_and_data()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tracker = Tracker(total_steps=steps, model=model, optimizer=optimizer, targets=TARGETS,
                      report_path=f"{out}/prenet_report.json", print_report=False, html=False)
    for _ in range(steps):
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
        tracker.step()
    return tracker.close()


def _lightning_run(out: str, steps: int):
    import lightning.pytorch as pl
    import torch
    from torch import nn

    from prenet_callbacks import PreNeTCallback

    net, x, y = _model_and_data()

    class Module(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def training_step(self, batch, _):
            return nn.functional.cross_entropy(self.net(batch[0]), batch[1])

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x.repeat(steps, 1), y.repeat(steps)),
                                       batch_size=64)
    callback = PreNeTCallback(targets=TARGETS, report_path=f"{out}/prenet_report.json", print_report=False,
                              html=False)
    trainer = pl.Trainer(max_epochs=1, callbacks=[callback], logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, default_root_dir=out)
    trainer.fit(Module(), data)
    return callback.report


def loop(out: str, workload: str, steps: int) -> dict[str, Any]:
    """One run; the figures read from its report."""
    sys.path.insert(0, str(ROOT))
    from prenet_callbacks.measure.contention import LINE_START

    report = (_lightning_run if workload == "lightning" else _tracker_run)(out, steps)
    rows = [row for row in report.targets if not row.get("current")]     # in TARGETS' order, by catalog name
    found = report.measured.get("contention") or {}
    return {"fit_s": report.actual["fit_s"], "contention": found,
            "busy_line": next((line for line in report.limitations if line.startswith(LINE_START)), None),
            "rows": {row["name"]: {"step_s": row["step_s"], "step_low_s": row.get("step_low_s"),
                                   "step_high_s": row.get("step_high_s"),
                                   "host_s": (row.get("phases_s") or {}).get("host"),
                                   "host": (row.get("assumed") or {}).get("host")} for row in rows},
            "notes": [n for n in (report.projection or {}).get("notes", []) if "machine was busy" in n],
            "rows_from_mean": _rows_from_mean(report)}


def _rows_from_mean(report) -> dict[str, float]:
    """The same report projected as before issue 40: host time from the mean step (no contention figures)."""
    import copy

    from prenet_callbacks.projection import project_report

    plain = copy.deepcopy(report)
    plain.measured.pop("contention", None)
    return {row["name"]: row["step_s"] for row in project_report(plain, TARGETS) if not row.get("current")}


def _burn(stop_at: float) -> None:
    while time.time() < stop_at:
        sum(i * i for i in range(10_000))


def run_one(busy: bool, burners: int, out: str, workload: str, steps: int) -> dict[str, Any]:
    procs = [multiprocessing.Process(target=_burn, args=(time.time() + 1800,)) for _ in range(burners if busy else 0)]
    for proc in procs:
        proc.start()
    time.sleep(2.0 if busy else 0.0)   # the other processes settle in
    try:
        child = subprocess.run([sys.executable, __file__, "--child", out, "--workload", workload, "--steps", str(steps)],
                               stdout=subprocess.PIPE, text=True, cwd=ROOT, timeout=1800)
    finally:
        for proc in procs:
            proc.terminate()
            proc.join()
    line = next((l for l in child.stdout.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"the run failed (exit {child.returncode})")
    return {"busy": busy, **json.loads(line[len("RESULT "):])}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Busy runs' rows against the quiet runs' (ratio of medians), and how many runs of each arm were named."""
    summary: dict[str, Any] = {"runs": len(runs)}
    names = sorted({name for run in runs for name in run["rows"]})
    for name in names:
        arms = {arm: [run["rows"][name]["step_s"] for run in runs if run["busy"] == arm and name in run["rows"]]
                for arm in (False, True)}
        if arms[False] and arms[True]:
            quiet = statistics.median(arms[False])
            band = [run["rows"][name] for run in runs if not run["busy"] and name in run["rows"]]
            summary[name] = {"quiet_step_s": quiet, "busy_step_s": statistics.median(arms[True]),
                             "busy_over_quiet": round(statistics.median(arms[True]) / quiet, 3),
                             "quiet_band": [min(r["step_low_s"] for r in band), max(r["step_high_s"] for r in band)]}
    for name in names:
        before = {arm: [run["rows_from_mean"][name] for run in runs if run["busy"] == arm
                        and name in run.get("rows_from_mean", {})] for arm in (False, True)}
        if name in summary and before[False] and before[True]:
            summary[name]["from_mean_busy_over_quiet"] = round(statistics.median(before[True])
                                                               / statistics.median(before[False]), 3)
    summary["busy_runs_named"] = sum(1 for r in runs if r["busy"] and r["busy_line"])
    summary["quiet_runs_named"] = sum(1 for r in runs if not r["busy"] and r["busy_line"])
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--workload", choices=("tracker", "lightning"), default="tracker")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/contention_trial.json"))
    parser.add_argument("--out", default="/tmp/prenet-contention")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(loop(args.child, args.workload, args.steps)))
        return
    runs = []
    for repeat in range(args.repeats):
        for busy in (False, True):
            runs.append(run_one(busy, args.burners, args.out, args.workload, args.steps))
            print(json.dumps({"repeat": repeat, **runs[-1]}), flush=True)
    summary = summarise(runs)
    print(json.dumps(summary, indent=1))
    command = (f"python benchmarks/contention_trial.py --repeats {args.repeats} --burners {args.burners} "
               f"--workload {args.workload} --steps {args.steps}")
    Path(args.json).write_text(json.dumps({"benchmark": "contention_trial", "command": command, "cpus": os.cpu_count(),
                                           "date": time.strftime("%Y-%m-%d %H:%M"), "summary": summary,
                                           "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
