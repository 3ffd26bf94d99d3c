"""What `PreNeTCallback` adds to each steady Lightning batch, PreNeT's own time and Lightning's work for it, on a
step so small (about a millisecond) that per-batch costs show.

    python benchmarks/lightning_batch_cost.py [--rounds 4] [--json benchmarks/results/issue39_overhead/lightning_batch_cost.json]

Three ways in one process, the order rotating round by round (`quiet_steps_ab.three_way`): without PreNeT
("none"); with a callback that does nothing ("empty": Lightning calls every hook of every callback, each inside its
profiler's context, whether the callback defines it or not); with `PreNeTCallback` at its defaults, the report not
printed ("prenet"). The model is a two-layer MLP at batch size 1 (1,500 batches an epoch, two epochs,
validation each epoch, a CSV logger every 50 steps, no checkpoints). Per run: the median interval between two
batch ends from the 300th on (read by a callback placed first), PreNeT's own time per batch (``actual.own_time``,
its hooks' bodies) and the fit's wall time. "empty" less "none" is what any callback costs a batch; "prenet" less
"empty" less PreNeT's own time is what else Lightning spends on it (its three logged ``prenet/*`` metrics ride in
every later batch's result collection). Nothing is asserted: it measures.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.quiet_steps_ab import quiet_process, three_way  # noqa: E402
from benchmarks.result_file import write_result  # noqa: E402

STEADY_FROM = 300
LOG_EVERY = 50


def tiny_fit(mode: str, out: Path) -> dict:
    """One fit: ``mode`` "none", "empty" or "prenet"."""
    import time

    import lightning.pytorch as pl
    from torch.utils.data import DataLoader, TensorDataset

    from prenet_callbacks import PreNeTCallback

    class TinyRegressor(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.net(x), y)
            self.log("loss", loss)
            return loss

        def validation_step(self, batch, batch_idx) -> None:
            x, y = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

    class BatchEnds(pl.Callback):
        def __init__(self) -> None:
            self.ends: list[float] = []

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            self.ends.append(time.perf_counter())

    pl.seed_everything(0, verbose=False)
    generator = torch.Generator().manual_seed(0)
    train = DataLoader(TensorDataset(torch.randn(1500, 8, generator=generator), torch.randn(1500, 1, generator=generator)),
                       batch_size=1)
    val = DataLoader(TensorDataset(torch.randn(64, 8, generator=generator), torch.randn(64, 1, generator=generator)),
                     batch_size=16)
    ends = BatchEnds()
    extra = {"none": [], "empty": [pl.Callback()],
             "prenet": [PreNeTCallback(report_path=out / mode / "report.json", print_report=False)]}[mode]
    trainer = pl.Trainer(max_epochs=2, callbacks=[ends] + extra, accelerator="cpu", devices=1, enable_progress_bar=False,
                         enable_model_summary=False, enable_checkpointing=False, log_every_n_steps=LOG_EVERY,
                         logger=pl.loggers.CSVLogger(str(out / mode)), default_root_dir=str(out / mode))
    start = time.perf_counter()
    trainer.fit(TinyRegressor(), train, val)
    fit_s = time.perf_counter() - start
    per_epoch = len(train)
    # intervals within an epoch only (the one across an epoch's end holds the validation run)
    intervals = [b - a for i, (a, b) in enumerate(zip(ends.ends, ends.ends[1:])) if (i + 1) % per_epoch]
    own = extra[0].report.actual["own_time"] if mode == "prenet" else {}
    return {"mode": mode, "median_step_us": round(statistics.median(intervals[STEADY_FROM:]) * 1e6, 2),
            "own_per_batch_us": own.get("per_batch_us"), "fit_s": round(fit_s, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--out", default="/tmp/prenet-lightning-batch-cost")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/issue39_overhead/lightning_batch_cost.json"))
    args = parser.parse_args(argv)
    out = quiet_process(args.out)
    measured = three_way(tiny_fit, args.rounds, out, modes=("prenet", "empty", "none"))
    summary = measured["summary"]
    step_us = {mode: summary[mode]["median_step_us"] for mode in summary}
    excess = {"prenet": round(step_us["prenet"] - step_us["none"], 2), "empty": round(step_us["empty"] - step_us["none"], 2),
              "prenet_beyond_a_callback_and_own_time": round(step_us["prenet"] - step_us["empty"]
                                                             - summary["prenet"]["own_per_batch_us"], 2)}
    # the same differences within each round (its three runs back to back), whose median the machine's drift moves less
    rounds = [{r["mode"]: r for r in measured["runs"][k:k + 3]} for k in range(0, len(measured["runs"]), 3)]
    for mode in ("prenet", "empty"):
        excess[f"{mode}_within_rounds"] = round(statistics.median(
            r[mode]["median_step_us"] - r["none"]["median_step_us"] for r in rounds), 2)
    result = write_result(args.json, "lightning_batch_cost", argv, workload="two-layer MLP, batch 1, 2 x 1,500 batches",
                          excess_us=excess, **measured)
    print(json.dumps({"summary": result["summary"], "excess_us": excess}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
