"""ETA accuracy on real CPU plain-PyTorch loops with a `Tracker`: first prediction vs the measured time.

    python benchmarks/loop_eta_accuracy.py [--only NAME ...] [--scale 1.0] [--json benchmarks/results/loop_eta_accuracy.json]

Each workload (see `loop_workloads.py`) runs in its own process (torch single-threaded unless
``PRENET_BENCH_THREADS`` says otherwise): a transformer-encoder loop that evaluates and saves on a
schedule, an LSTM loop under `accelerate` with gradient accumulation, and the encoder over DataLoader
epochs (a new iterator each epoch; with and without two workers, which each epoch and each evaluation
spawns afresh). Beside PreNeT's first prediction, the ETA a tqdm bar over the optimizer steps shows at
the same step. Targets as in `hf_eta_accuracy.py`.
``--scale 0.05`` is a smoke test of the script, not a measurement.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    from benchmarks.hf_eta_accuracy import main_for
    from benchmarks.loop_workloads import WORKLOADS, run_loop

    main_for("loop_eta_accuracy", __file__, WORKLOADS, run_loop)
