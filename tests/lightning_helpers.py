"""Tiny Lightning modules and trainers for tests (each fit well under a second on CPU)."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

import lightning.pytorch as pl


class TinyModule(pl.LightningModule):
    """An MLP with an in-place ReLU; records how many validation runs and saves really happen."""

    def __init__(self, manual: bool = False, fail_at_step: int | None = None) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(inplace=True), nn.Linear(16, 2))
        self.validation_runs = 0
        self.automatic_optimization = not manual
        self.fail_at_step = fail_at_step

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor | None:
        if self.fail_at_step is not None and self.global_step >= self.fail_at_step:
            raise RuntimeError("user code failed")
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        if self.automatic_optimization:
            return loss
        opt_a, opt_b = self.optimizers()
        for opt in (opt_a, opt_b):
            opt.zero_grad()
            self.manual_backward(nn.functional.cross_entropy(self(x), y))
            opt.step()
        return None

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self(x), y))

    def on_validation_end(self) -> None:
        if not self.trainer.sanity_checking:
            self.validation_runs += 1

    def configure_optimizers(self) -> Any:
        if self.automatic_optimization:
            return torch.optim.SGD(self.parameters(), lr=0.1)
        return [torch.optim.SGD(self.net[0].parameters(), lr=0.1), torch.optim.SGD(self.net[2].parameters(), lr=0.1)]


def dataset(n: int, seed: int = 0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, 8, generator=g), torch.randint(0, 2, (n,), generator=g))


def loaders(train_batches: int = 10, val_batches: int = 3, batch_size: int = 4) -> tuple[DataLoader, DataLoader]:
    return (DataLoader(dataset(train_batches * batch_size), batch_size=batch_size),
            DataLoader(dataset(val_batches * batch_size, seed=1), batch_size=batch_size))


class Stream(IterableDataset):
    """An iterable dataset without a length."""

    def __iter__(self):
        g = torch.Generator().manual_seed(0)
        while True:
            yield torch.randn(8, generator=g), torch.randint(0, 2, (), generator=g)


class SaveCounter(pl.Callback):
    """Counts checkpoint files actually written through trainer.save_checkpoint."""

    def __init__(self) -> None:
        self.saves = 0

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        original = trainer.save_checkpoint

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.saves += 1
            return original(*args, **kwargs)

        trainer.save_checkpoint = counting


def trainer(tmp_path, callbacks: list, **kwargs: Any) -> pl.Trainer:
    defaults = dict(default_root_dir=str(tmp_path), enable_progress_bar=False, enable_model_summary=False,
                    logger=False, enable_checkpointing=False, accelerator="cpu", devices=1)
    defaults.update(kwargs)
    return pl.Trainer(callbacks=callbacks, **defaults)


class RecordingLogger(pl.loggers.Logger):
    """Keeps every `log_metrics` call; `prenet_metrics` counts the calls carrying PreNeT's metrics."""

    def __init__(self) -> None:
        super().__init__()
        self.metrics: list[tuple[int | None, dict]] = []

    @property
    def name(self) -> str:
        return "recording"

    @property
    def version(self) -> int:
        return 0

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass

    def log_metrics(self, metrics: dict, step: int | None = None) -> None:
        self.metrics.append((step, dict(metrics)))

    @property
    def prenet_metrics(self) -> int:
        return sum(any(k.startswith("prenet/") for k in m) for _, m in self.metrics)
