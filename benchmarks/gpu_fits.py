"""Real Lightning fits for the GPU acceptance run, sized to last about ``seconds`` each.

Three set-ups, as issue 11 asks: a CNN in 32-true, a transformer in bf16-mixed, and one with
gradient accumulation and step checkpoints. Each is first timed for a few steps without PreNeT
(to size the fit), then run without and with `PreNeTCallback`, in alternating order, so that the
callback's overhead is the difference of two fits of the same work.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import lightning.pytorch as pl

from benchmarks.gpu_models import ResNet, TinyGPT


class Trainable(pl.LightningModule):
    """A network, its loss, and AdamW."""

    def __init__(self, net: nn.Module, loss: Callable[[Any, Any], torch.Tensor]) -> None:
        super().__init__()
        self.net, self.loss = net, loss

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return self.loss(self.net(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", self.loss(self.net(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


def _classify(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out.float(), y)


def _next_token(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out.float().flatten(0, 1), y.flatten())


@dataclass
class FitSpec:
    """One fit: how to build the module and data, and the trainer settings."""

    name: str
    build: Callable[[bool], tuple[pl.LightningModule, TensorDataset, TensorDataset, int]]  # (smoke) -> module, train, val, batch
    precision: str
    accumulate: int = 1
    checkpoint_every_steps: int | None = None


def _cnn(smoke: bool):
    size, n = (32, 128) if smoke else (64, 8192)
    net = ResNet(layers=(1, 1, 1, 1), classes=100, base=8 if smoke else 64)
    g = torch.Generator().manual_seed(0)
    train = TensorDataset(torch.randn(n, 3, size, size, generator=g), torch.randint(0, 100, (n,), generator=g))
    val = TensorDataset(torch.randn(n // 8, 3, size, size, generator=g), torch.randint(0, 100, (n // 8,), generator=g))
    return Trainable(net, _classify), train, val, 8 if smoke else 128


def _tokens(n: int, seq: int, vocab: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (n, seq + 1), generator=g)
    return TensorDataset(ids[:, :-1], ids[:, 1:])


def _transformer(smoke: bool):
    if smoke:
        net, seq, vocab, n = TinyGPT(vocab=256, dim=32, heads=2, layers=1, seq=16), 16, 256, 128
    else:
        net, seq, vocab, n = TinyGPT(vocab=8192, dim=512, heads=8, layers=6, seq=256), 256, 8192, 8192
    return Trainable(net, _next_token), _tokens(n, seq, vocab, 0), _tokens(n // 8, seq, vocab, 1), 4 if smoke else 32


FITS = [
    FitSpec("cnn_32_true", _cnn, "32-true"),
    FitSpec("transformer_bf16_mixed", _transformer, "bf16-mixed"),
    FitSpec("transformer_accumulate_step_checkpoints", _transformer, "32-true", accumulate=4, checkpoint_every_steps=25),
]


def probe_batch_s(spec: FitSpec, device: torch.device, smoke: bool, steps: int = 12) -> float:
    """Seconds per training batch of this set-up, from a few timed steps outside Lightning."""
    module, train, _, batch = spec.build(smoke)
    module = module.to(device)
    optimizer = module.configure_optimizers()
    loader = DataLoader(train, batch_size=batch, shuffle=True)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=spec.precision.startswith("bf16"))
    times = []
    for i, (x, y) in enumerate(loader):
        if i >= steps + 3:
            break
        _sync(device)
        start = time.perf_counter()
        with autocast:
            loss = module.training_step((x.to(device), y.to(device)), i)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        _sync(device)
        if i >= 3:
            times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_fit(spec: FitSpec, *, with_callback: bool, epochs: int, out: Path, smoke: bool, accelerator: str) -> dict:
    """One fit; returns its wall time and, with the callback, what PreNeT predicted and measured."""
    from prenet_callbacks import PreNeTCallback

    pl.seed_everything(0, verbose=False)
    module, train, val, batch = spec.build(smoke)
    pace = _Pace()
    callbacks: list[Any] = [pace]
    prenet = None
    if with_callback:
        prenet = PreNeTCallback(report_path=out / f"{spec.name}.json", print_report=False, targets=["A100", "H100"],
                                html=False)
        callbacks.append(prenet)
    if spec.checkpoint_every_steps:
        callbacks.append(pl.callbacks.ModelCheckpoint(dirpath=out / f"{spec.name}-ckpt", save_top_k=-1,
                                                      every_n_train_steps=spec.checkpoint_every_steps))
    trainer = pl.Trainer(accelerator=accelerator, devices=1, precision=spec.precision, max_epochs=epochs,
                         accumulate_grad_batches=spec.accumulate, callbacks=callbacks, logger=False,
                         enable_checkpointing=bool(spec.checkpoint_every_steps), enable_progress_bar=False,
                         enable_model_summary=False, default_root_dir=str(out), num_sanity_val_steps=2)
    start = time.perf_counter()
    trainer.fit(module, DataLoader(train, batch_size=batch, shuffle=True), DataLoader(val, batch_size=2 * batch))
    wall = time.perf_counter() - start
    row: dict[str, Any] = {"with_callback": with_callback, "wall_s": round(wall, 3), "steps": trainer.global_step,
                           "pace_ms": pace.chunk_medians_ms()}
    if prenet is not None:
        report = prenet.report
        actual = report.actual or {}
        first = report.first_prediction or {}
        measured = report.measured
        row.update({
            "actual_fit_s": actual.get("fit_s"),
            "first_prediction_at_step": first.get("at_step"),
            "first_prediction_s": first.get("predicted_total_s"),
            "first_prediction_error": actual.get("first_prediction_error"),
            # PreNeT's own time (share, per batch): on a GPU its quiet batches keep a device mark only
            "own_time": actual.get("own_time"),
            "band": [first.get("low_s"), first.get("high_s")],
            "coverage": measured.get("coverage"),
            "timing": measured.get("timing"),
            "memory": measured.get("memory"),
            "op_samples": len((measured.get("op_samples") or {}).get("rows") or []),
            "limitations": report.limitations,
            "targets": [{k: t.get(k) for k in ("label", "step_s", "total_s", "speedup", "method")}
                        for t in report.targets],
        })
    return row


class _Pace(pl.Callback):
    """Host time between consecutive training-batch ends, as medians of eight chunks of the fit: a
    cost that grows or comes and goes during a fit shows here, with and without PreNeT alike."""

    def __init__(self) -> None:
        self.ends: list[float] = []

    def on_train_batch_end(self, *args: Any) -> None:
        self.ends.append(time.perf_counter())

    def chunk_medians_ms(self, chunks: int = 8) -> list[float]:
        gaps = [b - a for a, b in zip(self.ends, self.ends[1:])]
        size = max(1, len(gaps) // chunks)
        return [round(sorted(gaps[i:i + size])[len(gaps[i:i + size]) // 2] * 1e3, 3)
                for i in range(0, size * chunks, size) if gaps[i:i + size]]


def sized_epochs(spec: FitSpec, batch_s: float, seconds: float, smoke: bool) -> int:
    """Epochs that make the fit last about ``seconds`` (at least 2, so validation and epochs recur)."""
    _, train, _, batch = spec.build(smoke)
    batches = math.ceil(len(train) / batch)
    return max(2, round(seconds / max(batch_s * batches, 1e-6)))
