"""The allocator's two states on a CPU, and whether the session's heap probe moves a run.

    python benchmarks/heap_faults.py [--trace-runs 20] [--loop-pairs 6] [--lightning NAME ...] [--lightning-pairs 2]
                                     [--json benchmarks/results/heap_faults.json]

- ``trace``: the LSTM step of `loop_workloads.py` (batch 16, AdamW) in one process, a new model each run
  of 150 steps: each run's median step time and minor page faults per step (`getrusage`), then the
  session's probe (``malloc_trim(0)``, one step: its faults and time). Rerun it with
  ``MALLOC_TOP_PAD_=268435456`` in the environment to see the faults go.
- ``loop``: the LSTM `accelerate` loop at ``--scale`` (default 0.3), in one process, alternating runs with
  the session's heap trim (opted in: ``allocator_probe=True``; off by default since issue 39) and without it (the watch counts in both, its probe then trims nothing):
  first-prediction error, band, the state at the first prediction (from its note) and the run's pace.
- ``lightning``: the named `eta_accuracy.py` fits, each run in a fresh process, alternating with and
  without the trim: the run's pace and first-prediction error (does the probe move the run?).

Torch single-threaded, as in the ETA benchmarks. See docs/accuracy.md for what the figures showed.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def glibc_malloc_trim() -> bool:
    """``malloc_trim(0)`` through ctypes whatever the environment says (False without glibc)."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(ctypes.c_size_t(0))
    except (OSError, AttributeError):
        return False
    return True


def _without_trim() -> None:
    """Sessions made from now on count faults but their probe trims nothing (the default since issue 39)."""
    import prenet_callbacks.session.machine as session_module

    session_module.glibc_trim = lambda: (lambda: None)


def _with_trim() -> None:
    """Sessions made from now on opt in to the heap probe (``allocator_probe=True``), whatever built them."""
    import prenet_callbacks.session.machine as session_module

    cls = session_module.PredictionSession
    if getattr(cls, "_bench_opted_in", False):
        return
    original = cls.__init__

    def opted_in(self, config, *args, **kwargs):
        config.allocator_probe = True
        original(self, config, *args, **kwargs)

    cls.__init__, cls._bench_opted_in = opted_in, True


def trace(runs: int, steps: int = 150, skip: int = 20) -> list[dict[str, float]]:
    import torch
    from torch import nn

    from benchmarks.loop_workloads import SequenceClassifier, _class_batch

    generator = torch.Generator().manual_seed(1)
    rows = []
    for _ in range(runs):
        torch.manual_seed(0)
        model = SequenceClassifier()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        times, start_faults = [], 0
        for step in range(steps):
            x, y = _class_batch(generator, 16, 48, 32)
            start = time.perf_counter()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad()
            times.append(time.perf_counter() - start)
            if step == skip:
                start_faults = _faults()
        faults_per_step = (_faults() - start_faults) / (steps - skip - 1)
        # the session's probe: trim the heap, then one step: every page the step touches afresh
        trim, before = glibc_malloc_trim(), _faults()
        start = time.perf_counter()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
        probe_ms = 1000 * (time.perf_counter() - start)
        rows.append({"step_ms": round(1000 * statistics.median(times[skip:]), 3),
                     "faults_per_step": round(faults_per_step, 1),
                     "probe_faults": _faults() - before if trim else None, "probe_step_ms": round(probe_ms, 3)})
        print(f"trace: {rows[-1]}", flush=True)
    return rows


def loop(pairs: int, scale: float) -> list[dict[str, Any]]:
    import prenet_callbacks.session.machine as session_module
    from benchmarks.loop_workloads import run_loop

    real = session_module.glibc_trim
    _with_trim()   # the "without" arm then makes the trim a no-op
    rows = []
    for _ in range(pairs):
        for trim in (True, False):
            session_module.glibc_trim = real
            if not trim:
                _without_trim()
            result = run_loop("loop_lstm_accelerate_accumulate", with_prenet=True, out_dir="/tmp/prenet-heap-faults",
                              scale=scale)
            report = result["report"]
            first, actual = report.first_prediction, report.actual["fit_s"]
            note = first.get("note") or ""
            rows.append({"trim": trim, "first_error": round(first["predicted_total_s"] / actual - 1, 4),
                         "actual_in_band": first["low_s"] <= actual <= first["high_s"],
                         "faulting_at_first": "steps re-fault" in note,
                         "pace": round(report.measured["batch_run_mean_s"] / first["rates"]["batch_s"], 4)})
            print(f"loop: {rows[-1]}", flush=True)
    session_module.glibc_trim = real
    return rows


def lightning(names: list[str], pairs: int) -> list[dict[str, Any]]:
    rows = []
    for _ in range(pairs):
        for name in names:
            for trim in (True, False):
                proc = subprocess.run([sys.executable, __file__, "--lightning-child", name, str(int(trim))],
                                      capture_output=True, text=True, cwd=ROOT)
                line = next((l for l in proc.stdout.splitlines() if l.startswith("RESULT ")), None)
                if line is None:
                    print(proc.stderr[-3000:], file=sys.stderr)
                    raise SystemExit(f"{name} failed (exit {proc.returncode})")
                rows.append({"workload": name, "trim": trim, **json.loads(line[len("RESULT "):])})
                print(f"lightning: {rows[-1]}", flush=True)
    return rows


def _lightning_child(name: str, trim: bool) -> None:
    _with_trim()
    if not trim:
        _without_trim()
    from benchmarks.eta_accuracy import run_one

    row = run_one(name, "/tmp/prenet-heap-faults-eta")
    print("RESULT " + json.dumps({k: row[k] for k in ("first_error", "pace", "first_error_at_pace", "actual_in_band")}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace-runs", type=int, default=20)
    parser.add_argument("--loop-pairs", type=int, default=6)
    parser.add_argument("--scale", type=float, default=0.3)
    parser.add_argument("--lightning", nargs="*", default=["mlp_accumulate_val_every_n_steps", "cnn_loader_workers"])
    parser.add_argument("--lightning-pairs", type=int, default=2)
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/heap_faults.json"))
    parser.add_argument("--lightning-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch

    torch.set_num_threads(1)
    if args.lightning_child:
        _lightning_child(args.lightning_child[0], args.lightning_child[1] == "1")
        return
    loop_rows = loop(args.loop_pairs, args.scale)
    result = {
        "benchmark": "heap_faults", "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": "python benchmarks/heap_faults.py",
        "trace": trace(args.trace_runs),
        "loop": loop_rows,
        "loop_in_band": {arm: sum(r["actual_in_band"] for r in loop_rows if r["trim"] == (arm == "trim"))
                         for arm in ("trim", "no_trim")},
        "lightning": lightning(args.lightning, args.lightning_pairs) if args.lightning else [],
    }
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("loop_in_band",)}))


if __name__ == "__main__":
    main()
