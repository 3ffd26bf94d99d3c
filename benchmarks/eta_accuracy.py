"""ETA accuracy on real CPU runs: PreNeT's first prediction vs the measured fit time.

    python benchmarks/eta_accuracy.py [--set default|validation|compiled|all] [--only NAME ...] [--json FILE]

``--set validation`` runs nine short fits (20-60 s) where validation is 5-25% of the wall time, to check
the estimate of a validation run made before the first one is measured (issues 16 and 24); each row keeps
the inputs of that estimate (``validation_inputs``), which `validation_rules.py` scores candidate rules on.
``--set compiled`` runs four short fits of ``torch.compile``'d models (MLP, CNN, transformer, and an MLP whose
partial last batches recompile both graphs): compile time is a one-off, never a rate (issue 24); each row
gives the fit's compile seconds (``compile_s``).
The summary gives the band's coverage (the fit's time inside the first prediction's band) and half-width.

Each workload (see `workloads.py`) runs in its own process with `PreNeTCallback`. For each we
report the error of PreNeT's first prediction (made within the first 5% of optimizer steps) and,
from the same run, of the naive estimate progress bars make: the first epoch's training-batch rate
times the remaining batches, validation and everything else ignored. Beside the raw error: the run's
*pace* and the first prediction redone at it (`benchmarks/pace.py`: what the prediction got wrong
besides the shared machine's drift), and the validation term's own error at that pace as a share of the
total.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_one(name: str, out_dir: str) -> dict[str, Any]:
    """Train one workload with the callback (in this process) and return the figures."""
    sys.path.insert(0, str(ROOT))
    import os

    import torch

    torch.set_num_threads(int(os.environ.get("PRENET_BENCH_THREADS", "1")))
    import lightning.pytorch as pl

    from benchmarks.eta_summary import save_figures
    from benchmarks.heldout_workloads import LIGHTNING as HELD_OUT
    from benchmarks.pace import total_at_pace
    from benchmarks.workloads import WORKLOADS, build_trainer
    from prenet_callbacks import PreNeTCallback

    class BatchClock(pl.Callback):
        """Times training batches per epoch, for the naive progress-bar estimate."""

        def __init__(self) -> None:
            self.fit_start = 0.0
            self.epoch0_first_start: float | None = None
            self.epoch0_last_end: float | None = None
            self.epoch0_batches = 0
            self.total_batches = 0

        def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
            self.fit_start = time.perf_counter()

        def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
            if trainer.current_epoch == 0 and self.epoch0_first_start is None:
                self.epoch0_first_start = time.perf_counter()

        def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
            self.total_batches += 1
            if trainer.current_epoch == 0:
                self.epoch0_batches += 1
                self.epoch0_last_end = time.perf_counter()

    pl.seed_everything(0, verbose=False)
    factory = WORKLOADS.get(name) or HELD_OUT[name]
    module, train, val, settings = factory()
    prenet = PreNeTCallback(report_path=f"{out_dir}/{name}/prenet_report.json", print_report=False)
    clock = BatchClock()
    inputs = _capture_validation_inputs(prenet)
    trainer = build_trainer(f"{out_dir}/{name}", [clock, prenet], settings)
    start = time.perf_counter()
    trainer.fit(module, train, val)
    wall = time.perf_counter() - start

    report = prenet.report
    actual = report.actual["fit_s"]
    first = report.first_prediction
    plan = report.plan
    # Progress bar: batches of epoch 0 at their rate, then the rest at the same rate.
    rate = clock.epoch0_batches / (clock.epoch0_last_end - clock.epoch0_first_start)
    elapsed_epoch0 = clock.epoch0_last_end - clock.fit_start
    naive_total = elapsed_epoch0 + (clock.total_batches - clock.epoch0_batches) / rate
    at_pace, pace = total_at_pace(first, report.measured, plan.get("total_batches"))
    validation_actual = report.actual["breakdown"]["validation_s"]
    runs = plan.get("validation_runs") or 0
    inputs.update(val_batches=plan.get("val_batches"), validation_runs=runs, pace=pace,
                  measured_per_run_s=validation_actual / runs if runs else None,
                  measured_runs_s=[round(x, 4) for x in prenet.session.measurements.validation_run.state_dict()["recent"]])
    return {
        "workload": name,
        "description": factory.__doc__.strip(),
        "actual_fit_s": round(actual, 3),
        "trainer_fit_wall_s": round(wall, 3),
        "total_steps": plan.get("total_steps"),
        "first_prediction_at_step": first["at_step"],
        "first_prediction_at_fraction": round(first["at_step"] / plan["total_steps"], 4),
        "first_prediction_s": round(first["predicted_total_s"], 3),
        "first_error": round(first["predicted_total_s"] / actual - 1, 4),
        "first_band": [round(first["low_s"], 2), round(first["high_s"], 2)],
        "first_band_half_width": round((first["high_s"] - first["low_s"]) / 2 / first["predicted_total_s"], 4),
        "actual_in_band": first["low_s"] <= actual <= first["high_s"],
        "first_band_parts": first.get("band_parts"),  # what the band is made of (eta._band)
        "pace": round(pace, 4),
        "first_error_at_pace": round(at_pace / actual - 1, 4),
        "naive_progress_bar_s": round(naive_total, 3),
        "naive_error": round(naive_total / actual - 1, 4),
        "last_refinement_error": round(report.predictions[-1]["predicted_total_s"] / actual - 1, 4),
        "validation_share": round(validation_actual / actual, 4),
        "first_validation_source": first.get("validation_source"),
        "first_validation_basis": first.get("validation_basis"),
        "first_validation_run_s": (first.get("rates") or {}).get("validation_run_s"),
        "first_validation_predicted_s": first["breakdown"].get("validation_s"),
        "validation_actual_s": validation_actual,
        # the validation term's part of the first prediction's error at the run's pace, as a share of the
        # actual time (a neighbour slows validation batches as much as training ones)
        "first_validation_error_of_total": round(
            (first["breakdown"]["validation_s"] * pace - validation_actual) / actual, 4),
        "predictions": len(report.predictions),
        "first_note": first.get("note"),  # what the first prediction warned of (a forecast slowdown, the allocator)
        "compile_s": report.measured.get("compile_s"),
        # what the first prediction's validation estimate rested on, and what validation runs then cost:
        # `benchmarks/validation_rules.py` scores candidate rules on these
        "validation_inputs": inputs,
        "saves": save_figures(report),
    }


def _capture_validation_inputs(prenet: Any) -> dict[str, Any]:
    """The measurements a validation estimate can rest on, as they stood at the first prediction."""
    captured: dict[str, Any] = {}
    session = prenet.session
    predict = session._predict

    def first_capture(*, first: bool, **kwargs: Any) -> Any:
        if first and not captured:
            m = session.measurements
            captured.update(
                batch_s=m.batch.mean, forward_per_batch_s=m.forward_per_batch.mean, data_per_batch_s=m.data_per_batch.mean,
                eval_forward_share=m.eval_forward_share, eval_forward_s=m.eval_forward_s,
                eval_forward_note=m.eval_forward_note, model_call_s=m.model_call.mean, train_batch_size=m.train_batch_size,
                val_batch_size=m.val_batch_size, sanity_batches=m.sanity_val_batches,
                sanity_raw_per_batch_s=m.sanity_val_raw_per_batch, sanity_per_batch_s=m.sanity_val_per_batch,
                sanity_fixed_s=m.sanity_val_fixed, sanity_page_faults_s=m.sanity_page_faults_s)
        return predict(first=first, **kwargs)

    session._predict = first_capture
    return captured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="default", choices=["default", "validation", "compiled", "all"],
                        help="which workloads (default: the five general ones)")
    parser.add_argument("--only", nargs="*", help="workload names (default: the set's)")
    parser.add_argument("--json", help="result file (default: benchmarks/results/eta_accuracy[_SET].json)")
    parser.add_argument("--out", default="/tmp/prenet-eta-bench", help="scratch directory for runs")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(run_one(args.child, args.out)))
        return

    sys.path.insert(0, str(ROOT))
    from benchmarks.workloads import SETS

    names = args.only or SETS[args.set]
    if args.json is None:
        suffix = "" if args.set == "default" else f"_{args.set}"
        args.json = str(ROOT / f"benchmarks/results/eta_accuracy{suffix}.json")
    rows = []
    for name in names:
        # a fresh process per run: no warm caches or threads carried from one run to the next
        proc = subprocess.run([sys.executable, __file__, "--child", name, "--out", args.out],
                              capture_output=True, text=True, cwd=ROOT)
        line = next((l for l in proc.stdout.splitlines() if l.startswith("RESULT ")), None)
        if line is None:
            print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"workload {name} failed (exit {proc.returncode})")
        row = json.loads(line[len("RESULT "):])
        rows.append(row)
        print(f"{name:36s} fit {row['actual_fit_s']:7.1f}s  first@{row['first_prediction_at_fraction']:.1%} "
              f"err {row['first_error']:+.1%}  pace x{row['pace']:.3f} (err at pace {row['first_error_at_pace']:+.1%})  "
              f"naive {row['naive_error']:+.1%}  in band {row['actual_in_band']} (+-{row['first_band_half_width']:.1%})  "
              f"validation {row['validation_share']:.0%} ({row['first_validation_source']}, "
              f"{row['first_validation_error_of_total']:+.1%} of the total at pace)")
    first = [abs(r["first_error"]) for r in rows]
    paced = [abs(r["first_error_at_pace"]) for r in rows]
    validation = [abs(r["first_validation_error_of_total"]) for r in rows]
    naive = [abs(r["naive_error"]) for r in rows]
    half_widths = [r["first_band_half_width"] for r in rows]
    summary = {
        "runs": len(rows),
        "median_abs_first_error": round(statistics.median(first), 4),
        "worst_abs_first_error": round(max(first), 4),
        "median_abs_first_error_at_pace": round(statistics.median(paced), 4),
        "worst_abs_first_error_at_pace": round(max(paced), 4),
        "median_abs_first_validation_error_of_total": round(statistics.median(validation), 4),
        "median_abs_naive_error": round(statistics.median(naive), 4),
        "worst_abs_naive_error": round(max(naive), 4),
        "actual_in_band": sum(r["actual_in_band"] for r in rows),
        "band_coverage": round(sum(r["actual_in_band"] for r in rows) / len(rows), 4),
        "median_band_half_width": round(statistics.median(half_widths), 4),
        "widest_band_half_width": round(max(half_widths), 4),
    }
    print(json.dumps(summary, indent=1))
    result = {"benchmark": "eta_accuracy", "command": f"python benchmarks/eta_accuracy.py --set {args.set}",
               "date": time.strftime("%Y-%m-%d %H:%M"), "machine": _machine(), "summary": summary, "runs": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


def _machine() -> str:
    import os
    import platform

    import torch

    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}"


if __name__ == "__main__":
    main()
