"""Read a Lightning trainer's settings into a framework-agnostic `RunPlan`.

Works on trainers of both `pytorch_lightning` and `lightning.pytorch` by duck typing (the two
packages have the same code under different names, so `isinstance` across them fails).
"""
from __future__ import annotations

import math
from typing import Any

from prenet_callbacks.plan import INF, CheckpointRule, RunLimits, RunPlan

# Trainer(max_epochs=None, max_steps=-1) trains for this many epochs (Lightning's default).
_LIGHTNING_DEFAULT_MAX_EPOCHS = 1000


def _finite_int(value: Any) -> int | None:
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return int(value) if math.isfinite(value) else None


def _total_batches(trainer: Any, batches_per_epoch: float, accumulate: int, steps_per_batch: float | None) -> tuple[float, int | None, str | None]:
    max_steps = trainer.max_steps if trainer.max_steps is not None else -1
    max_epochs = trainer.fit_loop.max_epochs
    if max_epochs is None:
        max_epochs = -1 if max_steps != -1 else _LIGHTNING_DEFAULT_MAX_EPOCHS
    if not math.isfinite(batches_per_epoch):
        if max_steps > 0:
            per_step = 1 / steps_per_batch if steps_per_batch else accumulate
            return max_steps * per_step, None, None
        return INF, None, ("the training dataloader has no length (iterable dataset) and Trainer(max_steps) is not set, "
                           "so only a rate can be given")
    bpe = int(batches_per_epoch)
    by_epochs = max_epochs * bpe if max_epochs != -1 else INF
    if max_steps <= 0:
        if not math.isfinite(by_epochs):
            return INF, None, "Trainer(max_epochs=-1) without max_steps trains until stopped"
        return by_epochs, max_epochs, None
    if steps_per_batch:
        by_steps = math.ceil(max_steps / steps_per_batch)
    else:
        steps_per_epoch = math.ceil(bpe / accumulate)
        full_epochs, rest = divmod(max_steps, steps_per_epoch)
        by_steps = full_epochs * bpe + rest * accumulate
    total = min(by_epochs, by_steps)
    return total, (max_epochs if total == by_epochs else math.ceil(total / bpe)), None


def _checkpoint_rules(trainer: Any) -> list[CheckpointRule]:
    rules: list[CheckpointRule] = []
    if getattr(trainer, "fast_dev_run", False):
        return rules
    for callback in getattr(trainer, "checkpoint_callbacks", []) or []:
        top_k = getattr(callback, "save_top_k", 1)
        save_last = bool(getattr(callback, "save_last", False))
        files = (1 if top_k != 0 else 0) + (1 if save_last else 0)
        if files == 0:
            continue
        every_steps = getattr(callback, "_every_n_train_steps", 0) or 0
        every_epochs = getattr(callback, "_every_n_epochs", 1) or 0
        if getattr(callback, "_train_time_interval", None) is not None:
            continue  # time-based saves: their count depends on the run's own speed
        if every_steps > 0:
            rules.append(CheckpointRule("steps", every_n_train_steps=every_steps, files_per_save=files))
            continue
        if every_epochs < 1:
            continue
        try:
            on_epoch_end = bool(callback._should_save_on_train_epoch_end(trainer))
        except Exception:  # noqa: BLE001 - private API; fall back to Lightning's default
            on_epoch_end = False
        rules.append(CheckpointRule("train_epoch_end" if on_epoch_end else "validation_end",
                                    every_n_epochs=every_epochs, files_per_save=files))
    return rules


def _validation_batches(trainer: Any) -> int:
    if not getattr(trainer, "enable_validation", False):
        return 0
    num_val = trainer.num_val_batches
    if not num_val:
        # No sanity check ran, so the validation dataloader is not loaded yet. Lightning loads it
        # the same way at the first validation; doing it now only moves that call earlier.
        trainer.fit_loop.epoch_loop.val_loop.setup_data()
        num_val = trainer.num_val_batches
    total = sum(num_val) if isinstance(num_val, (list, tuple)) else num_val
    return _finite_int(total) or 0


def _batches_done_in_epoch(epoch_loop: Any, batches_per_epoch: float) -> int:
    """Batches of the current epoch already trained, at ``on_train_start`` of a (resumed) fit.

    A checkpoint written in ``on_train_batch_end`` holds its batch as processed but not yet
    completed (Lightning completes it when the epoch loop restarts, after ``on_train_start``), and
    the progress of an epoch that has ended stays until the next epoch starts.
    """
    current = epoch_loop.batch_progress.current
    done = max(int(getattr(current, "completed", 0) or 0), int(getattr(current, "processed", 0) or 0))
    if math.isfinite(batches_per_epoch) and done >= int(batches_per_epoch):
        return 0
    return done


def plan_from_trainer(trainer: Any, pl_module: Any) -> RunPlan:
    """The plan of ``trainer.fit`` as configured, from ``on_train_start`` (dataloaders are set up)."""
    batches_per_epoch = float(trainer.num_training_batches)
    accumulate = int(getattr(trainer, "accumulate_grad_batches", 1) or 1)
    steps_per_batch = None
    if not getattr(pl_module, "automatic_optimization", True):
        # manual optimization: each optimizer's step() advances global_step once per batch
        steps_per_batch = float(max(1, len(getattr(trainer, "optimizers", []) or [1])))
        accumulate = 1
    total, epochs, unknown_reason = _total_batches(trainer, batches_per_epoch, accumulate, steps_per_batch)
    epoch_loop = trainer.fit_loop.epoch_loop
    start_epoch = int(trainer.current_epoch)
    in_epoch = _batches_done_in_epoch(epoch_loop, batches_per_epoch)
    start_batch = start_epoch * int(batches_per_epoch) + in_epoch if math.isfinite(batches_per_epoch) else 0
    val_check_batch = trainer.val_check_batch
    plan = RunPlan(
        total_batches=total,
        batches_per_epoch=batches_per_epoch,
        max_epochs=epochs,
        accumulate=accumulate,
        steps_per_batch=steps_per_batch,
        start_batch=start_batch,
        start_epoch=start_epoch,
        start_step=int(trainer.global_step),
        val_batches=_validation_batches(trainer),
        val_check_batch=INF if val_check_batch is None else float(val_check_batch),
        check_val_every_n_epoch=trainer.check_val_every_n_epoch,
        sanity_val_batches=int(getattr(trainer, "num_sanity_val_steps", 0) or 0),
        checkpoints=_checkpoint_rules(trainer),
        unknown_reason=unknown_reason,
    )
    if val_check_batch is None:
        plan.val_batches = 0  # time-based validation (val_check_interval as a duration) is not counted
    plan.max_time_s = _max_time_seconds(trainer)
    return plan


def _max_time_seconds(trainer: Any) -> float | None:
    """``Trainer(max_time=...)`` installs a Timer callback with a duration."""
    for callback in getattr(trainer, "callbacks", []) or []:
        duration = getattr(callback, "_duration", None)
        if type(callback).__name__ == "Timer" and duration is not None:
            return float(duration)
    return None


def limits_from_trainer(trainer: Any) -> RunLimits:
    """What may end the fit: max_steps, max_epochs, max_time and early-stopping callbacks."""
    max_steps = trainer.max_steps if trainer.max_steps is not None and trainer.max_steps > 0 else None
    max_epochs = trainer.fit_loop.max_epochs
    return RunLimits(
        max_steps=max_steps,
        max_epochs=max_epochs if max_epochs is not None and max_epochs >= 0 else None,
        max_time_s=_max_time_seconds(trainer),
        early_stopping=any(type(c).__name__ == "EarlyStopping" for c in getattr(trainer, "callbacks", []) or []),
    )
