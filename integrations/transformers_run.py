"""What a Hugging Face `Trainer` run is, read at its edges: where it runs, what may end it, why it ended.

Plain functions of ``TrainingArguments``, ``TrainerState`` and the Trainer (None when the callback
could not find it), translated into the report's terms (Lightning's precision spelling, `RunLimits`).
"""
from __future__ import annotations

import math
from typing import Any

import torch
from transformers import EarlyStoppingCallback

from prenet_callbacks.forecast.plan import RunLimits
from prenet_callbacks.session.run_info import describe_run


def trainer_precision(args: Any, model: Any) -> str:
    """Lightning's spelling of the Trainer's precision (the report and the projection read it)."""
    if args.bf16:
        return "bf16-mixed"
    if args.fp16:
        return "16-mixed"
    first = next(iter(model.parameters()), None) if model is not None else None
    dtype = first.dtype if first is not None else torch.float32
    return {torch.bfloat16: "bf16-true", torch.float16: "16-true", torch.float64: "64-true"}.get(dtype, "32-true")


def describe_trainer_run(args: Any, trainer: Any, model: Any) -> dict[str, Any]:
    """What runs where; under DeepSpeed also the ZeRO configuration."""
    extra: dict[str, Any] = {}
    strategy = str(getattr(args.parallel_mode, "value", args.parallel_mode))
    if trainer is not None:
        accelerator = getattr(trainer, "accelerator", None)
        strategy = str(getattr(getattr(accelerator, "distributed_type", None), "value", strategy))
        if getattr(trainer, "is_deepspeed_enabled", False):
            from integrations.deepspeed_config import describe_engine

            extra["deepspeed"] = describe_engine(trainer.model_wrapped)
    return describe_run(args.device, devices=int(args.world_size or 1), precision=trainer_precision(args, model),
                        strategy=strategy, framework="transformers", **extra)


def early_stopping_callback(trainer: Any) -> Any:
    """The Trainer's first `EarlyStoppingCallback` (a subclass too), or None."""
    callbacks = getattr(getattr(trainer, "callback_handler", None), "callbacks", None) or []
    return next((cb for cb in callbacks if isinstance(cb, EarlyStoppingCallback)), None)


def run_limits(args: Any, trainer: Any) -> RunLimits:
    """What may end the run: ``max_steps`` or ``num_train_epochs``, and an early-stopping callback."""
    by_steps = int(args.max_steps) > 0
    return RunLimits(max_steps=int(args.max_steps) if by_steps else None,
                     max_epochs=None if by_steps else math.ceil(float(args.num_train_epochs)),
                     early_stopping=early_stopping_callback(trainer) is not None)


def end_reason(args: Any, state: Any, trainer: Any) -> tuple[str, str | None]:
    """Why ``train()`` returned: the planned steps done, or a callback that stopped it (early stopping)."""
    if not state.max_steps or state.global_step >= state.max_steps:
        return "completed", None
    stopper = early_stopping_callback(trainer)
    if stopper is not None and stopper.early_stopping_patience_counter >= stopper.early_stopping_patience:
        return "stopped_early", (f"EarlyStoppingCallback on {args.metric_for_best_model} "
                                 f"(patience {stopper.early_stopping_patience})")
    return "stopped_early", (f"a callback set control.should_training_stop at step {state.global_step:,} "
                             f"of {state.max_steps:,}")
