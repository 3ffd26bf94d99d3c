"""Real CPU training workloads for the ETA and overhead benchmarks (synthetic data, 1-3 minutes each).

The benchmarks run torch single-threaded (``PRENET_BENCH_THREADS``, default 1): on a 2-core machine
shared with other work, two threads make step times swing with the neighbours' load.

Each workload returns ``(module, train_loader, val_loader, trainer_kwargs)``. Sizes are chosen so
that on a 2-core machine a fit takes one to three minutes.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import lightning.pytorch as pl


class Classifier(pl.LightningModule):
    """Wraps a network as a classifier trained with SGD or AdamW."""

    def __init__(self, net: nn.Module, optimizer: str = "sgd", lr: float = 0.01) -> None:
        super().__init__()
        self.net = net
        self.optimizer_name = optimizer
        self.lr = lr

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        if self.optimizer_name == "adamw":
            return torch.optim.AdamW(self.parameters(), lr=self.lr)
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


class TokenClassifier(nn.Module):
    """A small transformer encoder over token ids, mean-pooled into classes."""

    def __init__(self, vocab: int = 2000, dim: int = 128, heads: int = 4, layers: int = 2, classes: int = 10) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, batch_first=True, dropout=0.1)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


class SequenceClassifier(nn.Module):
    def __init__(self, features: int = 32, hidden: int = 128, classes: int = 10) -> None:
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True, num_layers=2)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm(x)[0][:, -1])


def _cnn() -> nn.Module:
    def block(c_in: int, c_out: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
                             nn.ReLU(inplace=True), nn.MaxPool2d(2))

    return nn.Sequential(block(3, 32), block(32, 64), block(64, 128), nn.Flatten(), nn.Linear(128 * 16, 10))


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def _tensors(shape: tuple[int, ...], n: int, seed: int, integer_high: int | None = None) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, integer_high, (n, *shape), generator=g) if integer_high else torch.randn(n, *shape, generator=g)
    return TensorDataset(x, torch.randint(0, 10, (n,), generator=g))


def cnn_val_every_epoch() -> tuple:
    """CNN, validation and a checkpoint (+ last) every epoch."""
    train = DataLoader(_tensors((3, 32, 32), 6144, 0), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((3, 32, 32), 1024, 1), batch_size=128)
    return Classifier(_cnn()), train, val, dict(max_epochs=8, checkpoint=dict(save_last=True))


def cnn_loader_workers() -> tuple:
    """CNN with a 2-worker DataLoader (workers restart each epoch), validation every other epoch."""
    train = DataLoader(_tensors((3, 32, 32), 4096, 0), batch_size=64, shuffle=True, num_workers=2)
    val = DataLoader(_tensors((3, 32, 32), 1024, 1), batch_size=128, num_workers=2)
    return Classifier(_cnn()), train, val, dict(max_epochs=10, check_val_every_n_epoch=2, checkpoint=dict())


def mlp_accumulate_val_every_n_steps() -> tuple:
    """MLP with gradient accumulation 4, validation every 100 batches, checkpoints every 50 optimizer steps."""
    train = DataLoader(_tensors((784,), 64 * 1000, 0), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((784,), 4096, 1), batch_size=256)
    return (Classifier(_mlp(), optimizer="adamw", lr=1e-3), train, val,
            dict(max_epochs=5, accumulate_grad_batches=4, val_check_interval=100,
                 checkpoint=dict(every_n_train_steps=50, save_top_k=-1)))


def transformer_val_fraction() -> tuple:
    """Small transformer encoder, AdamW, validation four times per epoch, max_steps mid-epoch."""
    train = DataLoader(_tensors((48,), 32 * 700, 0, integer_high=2000), batch_size=32, shuffle=True)
    val = DataLoader(_tensors((48,), 1024, 1, integer_high=2000), batch_size=128)
    return (Classifier(TokenClassifier(), optimizer="adamw", lr=3e-4), train, val,
            dict(max_steps=900, max_epochs=10, val_check_interval=0.25, checkpoint=dict(save_last=True)))


def lstm_val_every_epoch() -> tuple:
    """Two-layer LSTM over sequences, validation every epoch, no checkpoints."""
    train = DataLoader(_tensors((48, 32), 32 * 300, 0), batch_size=32, shuffle=True)
    val = DataLoader(_tensors((48, 32), 1024, 1), batch_size=256)
    return Classifier(SequenceClassifier(), optimizer="adamw", lr=1e-3), train, val, dict(max_epochs=8)


def cnn_big_validation_batches() -> tuple:
    """CNN, validation every epoch on a set as large as a third of the training set, at twice the batch size."""
    train = DataLoader(_tensors((3, 32, 32), 4096, 0), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((3, 32, 32), 1536, 1), batch_size=128)
    return Classifier(_cnn()), train, val, dict(max_epochs=8, checkpoint=dict())


def mlp_validation_every_200() -> tuple:
    """MLP, a large validation set (16k samples at batch 512) every 200 batches, AdamW."""
    train = DataLoader(_tensors((784,), 64 * 1400, 0), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((784,), 16384, 1), batch_size=512)
    return (Classifier(_mlp(), optimizer="adamw", lr=1e-3), train, val,
            dict(max_epochs=4, val_check_interval=200))


def transformer_validation_half_epoch() -> tuple:
    """Small transformer encoder, validation twice per epoch on 4k sequences at batch 64."""
    train = DataLoader(_tensors((48,), 32 * 500, 0, integer_high=2000), batch_size=32, shuffle=True)
    val = DataLoader(_tensors((48,), 4096, 1, integer_high=2000), batch_size=64)
    return (Classifier(TokenClassifier(), optimizer="adamw", lr=3e-4), train, val,
            dict(max_epochs=4, val_check_interval=0.5))


# Fits where validation is 10-30% of the wall time (issue 16: validation estimated before it is measured).
VALIDATION_HEAVY: dict[str, Callable[[], tuple]] = {
    "cnn_big_validation_batches": cnn_big_validation_batches,
    "mlp_validation_every_200": mlp_validation_every_200,
    "transformer_validation_half_epoch": transformer_validation_half_epoch,
}

WORKLOADS: dict[str, Callable[[], tuple]] = {
    "cnn_val_every_epoch": cnn_val_every_epoch,
    "cnn_loader_workers": cnn_loader_workers,
    "mlp_accumulate_val_every_n_steps": mlp_accumulate_val_every_n_steps,
    "transformer_val_fraction": transformer_val_fraction,
    "lstm_val_every_epoch": lstm_val_every_epoch,
    **VALIDATION_HEAVY,
}
SETS = {"default": [n for n in WORKLOADS if n not in VALIDATION_HEAVY], "validation": list(VALIDATION_HEAVY),
        "all": list(WORKLOADS)}


def build_trainer(root: str, callbacks: list, settings: dict[str, Any]) -> pl.Trainer:
    """A CPU trainer with the workload's settings; ``checkpoint`` becomes a ModelCheckpoint."""
    settings = dict(settings)
    checkpoint = settings.pop("checkpoint", None)
    callbacks = list(callbacks)
    if checkpoint is not None:
        callbacks.append(pl.callbacks.ModelCheckpoint(dirpath=f"{root}/checkpoints", **checkpoint))
    return pl.Trainer(accelerator="cpu", devices=1, default_root_dir=root, callbacks=callbacks,
                      enable_progress_bar=False, enable_model_summary=False, logger=False,
                      enable_checkpointing=checkpoint is not None, **settings)
