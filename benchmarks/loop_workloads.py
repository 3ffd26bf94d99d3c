"""Plain-loop workloads for the `Tracker` ETA-accuracy and overhead benchmarks (CPU, synthetic data).

Each is a hand-written training loop sized for 1-2 minutes on one CPU thread at ``scale=1`` (the DataLoader
loops, whose epochs re-create their iterators, for 10-20 s).
`run_loop` runs one with or without a `Tracker` and, when asked, records the ETA a tqdm progress
bar over the optimizer steps would show after every step (tqdm's own formula, with its smoothing).
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Callable, Generator, Iterator

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from benchmarks.hf_workloads import bar_remaining_s
from examples.plain_loop import Regressor as EncoderRegressor  # the example's model


class SequenceClassifier(nn.Module):
    """A two-layer LSTM over 48 steps of 32 features, then a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(32, 96, num_layers=2, batch_first=True)
        self.head = nn.Linear(96, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm(x)[0][:, -1])


def encoder_eval_checkpoints(scale: float) -> dict[str, Any]:
    """Transformer-encoder regressor, 2,500 steps, evaluation (25 batches) every 500 steps, a checkpoint every 1,000."""
    steps = max(10, int(2_500 * scale))
    return dict(model=EncoderRegressor(), make_batch=lambda g: _regression_batch(g, 16, 32, 64), steps=steps,
                eval_every=max(1, steps // 5), eval_batches=25, checkpoint_every=max(1, steps * 2 // 5),
                accumulate=1, loss=lambda out, y: nn.functional.mse_loss(out, y))


def lstm_accelerate_accumulate(scale: float) -> dict[str, Any]:
    """LSTM classifier under accelerate, gradient accumulation 2, 2,000 steps, evaluation (20 batches) every 500."""
    steps = max(10, int(2_000 * scale))
    return dict(model=SequenceClassifier(), make_batch=lambda g: _class_batch(g, 16, 48, 32), steps=steps,
                eval_every=max(1, steps // 4), eval_batches=20, checkpoint_every=None, accumulate=2,
                loss=lambda out, y: nn.functional.cross_entropy(out, y), accelerate=True)


def encoder_loader_epochs(scale: float, workers: int = 0) -> dict[str, Any]:
    """Transformer-encoder regressor over a shuffled DataLoader (batch 16), 6 epochs of 150 steps, evaluation on a
    loader of 12 batches of 64 every 300 steps, a checkpoint every 450: the loop re-creates its iterator each epoch."""
    samples = max(16, int(16 * 150 * scale))
    train = _loader(_regression_set(samples, 32, 64, seed=1), 16, shuffle=True, workers=workers)
    evaluation = _loader(_regression_set(64 * 12, 32, 64, seed=2), 64, shuffle=False, workers=workers)
    steps = len(train) * 6
    return dict(model=EncoderRegressor(), train_loader=train, eval_loader=evaluation, steps=steps,
                eval_every=max(1, steps // 3), eval_batches=len(evaluation), checkpoint_every=max(1, steps // 2),
                accumulate=1, loss=lambda out, y: nn.functional.mse_loss(out, y))


def encoder_loader_epochs_workers(scale: float) -> dict[str, Any]:
    """The same loop with 2-worker DataLoaders: each epoch and each evaluation spawns its workers afresh."""
    return encoder_loader_epochs(scale, workers=2)


def _regression_set(samples: int, tokens: int, width: int, *, seed: int) -> TensorDataset:
    x, y = _regression_batch(torch.Generator().manual_seed(seed), samples, tokens, width)
    return TensorDataset(x, y)


def _loader(data: TensorDataset, batch: int, *, shuffle: bool, workers: int) -> DataLoader:
    return DataLoader(data, batch_size=batch, shuffle=shuffle, num_workers=workers,
                      generator=torch.Generator().manual_seed(3) if shuffle else None)


def _regression_batch(generator: torch.Generator, batch: int, tokens: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(batch, tokens, width, generator=generator)
    return x, x.mean(dim=1)[:, :1] * 3


def _class_batch(generator: torch.Generator, batch: int, steps: int, features: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(batch, steps, features, generator=generator)
    return x, (x[:, :, 0].sum(dim=1) > 0).long() + 2 * (x[:, :, 1].sum(dim=1) > 0).long()


WORKLOADS: dict[str, Callable[[float], dict[str, Any]]] = {
    "loop_encoder_eval_checkpoints": encoder_eval_checkpoints,
    "loop_lstm_accelerate_accumulate": lstm_accelerate_accumulate,
    "loop_encoder_loader_epochs": encoder_loader_epochs,
    "loop_encoder_loader_epochs_workers": encoder_loader_epochs_workers,
}


def run_loop(name: str, *, with_prenet: bool, out_dir: str, scale: float = 1.0, record_bar: bool = False) -> dict[str, Any]:
    """Run one workload's loop; return its wall time, the report and the bar's ETAs per step."""
    steps = loop_steps(name, with_prenet=with_prenet, out_dir=out_dir, scale=scale, record_bar=record_bar)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def loop_steps(name: str, *, with_prenet: bool, out_dir: str, scale: float = 1.0,
               record_bar: bool = False) -> Generator[int, None, dict[str, Any]]:
    """`run_loop` one optimizer step at a time: yields the step count after each step (its evaluation and save
    included); returns `run_loop`'s result. Lets a benchmark interleave two loops (`interleaved_overhead.py`)."""
    from tqdm import tqdm

    from prenet_callbacks import Tracker

    from benchmarks.heldout_workloads import LOOP as HELD_OUT

    torch.manual_seed(0)
    spec = (WORKLOADS.get(name) or HELD_OUT[name])(scale)
    out = Path(out_dir) / f"{name}-{int(with_prenet)}"
    out.mkdir(parents=True, exist_ok=True)
    model = spec["model"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    accelerator = None
    if spec.get("accelerate"):
        from accelerate import Accelerator

        accelerator = Accelerator(cpu=True, gradient_accumulation_steps=spec["accumulate"])
        model, optimizer = accelerator.prepare(model, optimizer)
    train, evaluation = torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)
    steps, eval_every, checkpoint_every = spec["steps"], spec["eval_every"], spec["checkpoint_every"]
    points: dict[int, tuple[float, float | None]] = {}

    start = time.perf_counter()
    tracker = (Tracker(total_steps=steps, model=model, optimizer=optimizer, accelerator=accelerator,
                       eval_every=eval_every, eval_batches=spec["eval_batches"], checkpoint_every=checkpoint_every,
                       report_path=out / "prenet_report.json", print_report=False)
               if with_prenet else None)
    bar = tqdm(total=steps, file=open(os.devnull, "w")) if record_bar else None  # noqa: SIM115 - closed below
    step = 0
    train_batches = _epochs(spec["train_loader"]) if "train_loader" in spec else _endless(spec["make_batch"], train)
    for x, y in train_batches:
        if step >= steps:
            break
        cycle = accelerator.accumulate(model) if accelerator is not None else contextlib.nullcontext()
        with cycle:
            loss = spec["loss"](model(x), y)
            accelerator.backward(loss) if accelerator is not None else loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        if tracker is not None:
            tracker.step()
        if accelerator is not None and not accelerator.sync_gradients:
            continue
        step += 1
        if bar is not None:
            bar.update(1)
            points[step] = (time.perf_counter() - start, bar_remaining_s(bar))
        if step % eval_every == 0:
            evaluate(tracker, model, spec, evaluation)
        if checkpoint_every and step % checkpoint_every == 0:
            with tracker.checkpoint() if tracker else contextlib.nullcontext():
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, out / "checkpoint.pt")
        if step < steps:
            yield step
    report = tracker.close() if tracker is not None else None
    fit_s = time.perf_counter() - start
    if bar is not None:
        sink = bar.fp
        bar.close()
        sink.close()
    return {"fit_s": fit_s, "report": report, "bar": points, "steps": step}


def evaluate(tracker: Any, model: Any, spec: dict[str, Any], evaluation: torch.Generator) -> None:
    """One evaluation pass of a workload's model (a module or a DeepSpeed engine), timed as validation by
    ``tracker`` (a `Tracker` or DeepSpeed handle) when there is one."""
    with tracker.validation() if tracker else contextlib.nullcontext(), torch.no_grad():
        model.eval()
        batches = (spec["eval_loader"] if "eval_loader" in spec
                   else (spec["make_batch"](evaluation) for _ in range(spec["eval_batches"])))
        for x, y in batches:
            spec["loss"](model(x), y).item()
        model.train()


def _epochs(loader: DataLoader) -> Iterator[Any]:
    """Epoch after epoch over a loader, a new iterator each (what ``for epoch ...: for batch in loader`` does)."""
    while True:
        yield from loader


def _endless(make_batch: Callable[[torch.Generator], Any], generator: torch.Generator) -> Iterator[Any]:
    while True:
        yield make_batch(generator)
