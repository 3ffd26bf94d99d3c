"""DeepSpeed engine workloads for the ETA protocol (issue 39): a raw loop with `attach()`, one CPU process.

`HELD_OUT` were written for the held-out split; `DEVELOPMENT` (a CNN, a GRU with accumulation, an MLP with dropout)
joined the development split on 2026-12-06, so that each split has DeepSpeed fits (`eta_splits.py`).

Each is a hand-written ``engine(x)`` / ``engine.backward`` / ``engine.step`` loop (gloo, one rank, no C++ JIT
builds: `integrations.deepspeed_cpu`) sized for 20-60 s on one CPU thread at ``scale=1``. `run_engine` returns
what `hf_eta_accuracy.eta_row` reads; its wall time runs from ``attach()`` to the end the user sees: the loop's
last step, the evaluation and checkpoint the schedule puts after it, and ``prenet.finish()`` returning.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from benchmarks.hf_workloads import bar_remaining_s
from benchmarks.loop_workloads import _class_batch, _regression_batch, evaluate
from examples.plain_loop import Regressor as EncoderRegressor


class LSTMClassifier(nn.Module):
    """One LSTM layer (hidden 128) over 32 steps of 32 features, then a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(32, 128, batch_first=True)
        self.head = nn.Linear(128, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm(x)[0][:, -1])


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(256, 768), nn.LayerNorm(768), nn.ReLU(inplace=True), nn.Linear(768, 768),
                         nn.ReLU(inplace=True), nn.Linear(768, 1))


def ds_mlp_zero2_accumulate(scale: float) -> dict[str, Any]:
    """MLP regressor, ZeRO 2, gradient accumulation 2, 500 steps, evaluation (20 batches) every 125, a checkpoint at 250."""
    steps = max(8, int(500 * scale))
    return dict(model=_mlp(), zero=2, accumulate=2, steps=steps, eval_every=max(1, steps // 4), eval_batches=20,
                checkpoint_every=max(1, steps // 2), make_batch=lambda g: _mlp_batch(g, 32),
                loss=lambda out, y: nn.functional.mse_loss(out, y))


def ds_transformer_zero1(scale: float) -> dict[str, Any]:
    """Transformer-encoder regressor (2 layers x 64 over 32 tokens), ZeRO 1, batch 16, 900 steps, evaluation every 300."""
    steps = max(8, int(900 * scale))
    return dict(model=EncoderRegressor(), zero=1, accumulate=1, steps=steps, eval_every=max(1, steps // 3),
                eval_batches=15, checkpoint_every=None, make_batch=lambda g: _regression_batch(g, 16, 32, 64),
                loss=lambda out, y: nn.functional.mse_loss(out, y))


def ds_lstm_zero0(scale: float) -> dict[str, Any]:
    """LSTM classifier, ZeRO 0, batch 32, 600 steps, evaluation (10 batches) every 200, no checkpoint."""
    steps = max(8, int(600 * scale))
    return dict(model=LSTMClassifier(), zero=0, accumulate=1, steps=steps, eval_every=max(1, steps // 3),
                eval_batches=10, checkpoint_every=None, make_batch=lambda g: _class_batch(g, 32, 32, 32),
                loss=lambda out, y: nn.functional.cross_entropy(out, y))


class SmallCNN(nn.Module):
    """Two 3x3 convolutions (16, 32 channels) with BatchNorm and pooling over 32x32 images, then a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


class GRUClassifier(nn.Module):
    """Two GRU layers (hidden 64) over 24 steps of 16 features, then a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(16, 64, num_layers=2, batch_first=True)
        self.head = nn.Linear(64, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.gru(x)[0][:, -1])


def ds_cnn_zero0_checkpoints(scale: float) -> dict[str, Any]:
    """Small CNN classifier on 32x32 images, ZeRO 0, batch 32, 1,000 steps, evaluation (10 batches) every 250, a
    checkpoint every 500."""
    steps = max(8, int(1_000 * scale))
    return dict(model=SmallCNN(), zero=0, accumulate=1, steps=steps, eval_every=max(1, steps // 4), eval_batches=10,
                checkpoint_every=max(1, steps // 2), make_batch=lambda g: _image_batch(g, 32),
                loss=lambda out, y: nn.functional.cross_entropy(out, y))


def ds_gru_zero1_accumulate(scale: float) -> dict[str, Any]:
    """GRU classifier, ZeRO 1, micro-batch 16 with gradient accumulation 4, 600 steps, evaluation every 200."""
    steps = max(8, int(600 * scale))
    return dict(model=GRUClassifier(), zero=1, accumulate=4, steps=steps, eval_every=max(1, steps // 3),
                eval_batches=10, checkpoint_every=None, make_batch=lambda g: _class_batch(g, 16, 24, 16),
                loss=lambda out, y: nn.functional.cross_entropy(out, y))


def ds_mlp_dropout_zero2(scale: float) -> dict[str, Any]:
    """MLP regressor with dropout, ZeRO 2, batch 64, 2,400 steps, evaluation (25 batches) every 800, a checkpoint at
    the end."""
    steps = max(8, int(2_400 * scale))
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Dropout(0.1), nn.Linear(512, 512), nn.GELU(),
                          nn.Dropout(0.1), nn.Linear(512, 1))
    return dict(model=model, zero=2, accumulate=1, steps=steps, eval_every=max(1, steps // 3), eval_batches=25,
                checkpoint_every=steps, make_batch=lambda g: _mlp_batch(g, 64),
                loss=lambda out, y: nn.functional.mse_loss(out, y))


def _mlp_batch(generator: torch.Generator, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(batch, 256, generator=generator)
    return x, x[:, :8].sum(dim=1, keepdim=True)


def _image_batch(generator: torch.Generator, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch, 3, 32, 32, generator=generator), torch.randint(0, 10, (batch,), generator=generator)


HELD_OUT: dict[str, Callable[[float], dict[str, Any]]] = {
    "ds_mlp_zero2_accumulate": ds_mlp_zero2_accumulate,
    "ds_transformer_zero1": ds_transformer_zero1,
    "ds_lstm_zero0": ds_lstm_zero0,
}
DEVELOPMENT: dict[str, Callable[[float], dict[str, Any]]] = {
    "ds_cnn_zero0_checkpoints": ds_cnn_zero0_checkpoints,
    "ds_gru_zero1_accumulate": ds_gru_zero1_accumulate,
    "ds_mlp_dropout_zero2": ds_mlp_dropout_zero2,
}
WORKLOADS: dict[str, Callable[[float], dict[str, Any]]] = {**HELD_OUT, **DEVELOPMENT}


def _config(spec: dict[str, Any], micro_batch: int) -> dict[str, Any]:
    return {"train_micro_batch_size_per_gpu": micro_batch, "gradient_accumulation_steps": spec["accumulate"],
            # torch_adam: PyTorch's AdamW, no FusedAdam JIT build
            "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
            "zero_optimization": {"stage": spec["zero"]}, "steps_per_print": 10**9}


def build_engine(name: str, scale: float = 1.0) -> tuple[Any, dict[str, Any], torch.Generator]:
    """One workload's engine on a single-process gloo group (seeded), its spec and its training batches' generator
    (one batch already drawn, to read the micro-batch)."""
    from integrations.deepspeed_cpu import init_single_process_cpu

    init_single_process_cpu()
    import deepspeed

    torch.manual_seed(0)
    spec = WORKLOADS[name](scale)
    train = torch.Generator().manual_seed(1)
    micro = spec["make_batch"](train)[0].shape[0]
    model = spec["model"]
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=_config(spec, micro))
    return engine, spec, train


def run_engine(name: str, *, with_prenet: bool, out_dir: str, scale: float = 1.0,
               record_bar: bool = False) -> dict[str, Any]:
    """Run one workload's DeepSpeed loop; return its wall time (attach to finish), the report and a tqdm bar's ETAs."""
    from tqdm import tqdm

    engine, spec, train = build_engine(name, scale)
    from integrations.deepspeed import attach

    out = Path(out_dir) / f"{name}-{int(with_prenet)}"
    evaluation = torch.Generator().manual_seed(2)
    steps, eval_every, ckpt_every = spec["steps"], spec["eval_every"], spec["checkpoint_every"]
    points: dict[int, tuple[float, float | None]] = {}
    start = time.perf_counter()
    prenet = (attach(engine, total_steps=steps, eval_every=eval_every, eval_batches=spec["eval_batches"],
                     checkpoint_every=ckpt_every, report_path=out / "prenet_report.json", print_report=False)
              if with_prenet else None)
    bar = tqdm(total=steps, file=open(os.devnull, "w")) if record_bar else None  # noqa: SIM115 - closed below
    while engine.global_steps < steps:
        x, y = spec["make_batch"](train)
        engine.backward(spec["loss"](engine(x), y))
        before = engine.global_steps
        engine.step()
        if engine.global_steps == before:  # inside an accumulation cycle
            continue
        step = engine.global_steps
        if bar is not None:
            bar.update(1)
            points[step] = (time.perf_counter() - start, bar_remaining_s(bar))
        if step % eval_every == 0:
            evaluate(prenet, engine, spec, evaluation)
        if ckpt_every and step % ckpt_every == 0:
            engine.save_checkpoint(str(out / "checkpoints"), tag=f"step{step}")
    report = prenet.finish() if prenet is not None else None
    fit_s = time.perf_counter() - start
    if bar is not None:
        sink = bar.fp
        bar.close()
        sink.close()
    return {"fit_s": fit_s, "report": report, "bar": points, "steps": engine.global_steps}
