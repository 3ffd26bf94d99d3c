"""A `Tracker`'s per-step cost with its quiet steps kept and replayed (`session.quiet_steps`), against every step
taking the full path: the same loop alternating in one process.

    python benchmarks/quiet_steps_ab.py [--rounds 4] [--steps 1500] [--json benchmarks/results/quiet_steps_ab.json]

The loop trains the examples' transformer-encoder regressor (batch 16, ~10 ms a step on one thread, html off),
`tracker.step()` after each optimizer step; each run times every `step()` call. Reported per run: the mean
`step()` after its first 300 steps (the window and the first prediction are over), PreNeT's own time per batch
and its share of the run (`actual.own_time`), the run's wall time. The two sides alternate, the order flipping
each round. Nothing is asserted: it measures.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STEADY_FROM = 300


def one_run(quiet: bool, steps: int, out: Path) -> dict:
    from examples.plain_loop import Regressor
    from prenet_callbacks import Tracker

    torch.manual_seed(0)
    model = Regressor()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(16, 32, 64)
    y = torch.randn_like(model(x))
    start = time.perf_counter()
    tracker = Tracker(steps, model=model, optimizer=optimizer, report_path=out / "report.json", print_report=False,
                      html=False)
    tracker._quiet.enabled = quiet
    calls = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        t = time.perf_counter()
        tracker.step()
        calls.append(time.perf_counter() - t)
    own = tracker.close().actual["own_time"]
    return {"quiet": quiet, "step_mean_us": round(statistics.mean(calls[STEADY_FROM:]) * 1e6, 1),
            "step_median_us": round(statistics.median(calls[STEADY_FROM:]) * 1e6, 1),
            "own_per_batch_us": own["per_batch_us"], "own_share": own["share"],
            "run_s": round(time.perf_counter() - start, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--out", default="/tmp/prenet-quiet-steps")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/quiet_steps_ab.json"))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for k in range(args.rounds):
        for quiet in ((True, False) if k % 2 == 0 else (False, True)):
            runs.append(one_run(quiet, args.steps, out))
            print(runs[-1], flush=True)
    summary = {side: {key: statistics.median(r[key] for r in runs if r["quiet"] is (side == "quiet"))
                      for key in ("step_mean_us", "step_median_us", "own_per_batch_us", "own_share", "run_s")}
               for side in ("quiet", "full")}
    result = {"benchmark": "quiet_steps_ab", "command": "python benchmarks/quiet_steps_ab.py "
              + " ".join(argv if argv is not None else sys.argv[1:]), "date": time.strftime("%Y-%m-%d %H:%M"),
              "steps": args.steps, "summary": summary, "runs": runs}
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
