"""Real CPU training workloads for the ETA and overhead benchmarks (synthetic data; the default set's fits take
one to three minutes on a 2-core machine, the validation and compiled sets' 20-60 s).

The benchmarks run torch single-threaded (``PRENET_BENCH_THREADS``, default 1): on a 2-core machine
shared with other work, two threads make step times swing with the neighbours' load.

Each workload returns ``(module, train_loader, val_loader, trainer_kwargs)``.
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


def _cnn_two_blocks() -> nn.Module:
    def block(c_in: int, c_out: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(), nn.MaxPool2d(2))

    return nn.Sequential(block(3, 32), block(32, 64), nn.Flatten(), nn.Linear(64 * 8 * 8, 10))


def _cnn_dropout() -> nn.Module:
    return nn.Sequential(*_cnn()[:-1], nn.Dropout(0.25), nn.Linear(128 * 16, 10))


def _mlp_bn_dropout() -> nn.Module:
    return nn.Sequential(nn.Linear(256, 768), nn.BatchNorm1d(768), nn.ReLU(), nn.Dropout(0.3),
                         nn.Linear(768, 768), nn.BatchNorm1d(768), nn.ReLU(), nn.Dropout(0.3), nn.Linear(768, 10))


class MetricClassifier(Classifier):
    """A classifier whose validation_step also computes torchmetrics (accuracy, macro F1, a confusion matrix)."""

    def __init__(self, net: nn.Module, optimizer: str = "sgd", lr: float = 0.01) -> None:
        super().__init__(net, optimizer, lr)
        import torchmetrics

        self.val_acc = torchmetrics.classification.MulticlassAccuracy(num_classes=10)
        self.val_f1 = torchmetrics.classification.MulticlassF1Score(num_classes=10, average="macro")
        self.val_confusion = torchmetrics.classification.MulticlassConfusionMatrix(num_classes=10)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        logits = self(x)
        self.log("val_loss", nn.functional.cross_entropy(logits, y))
        self.val_acc(logits, y)
        self.val_f1(logits, y)
        self.val_confusion.update(logits, y)
        self.log("val_acc", self.val_acc)
        self.log("val_f1", self.val_f1)

    def on_validation_epoch_end(self) -> None:
        self.val_confusion.compute()
        self.val_confusion.reset()


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


def cnn_two_blocks_issue24() -> tuple:
    """Issue 24's CNN: two conv blocks, AdamW, batch 64; validation on 1,024 samples at batch 128 (2x) and a checkpoint every epoch, 12 epochs."""
    train = DataLoader(_tensors((3, 32, 32), 2048, 0), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((3, 32, 32), 1024, 1), batch_size=128)
    return (Classifier(_cnn_two_blocks(), optimizer="adamw", lr=1e-3), train, val,
            dict(max_epochs=12, checkpoint=dict()))


def cnn_big_validation_batches() -> tuple:
    """CNN (BatchNorm), validation every epoch on a set as large as a third of the training set, at twice the batch size."""
    train = DataLoader(_tensors((3, 32, 32), 2560, 0), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((3, 32, 32), 1024, 1), batch_size=128)
    return Classifier(_cnn()), train, val, dict(max_epochs=8, checkpoint=dict())


def cnn_dropout_eval_4x_metrics() -> tuple:
    """CNN with dropout, batch 32, validation at batch 128 (4x) with torchmetrics in validation_step, every epoch."""
    train = DataLoader(_tensors((3, 32, 32), 2048, 0), batch_size=32, shuffle=True)
    val = DataLoader(_tensors((3, 32, 32), 1024, 1), batch_size=128)
    return MetricClassifier(_cnn_dropout()), train, val, dict(max_epochs=8)


def mlp_validation_every_200() -> tuple:
    """MLP, AdamW, batch 64, a large validation set (8k samples at batch 256, 4x) every 200 batches."""
    train = DataLoader(_tensors((784,), 64 * 600, 0), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((784,), 8192, 1), batch_size=256)
    return (Classifier(_mlp(), optimizer="adamw", lr=1e-3), train, val,
            dict(max_epochs=3, val_check_interval=200))


def mlp_bn_dropout_many_eval_batches_no_sanity() -> tuple:
    """MLP with BatchNorm and dropout, batch 64; 256 validation batches at the same size twice per epoch; no sanity check."""
    train = DataLoader(_tensors((256,), 64 * 400, 0), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((256,), 64 * 256, 1), batch_size=64)
    return (Classifier(_mlp_bn_dropout(), optimizer="adamw", lr=1e-3), train, val,
            dict(max_epochs=6, val_check_interval=0.5, num_sanity_val_steps=0))


def transformer_validation_half_epoch() -> tuple:
    """Small transformer encoder (dropout), batch 32, validation twice per epoch on 2k sequences at batch 64 (2x)."""
    train = DataLoader(_tensors((48,), 32 * 128, 0, integer_high=2000), batch_size=32, shuffle=True)
    val = DataLoader(_tensors((48,), 2048, 1, integer_high=2000), batch_size=64)
    return (Classifier(TokenClassifier(), optimizer="adamw", lr=3e-4), train, val,
            dict(max_epochs=3, val_check_interval=0.5))


def transformer_eval_half_batch_few_batches() -> tuple:
    """Small transformer encoder, batch 64; validation on 4 batches of 32 (0.5x) every 10 batches, checkpoint each epoch."""
    train = DataLoader(_tensors((48,), 64 * 80, 0, integer_high=2000), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((48,), 128, 1, integer_high=2000), batch_size=32)
    return (Classifier(TokenClassifier(), optimizer="adamw", lr=3e-4), train, val,
            dict(max_epochs=3, val_check_interval=10, checkpoint=dict()))


def lstm_eval_half_batch_no_sanity() -> tuple:
    """Two-layer LSTM, batch 64, validation at batch 32 (0.5x) on 2k sequences twice per epoch, no sanity check."""
    train = DataLoader(_tensors((48, 32), 64 * 80, 0), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((48, 32), 2048, 1), batch_size=32)
    return (Classifier(SequenceClassifier(), optimizer="adamw", lr=1e-3), train, val,
            dict(max_epochs=8, val_check_interval=0.5, num_sanity_val_steps=0))


def lstm_eval_same_batch_metrics() -> tuple:
    """Two-layer LSTM, batch 32, validation at batch 32 (1x) with torchmetrics twice per epoch."""
    train = DataLoader(_tensors((48, 32), 32 * 150, 0), batch_size=32, shuffle=True)
    val = DataLoader(_tensors((48, 32), 2048, 1), batch_size=32)
    return (MetricClassifier(SequenceClassifier(), optimizer="adamw", lr=1e-3), train, val,
            dict(max_epochs=8, val_check_interval=0.5))


def compiled_mlp() -> tuple:
    """torch.compile'd MLP (issue 24's: 37.5 s predicted for a 14.1 s fit), AdamW, batch 64, validation every epoch."""
    train = DataLoader(_tensors((784,), 64 * 150, 0), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((784,), 2048, 1), batch_size=256)
    return Classifier(torch.compile(_mlp()), optimizer="adamw", lr=1e-3), train, val, dict(max_epochs=6)


def compiled_cnn() -> tuple:
    """torch.compile'd CNN (two conv blocks, BatchNorm), batch 64, validation at batch 128 every epoch, checkpoints."""
    train = DataLoader(_tensors((3, 32, 32), 64 * 24, 0), batch_size=64, shuffle=True)
    val = DataLoader(_tensors((3, 32, 32), 512, 1), batch_size=128)
    return (Classifier(torch.compile(_cnn_two_blocks()), optimizer="adamw", lr=1e-3), train, val,
            dict(max_epochs=6, checkpoint=dict()))


def compiled_transformer() -> tuple:
    """torch.compile'd transformer encoder (dropout), batch 32, validation at batch 64 twice per epoch."""
    train = DataLoader(_tensors((48,), 32 * 100, 0, integer_high=2000), batch_size=32, shuffle=True)
    val = DataLoader(_tensors((48,), 512, 1, integer_high=2000), batch_size=64)
    return (Classifier(torch.compile(TokenClassifier()), optimizer="adamw", lr=3e-4), train, val,
            dict(max_epochs=4, val_check_interval=0.5))


def compiled_mlp_recompiles() -> tuple:
    """torch.compile'd MLP whose last training and validation batches are partial (100 and 232 samples): each
    graph recompiles once for the new shape, in the first epoch's last step and the first validation run."""
    train = DataLoader(_tensors((784,), 64 * 120 + 100, 0), batch_size=64)
    val = DataLoader(_tensors((784,), 1000, 1), batch_size=256)
    return Classifier(torch.compile(_mlp()), optimizer="adamw", lr=1e-3), train, val, dict(max_epochs=6)


# torch.compile'd models (issue 24): compilations in the first steps, the sanity check (eval graph) and at
# recompiles are one-off costs that a prediction must count once, not as a rate.
COMPILED: dict[str, Callable[[], tuple]] = {
    "compiled_mlp": compiled_mlp,
    "compiled_cnn": compiled_cnn,
    "compiled_transformer": compiled_transformer,
    "compiled_mlp_recompiles": compiled_mlp_recompiles,
}


# Fits where validation is a large share of the wall time, estimated before the first run is measured
# (issues 16 and 24): eval batch 0.5x-4x the training batch, BatchNorm and dropout, CNN, MLP,
# transformer, LSTM, metrics in validation_step, few and many eval batches, with and without a sanity check.
VALIDATION_HEAVY: dict[str, Callable[[], tuple]] = {
    "cnn_two_blocks_issue24": cnn_two_blocks_issue24,
    "cnn_big_validation_batches": cnn_big_validation_batches,
    "cnn_dropout_eval_4x_metrics": cnn_dropout_eval_4x_metrics,
    "mlp_validation_every_200": mlp_validation_every_200,
    "mlp_bn_dropout_many_eval_batches_no_sanity": mlp_bn_dropout_many_eval_batches_no_sanity,
    "transformer_validation_half_epoch": transformer_validation_half_epoch,
    "transformer_eval_half_batch_few_batches": transformer_eval_half_batch_few_batches,
    "lstm_eval_half_batch_no_sanity": lstm_eval_half_batch_no_sanity,
    "lstm_eval_same_batch_metrics": lstm_eval_same_batch_metrics,
}

WORKLOADS: dict[str, Callable[[], tuple]] = {
    "cnn_val_every_epoch": cnn_val_every_epoch,
    "cnn_loader_workers": cnn_loader_workers,
    "mlp_accumulate_val_every_n_steps": mlp_accumulate_val_every_n_steps,
    "transformer_val_fraction": transformer_val_fraction,
    "lstm_val_every_epoch": lstm_val_every_epoch,
    **VALIDATION_HEAVY,
    **COMPILED,
}
SETS = {"default": [n for n in WORKLOADS if n not in VALIDATION_HEAVY and n not in COMPILED],
        "validation": list(VALIDATION_HEAVY), "compiled": list(COMPILED), "all": list(WORKLOADS)}


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
