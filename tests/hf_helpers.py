"""Small, fast Hugging Face `Trainer` runs on CPU for the transformers integration's tests."""
from __future__ import annotations

import hashlib
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset, IterableDataset

from transformers import Trainer, TrainerCallback, TrainingArguments

warnings.filterwarnings("ignore", message=".*Setting accelerator to CPU.*")

FEATURES = 8


def sample(index: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(index)
    x = torch.randn(FEATURES, generator=generator)
    return {"x": x, "labels": x[:2].sum(0, keepdim=True)}


class Samples(Dataset):
    """``n`` deterministic regression samples."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return sample(index)


class Stream(IterableDataset):
    """Samples with no length (an endless stream)."""

    def __iter__(self):
        index = 0
        while True:
            yield sample(index)
            index += 1


class TinyRegressor(nn.Module):
    """Returns the loss in a dict, as a `transformers` model does; in-place ReLU and dropout on purpose."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.net = nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(inplace=True), nn.Dropout(0.2), nn.Linear(16, 1))

    def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        out = self.net(x)
        result = {"logits": out}
        if labels is not None:
            result["loss"] = nn.functional.mse_loss(out, labels)
        return result


class EventCounter(TrainerCallback):
    """What a real Trainer run did: training micro-batches, optimizer steps, evaluations during training, saves."""

    def __init__(self) -> None:
        self.batches = self.steps = self.evaluations = self.saves = 0
        self.training = False
        self.first_step: int | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.training = True
        self.first_step = state.global_step

    def on_train_end(self, args, state, control, **kwargs):
        self.training = False

    def on_substep_end(self, args, state, control, **kwargs):
        self.batches += 1

    def on_step_end(self, args, state, control, **kwargs):
        self.batches += 1
        self.steps += 1

    def on_evaluate(self, args, state, control, **kwargs):
        self.evaluations += self.training

    def on_save(self, args, state, control, **kwargs):
        self.saves += 1


def arguments(out: Path, **overrides: Any) -> TrainingArguments:
    settings: dict[str, Any] = dict(output_dir=str(out), per_device_train_batch_size=4, per_device_eval_batch_size=4,
                                    num_train_epochs=2, logging_steps=5, report_to="none", disable_tqdm=True,
                                    use_cpu=True, save_strategy="no", eval_strategy="no", seed=0,
                                    dataloader_num_workers=0, learning_rate=1e-2)
    settings.update(overrides)
    return TrainingArguments(**settings)


def trainer(out: Path, callbacks: list, *, train: Any = None, eval_dataset: Any = None, model: nn.Module | None = None,
            **overrides: Any) -> Trainer:
    return Trainer(model=model if model is not None else TinyRegressor(), args=arguments(out, **overrides),
                   train_dataset=train if train is not None else Samples(44), eval_dataset=eval_dataset,
                   callbacks=callbacks)


def weights_digest(model: nn.Module) -> str:
    return hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
