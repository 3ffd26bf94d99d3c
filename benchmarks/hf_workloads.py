"""Hugging Face `Trainer` workloads for the ETA-accuracy and overhead benchmarks (CPU, synthetic data).

Each workload is a small model built from a config (no download) on synthetic tokens, sized for
1-2 minutes on one CPU thread at ``scale=1``. `run_trainer` trains one with or without
`PreNeTTrainerCallback` and returns the figures the benchmarks need, including the ETA the
Trainer's own progress bar (tqdm, with its smoothing) shows after every optimizer step.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import torch
from torch.utils.data import Dataset

VOCAB = 512
SEQ = 64


class TokenChains(Dataset):
    """Token sequences following a fixed random successor table; ``labels`` for a causal LM or a class."""

    def __init__(self, samples: int, *, seed: int, classify: bool = False) -> None:
        successor = torch.randint(0, VOCAB, (VOCAB,), generator=torch.Generator().manual_seed(1234))
        tokens = torch.empty(samples, SEQ, dtype=torch.long)
        tokens[:, 0] = torch.randint(0, VOCAB, (samples,), generator=torch.Generator().manual_seed(seed))
        for position in range(1, SEQ):
            tokens[:, position] = successor[tokens[:, position - 1]]
        self.tokens = tokens
        self.labels = (tokens[:, 0] < VOCAB // 2).long() if classify else tokens

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.tokens[index], "labels": self.labels[index]}


def _gpt2(layers: int, width: int) -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=width, n_layer=layers, n_head=4,
                                      bos_token_id=0, eos_token_id=0))


def _bert_classifier(layers: int, width: int) -> torch.nn.Module:
    from transformers import BertConfig, BertForSequenceClassification

    return BertForSequenceClassification(BertConfig(vocab_size=VOCAB, hidden_size=width, num_hidden_layers=layers,
                                                    num_attention_heads=4, intermediate_size=2 * width,
                                                    max_position_embeddings=SEQ, num_labels=2))


def causal_lm_eval_steps_checkpoints(scale: float) -> tuple[Any, Any, Any, dict[str, Any]]:
    """GPT-2 (2 layers x 128) causal LM, one epoch of 1,500 steps, evaluation every 300 steps, a checkpoint every 500."""
    settings = dict(num_train_epochs=1, per_device_train_batch_size=8, per_device_eval_batch_size=8,
                    eval_strategy="steps", eval_steps=max(1, int(300 * scale)), save_strategy="steps",
                    save_steps=max(1, int(500 * scale)), save_total_limit=2, logging_steps=50)
    return _gpt2(2, 128), TokenChains(int(12_000 * scale), seed=1), TokenChains(128, seed=2), settings


def classifier_epoch_eval_accumulate(scale: float) -> tuple[Any, Any, Any, dict[str, Any]]:
    """BERT (2 layers x 128) sequence classifier, 3 epochs, gradient accumulation 4, evaluation at each epoch's end."""
    settings = dict(num_train_epochs=3, per_device_train_batch_size=8, per_device_eval_batch_size=16,
                    gradient_accumulation_steps=4, eval_strategy="epoch", save_strategy="no", logging_steps=25)
    model = _bert_classifier(2, 128)
    return model, TokenChains(int(4_800 * scale), seed=3, classify=True), TokenChains(256, seed=4, classify=True), settings


def max_steps_mid_epoch(scale: float) -> tuple[Any, Any, Any, dict[str, Any]]:
    """GPT-2 (4 layers x 64), max_steps (2,250) ending half-way through the fifth epoch, evaluation at epoch ends."""
    settings = dict(max_steps=max(1, int(2_250 * scale)), per_device_train_batch_size=8, per_device_eval_batch_size=8,
                    eval_strategy="epoch", save_strategy="no", logging_steps=25)
    return _gpt2(4, 64), TokenChains(int(4_000 * scale), seed=5), TokenChains(96, seed=6), settings


def causal_lm_accumulate_eval_checkpoints(scale: float) -> tuple[Any, Any, Any, dict[str, Any]]:
    """GPT-2 (2 layers x 128) from its config, gradient accumulation 2, 600 steps, evaluation every 150, a checkpoint
    every 300 (issue 24's run: `examples/hf_trainer.py --accumulate 2`)."""
    settings = dict(max_steps=max(1, int(600 * scale)), per_device_train_batch_size=8, per_device_eval_batch_size=8,
                    gradient_accumulation_steps=2, eval_strategy="steps", eval_steps=max(1, int(150 * scale)),
                    save_strategy="steps", save_steps=max(1, int(300 * scale)), save_total_limit=2, logging_steps=50)
    return _gpt2(2, 128), TokenChains(2000, seed=7), TokenChains(64, seed=8), settings


WORKLOADS: dict[str, Callable[[float], tuple[Any, Any, Any, dict[str, Any]]]] = {
    "causal_lm_eval_steps_checkpoints": causal_lm_eval_steps_checkpoints,
    "classifier_epoch_eval_accumulate": classifier_epoch_eval_accumulate,
    "max_steps_mid_epoch": max_steps_mid_epoch,
    "causal_lm_accumulate_eval_checkpoints": causal_lm_accumulate_eval_checkpoints,
}


def bar_remaining_s(bar: Any) -> float | None:
    """The remaining time a tqdm bar shows now (tqdm's own formula: smoothed rate, else the average)."""
    info = bar.format_dict
    n, total, rate = info["n"], info["total"], info["rate"]
    if rate is None and info["elapsed"] and n:
        rate = n / info["elapsed"]
    return (total - n) / rate if rate and total else None


def run_trainer(name: str, *, with_prenet: bool, out_dir: str, scale: float = 1.0,
                record_bar: bool = False, extra_callbacks: tuple = ()) -> dict[str, Any]:
    """Train one workload; return the wall time of ``trainer.train()``, the report and the bar's ETAs.
    ``extra_callbacks`` come after PreNeT's (`interleaved_overhead.py`'s hand-over)."""
    from transformers import Trainer, TrainerCallback, TrainingArguments
    from transformers.trainer_callback import ProgressCallback

    from prenet_callbacks import PreNeTTrainerCallback

    class BarClock(TrainerCallback):
        """After every optimizer step: seconds since train begin and the progress bar's remaining time."""

        def __init__(self) -> None:
            self.start = 0.0
            self.bar: Any = None
            self.points: dict[int, tuple[float, float | None]] = {}

        def on_train_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if self.bar is not None and self.bar.training_bar is not None:
                self.points[state.global_step] = (time.perf_counter() - self.start, bar_remaining_s(self.bar.training_bar))

    from benchmarks.heldout_workloads import HF as HELD_OUT

    torch.manual_seed(0)
    model, train, evaluation, settings = (WORKLOADS.get(name) or HELD_OUT[name])(scale)
    out = Path(out_dir) / f"{name}-{int(with_prenet)}"
    args = TrainingArguments(output_dir=str(out), report_to="none", use_cpu=True, seed=0, learning_rate=5e-4,
                             disable_tqdm=not record_bar, dataloader_num_workers=0, **settings)
    clock = BarClock()
    prenet = PreNeTTrainerCallback(report_path=out / "prenet_report.json", print_report=False)
    callbacks: list[Any] = ([clock] if record_bar else []) + ([prenet] if with_prenet else []) + list(extra_callbacks)
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=evaluation, callbacks=callbacks)
    clock.bar = next((cb for cb in trainer.callback_handler.callbacks if isinstance(cb, ProgressCallback)), None)
    start = time.perf_counter()
    trainer.train()
    return {"fit_s": time.perf_counter() - start, "report": prenet.report if with_prenet else None,
            "bar": clock.points, "steps": trainer.state.global_step}
