"""A `Tracker`'s per-step cost with its quiet steps kept and replayed (`session.quiet_steps`), against every step
taking the full path: the same loop alternating in one process.

    python benchmarks/quiet_steps_ab.py [--rounds 4] [--steps 1500] [--json benchmarks/results/quiet_steps_ab.json]
    python benchmarks/quiet_steps_ab.py --lightning [--rounds 3] [--json ...]
    python benchmarks/quiet_steps_ab.py --hf [--rounds 3] [--json ...]
    python benchmarks/quiet_steps_ab.py --deepspeed [--rounds 3] [--json ...]

The loop trains the examples' transformer-encoder regressor (batch 16, ~10 ms a step on one thread, html off),
`tracker.step()` after each optimizer step; each run times every `step()` call. Reported per run: the mean
`step()` after its first 300 steps (the window and the first prediction are over), PreNeT's own time per batch
and its share of the run (`actual.own_time`), the run's wall time. The two sides alternate, the order flipping
each round. ``--lightning``: `overhead.py`'s workload (`lstm_val_every_epoch`, two of its eight epochs) with
`PreNeTCallback` kept quiet, with every batch end full, and without PreNeT, in turn: the median interval between
two batch ends after the first 60 (an independent callback's clock, as `overhead.py` reads it), PreNeT's own time
per batch, the fit's wall time. ``--hf``: the same three ways on a `Trainer` (`hf_workloads`' GPT-2 causal LM without
accumulation, 600 steps), the interval between two step ends read by a callback called before PreNeT's.
``--deepspeed``: the same three ways on a raw DeepSpeed loop with `attach()` (an LSTM, ZeRO 0, no accumulation,
1,500 steps). Nothing is asserted: it measures.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Callable

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402

STEADY_FROM = 300
HF_SCALE = 0.4   # the Trainer workload's length: 600 steps, evaluation every 120, a checkpoint every 200
DS_SCALE = 2.5   # the DeepSpeed workload's length: 1,500 steps


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


def lightning_fit(mode: str, out: Path) -> dict:
    """One fit of `overhead.py`'s workload, two epochs: ``mode`` "quiet", "full" or "none" (without PreNeT)."""
    import lightning.pytorch as pl

    from benchmarks.workloads import WORKLOADS, build_trainer
    from prenet_callbacks import PreNeTCallback

    class BatchEnds(pl.Callback):
        def __init__(self) -> None:
            self.last: float | None = None
            self.intervals: list[float] = []

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            now = time.perf_counter()
            if self.last is not None and batch_idx > 0:
                self.intervals.append(now - self.last)
            self.last = now

    class Switched(PreNeTCallback):
        def on_train_start(self, trainer, pl_module) -> None:
            super().on_train_start(trainer, pl_module)
            self.session.quiet.enabled = mode == "quiet"

    pl.seed_everything(0, verbose=False)
    module, train, val, settings = WORKLOADS["lstm_val_every_epoch"]()
    ends = BatchEnds()
    prenet = None if mode == "none" else Switched(report_path=out / mode / "report.json", print_report=False)
    trainer = build_trainer(str(out / mode), [ends] + ([prenet] if prenet else []), dict(settings, max_epochs=2))
    start = time.perf_counter()
    trainer.fit(module, train, val)
    own = prenet.report.actual["own_time"] if prenet else {}
    return {"mode": mode, "median_step_ms": round(statistics.median(ends.intervals[60:]) * 1e3, 3),
            "own_per_batch_us": own.get("per_batch_us"), "fit_s": round(time.perf_counter() - start, 3)}


def trainer_fit(mode: str, out: Path, scale: float = HF_SCALE) -> dict:
    """One `Trainer` run of `hf_workloads`' GPT-2 causal LM (no accumulation) at ``scale``: ``mode`` as
    `lightning_fit`'s."""
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from benchmarks.hf_workloads import causal_lm_eval_steps_checkpoints
    from prenet_callbacks import PreNeTTrainerCallback

    class StepEnds(TrainerCallback):   # called before PreNeT's (the Trainer calls its callbacks in order)
        def __init__(self) -> None:
            self.last: float | None = None
            self.intervals: list[float] = []

        def on_step_end(self, args, state, control, **kwargs) -> None:
            now = time.perf_counter()
            if self.last is not None:
                self.intervals.append(now - self.last)
            self.last = now

    class Switched(PreNeTTrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs) -> None:
            super().on_train_begin(args, state, control, **kwargs)
            self.session.quiet.enabled = self.session.quiet.enabled and mode == "quiet"

    torch.manual_seed(0)
    model, train, evaluation, settings = causal_lm_eval_steps_checkpoints(scale)
    args = TrainingArguments(output_dir=str(out / f"hf-{mode}"), report_to="none", use_cpu=True, seed=0,
                             learning_rate=5e-4, disable_tqdm=True, dataloader_num_workers=0, **settings)
    ends = StepEnds()
    prenet = None if mode == "none" else Switched(report_path=out / f"hf-{mode}" / "report.json", print_report=False)
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=evaluation,
                      callbacks=[ends] + ([prenet] if prenet else []))
    start = time.perf_counter()
    trainer.train()
    own = prenet.report.actual["own_time"] if prenet else {}
    return {"mode": mode, "median_step_ms": round(statistics.median(ends.intervals[60:]) * 1e3, 3),
            "own_per_batch_us": own.get("per_batch_us"), "fit_s": round(time.perf_counter() - start, 3)}


def deepspeed_fit(mode: str, out: Path, scale: float = DS_SCALE) -> dict:
    """One raw DeepSpeed loop with `attach()` (`deepspeed_workloads`' LSTM, ZeRO 0, no accumulation) at ``scale``:
    ``mode`` as `lightning_fit`'s. The interval between two optimizer steps' ends is read right after
    ``engine.step()`` returns, PreNeT's wrapper included."""
    from benchmarks.deepspeed_workloads import build_engine

    engine, spec, train = build_engine("ds_lstm_zero0", scale)
    from integrations.deepspeed import attach

    start = time.perf_counter()
    prenet = None if mode == "none" else attach(engine, total_steps=spec["steps"], report_path=out / f"ds-{mode}.json",
                                                 print_report=False)
    if prenet is not None:
        prenet.session.quiet.enabled = prenet.session.quiet.enabled and mode == "quiet"
    ends = []
    while engine.global_steps < spec["steps"]:
        x, y = spec["make_batch"](train)
        engine.backward(spec["loss"](engine(x), y))
        engine.step()
        ends.append(time.perf_counter())
    report = prenet.finish() if prenet is not None else None
    own = report.actual["own_time"] if report is not None else {}
    intervals = [b - a for a, b in zip(ends, ends[1:])]
    return {"mode": mode, "median_step_ms": round(statistics.median(intervals[60:]) * 1e3, 3),
            "own_per_batch_us": own.get("per_batch_us"), "fit_s": round(time.perf_counter() - start, 3)}


def quiet_process(out: str) -> Path:
    """This process as these A/B benchmarks run: warnings off, one torch thread; their runs' folder, made."""
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def three_way(fit: Callable[[str, Path], dict], rounds: int, out: Path,
              modes: tuple[str, str, str] = ("quiet", "full", "none")) -> dict:
    """A discarded warm-up run of the last mode (without PreNeT: lazy imports, the allocator), then ``rounds`` x the
    three ``modes``, the order rotating round by round (each mode first, middle and last in turn). Per mode, the
    medians over its runs of every figure its runs all hold."""
    fit(modes[2], out)
    orders = [(0, 1, 2), (2, 1, 0), (1, 0, 2)]
    runs = []
    for k in range(rounds):
        for index in orders[k % len(orders)]:
            runs.append(fit(modes[index], out))
            print(runs[-1], flush=True)
    summary = {}
    for mode in modes:
        mine = [r for r in runs if r["mode"] == mode]
        summary[mode] = {key: statistics.median(r[key] for r in mine) for key in mine[0]
                         if key != "mode" and all(isinstance(r.get(key), (int, float)) for r in mine)}
    return {"summary": summary, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--out", default="/tmp/prenet-quiet-steps")
    parser.add_argument("--lightning", action="store_true", help="overhead.py's Lightning workload instead")
    parser.add_argument("--hf", action="store_true", help="a Hugging Face Trainer workload instead (needs the extra)")
    parser.add_argument("--deepspeed", action="store_true", help="a raw DeepSpeed loop with attach() instead")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/quiet_steps_ab.json"))
    args = parser.parse_args(argv)
    out = quiet_process(args.out)
    if args.lightning or args.hf or args.deepspeed:
        workload, fit = (("lstm_val_every_epoch (2 epochs)", lightning_fit) if args.lightning else
                         (f"causal_lm_eval_steps_checkpoints (scale {HF_SCALE})", trainer_fit) if args.hf else
                         (f"ds_lstm_zero0 (scale {DS_SCALE})", deepspeed_fit))
        result = write_result(args.json, "quiet_steps_ab", argv, workload=workload, **three_way(fit, args.rounds, out))
        print(json.dumps(result["summary"], indent=1))
        return 0
    runs = []
    for k in range(args.rounds):
        for quiet in ((True, False) if k % 2 == 0 else (False, True)):
            runs.append(one_run(quiet, args.steps, out))
            print(runs[-1], flush=True)
    summary = {side: {key: statistics.median(r[key] for r in runs if r["quiet"] is (side == "quiet"))
                      for key in ("step_mean_us", "step_median_us", "own_per_batch_us", "own_share", "run_s")}
               for side in ("quiet", "full")}
    write_result(args.json, "quiet_steps_ab", argv, steps=args.steps, summary=summary, runs=runs)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
