"""Held-out ETA workloads (issue 39): fits no constant of the ETA model was chosen on (`eta_splits.py`).

Lightning modules for `eta_accuracy.run_one`, `transformers.Trainer` workloads for `hf_workloads.run_trainer`
and plain loops for `loop_workloads.run_loop` (the DeepSpeed ones are in `deepspeed_workloads.py`), each
20-60 s on one CPU thread of a 2-core machine: architectures and schedules the development workloads do not
have (a bidirectional GRU, a residual CNN with GroupNorm, a causal transformer, DistilBERT, a GRU language
model under the Trainer, a CNN loop and an MLP loop over DataLoader epochs). Lightning workloads read their
length factor from ``PRENET_BENCH_SCALE`` (default 1; `run_one` takes none); the others take ``scale``.
"""
from __future__ import annotations

import os
from typing import Any, Callable

import torch
from torch import nn
from torch.utils.data import DataLoader

from benchmarks.hf_workloads import SEQ, VOCAB, TokenChains
from benchmarks.loop_workloads import _class_batch, _loader
from benchmarks.workloads import Classifier, _tensors


def _n(count: int) -> int:
    """``count`` scaled by ``PRENET_BENCH_SCALE`` (a smoke run), at least 8."""
    return max(8, int(count * float(os.environ.get("PRENET_BENCH_SCALE", "1"))))


class BiGRU(nn.Module):
    """A bidirectional GRU over 40 steps of 24 features; the last step's two directions into classes."""

    def __init__(self, features: int = 24, hidden: int = 80, classes: int = 10) -> None:
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.gru(x)[0][:, -1])


class ResidualCNN(nn.Module):
    """A stem and two residual blocks with GroupNorm (no BatchNorm), global average pooling."""

    def __init__(self, width: int = 32, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.GroupNorm(8, width), nn.ReLU())
        self.blocks = nn.ModuleList(nn.Sequential(nn.Conv2d(width, width, 3, padding=1), nn.GroupNorm(8, width),
                                                  nn.ReLU(), nn.Conv2d(width, width, 3, padding=1),
                                                  nn.GroupNorm(8, width)) for _ in range(2))
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for block in self.blocks:
            x = nn.functional.relu(x + block(x))
        return self.head(nn.functional.max_pool2d(x, 2).mean(dim=(2, 3)))


class CausalTransformer(nn.Module):
    """A two-layer pre-norm transformer with a causal mask over 32 tokens, the last position into classes."""

    def __init__(self, vocab: int = 1000, dim: int = 96, classes: int = 10) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, dim_feedforward=3 * dim, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
        return self.head(self.encoder(self.embed(tokens), mask=mask, is_causal=True)[:, -1])


def ho_bigru_sgd_checkpoints() -> tuple:
    """Bidirectional GRU, SGD, batch 48, validation at batch 96 every epoch, a checkpoint (+ last) every epoch."""
    train = DataLoader(_tensors((40, 24), 48 * _n(50), 0), batch_size=48, shuffle=True)
    val = DataLoader(_tensors((40, 24), 768, 1), batch_size=96)
    return Classifier(BiGRU()), train, val, dict(max_epochs=6, checkpoint=dict(save_last=True))


def ho_residual_cnn_groupnorm() -> tuple:
    """Residual CNN with GroupNorm, AdamW, batch 32 on 24x24 images, validation three times per epoch at batch 64."""
    train = DataLoader(_tensors((3, 24, 24), 32 * _n(60), 0), batch_size=32, shuffle=True)
    val = DataLoader(_tensors((3, 24, 24), 384, 1), batch_size=64)
    return (Classifier(ResidualCNN(), optimizer="adamw", lr=1e-3), train, val,
            dict(max_epochs=4, val_check_interval=0.33))


def ho_causal_transformer_max_steps() -> tuple:
    """Causal pre-norm transformer, AdamW, batch 32, max_steps mid-epoch, validation every 120 batches, checkpoints every 150 steps."""
    steps = _n(480)
    train = DataLoader(_tensors((32,), 32 * 200, 0, integer_high=1000), batch_size=32, shuffle=True)
    val = DataLoader(_tensors((32,), 512, 1, integer_high=1000), batch_size=128)
    return (Classifier(CausalTransformer(), optimizer="adamw", lr=3e-4), train, val,
            dict(max_steps=steps, max_epochs=10, val_check_interval=min(120, steps),
                 checkpoint=dict(every_n_train_steps=150, save_top_k=-1)))


LIGHTNING: dict[str, Callable[[], tuple]] = {
    "ho_bigru_sgd_checkpoints": ho_bigru_sgd_checkpoints,
    "ho_residual_cnn_groupnorm": ho_residual_cnn_groupnorm,
    "ho_causal_transformer_max_steps": ho_causal_transformer_max_steps,
}


class GRULanguageModel(nn.Module):
    """A GRU language model the Trainer trains like a transformers model: ``forward`` returns the loss."""

    def __init__(self, width: int = 96) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        self.gru = nn.GRU(width, width, num_layers=2, batch_first=True)
        self.head = nn.Linear(width, VOCAB)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        logits = self.head(self.gru(self.embed(input_ids))[0])
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), labels[:, 1:].reshape(-1))
        return out


def ho_hf_distilbert_epochs_save(scale: float) -> tuple[Any, Any, Any, dict[str, Any]]:
    """DistilBERT (2 layers x 96) sequence classifier, 2 epochs, evaluation and a checkpoint at each epoch's end."""
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    model = DistilBertForSequenceClassification(DistilBertConfig(
        vocab_size=VOCAB, dim=96, n_layers=2, n_heads=4, hidden_dim=192, max_position_embeddings=SEQ, num_labels=2))
    settings = dict(num_train_epochs=2, per_device_train_batch_size=16, per_device_eval_batch_size=32,
                    eval_strategy="epoch", save_strategy="epoch", save_total_limit=1, logging_steps=20)
    return (model, TokenChains(max(16, int(3_200 * scale)), seed=11, classify=True),
            TokenChains(256, seed=12, classify=True), settings)


def ho_hf_gru_lm_eval_steps(scale: float) -> tuple[Any, Any, Any, dict[str, Any]]:
    """GRU language model (2 layers x 96, not a transformers model), 400 steps, evaluation every 100 steps."""
    settings = dict(max_steps=max(4, int(400 * scale)), per_device_train_batch_size=8, per_device_eval_batch_size=16,
                    eval_strategy="steps", eval_steps=max(1, int(100 * scale)), save_strategy="no", logging_steps=50)
    return GRULanguageModel(), TokenChains(1600, seed=13), TokenChains(128, seed=14), settings


HF: dict[str, Callable[[float], tuple[Any, Any, Any, dict[str, Any]]]] = {
    "ho_hf_distilbert_epochs_save": ho_hf_distilbert_epochs_save,
    "ho_hf_gru_lm_eval_steps": ho_hf_gru_lm_eval_steps,
}


def _small_cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 24, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(24, 48, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(48 * 8 * 8, 4))


def _image_batch(generator: torch.Generator, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(batch, 3, 32, 32, generator=generator)
    return x, (x[:, 0].mean(dim=(1, 2)) > 0).long() + 2 * (x[:, 1].mean(dim=(1, 2)) > 0).long()


def ho_loop_cnn_eval_checkpoints(scale: float) -> dict[str, Any]:
    """Small CNN classifier loop, batch 32, 700 steps, evaluation (15 batches) every 175 steps, a checkpoint every 350."""
    steps = max(10, int(700 * scale))
    return dict(model=_small_cnn(), make_batch=lambda g: _image_batch(g, 32), steps=steps,
                eval_every=max(1, steps // 4), eval_batches=15, checkpoint_every=max(1, steps // 2), accumulate=1,
                loss=lambda out, y: nn.functional.cross_entropy(out, y))


def ho_loop_mlp_loader_epochs(scale: float) -> dict[str, Any]:
    """MLP (LayerNorm, GELU) over a shuffled DataLoader of sequences flattened, 5 epochs, evaluation every 2 epochs."""
    x, y = _class_batch(torch.Generator().manual_seed(5), max(64, int(64 * 180 * scale)), 16, 32)
    train = _loader(torch.utils.data.TensorDataset(x.flatten(1), y), 64, shuffle=True, workers=0)
    ex, ey = _class_batch(torch.Generator().manual_seed(6), 64 * 20, 16, 32)
    evaluation = _loader(torch.utils.data.TensorDataset(ex.flatten(1), ey), 64, shuffle=False, workers=0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.LayerNorm(1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(),
                          nn.Linear(1024, 4))
    steps = len(train) * 5
    return dict(model=model, train_loader=train, eval_loader=evaluation, steps=steps, eval_every=len(train) * 2,
                eval_batches=len(evaluation), checkpoint_every=None, accumulate=1,
                loss=lambda out, y: nn.functional.cross_entropy(out, y))


LOOP: dict[str, Callable[[float], dict[str, Any]]] = {
    "ho_loop_cnn_eval_checkpoints": ho_loop_cnn_eval_checkpoints,
    "ho_loop_mlp_loader_epochs": ho_loop_mlp_loader_epochs,
}
