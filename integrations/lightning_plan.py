"""Read a Lightning trainer's settings into a framework-agnostic `RunPlan`.

Works on trainers of both `pytorch_lightning` and `lightning.pytorch` (the same code under two
names): public settings are read here, private ones through `integrations.lightning_compat`,
whose fallbacks are reported through ``note`` (by default an error).
"""
from __future__ import annotations

import math
from typing import Any

from integrations import lightning_compat as compat
from integrations.lightning_compat import Note, raise_unknown
from prenet_callbacks.forecast.plan import INF, CheckpointRule, RunLimits, RunPlan

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
        if max_epochs > 0:
            return INF, None, (f"the training dataloader has no length (iterable dataset): the total comes when the "
                               f"first epoch ends (max_epochs={max_epochs})")
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


def _checkpoint_rules(trainer: Any, note: Note) -> list[CheckpointRule]:
    rules: list[CheckpointRule] = []
    if trainer.fast_dev_run:
        return rules
    for callback in trainer.checkpoint_callbacks:
        if not compat.is_model_checkpoint(callback):
            note(f"{type(callback).__name__} is not a ModelCheckpoint: one save after each epoch's validation "
                 "is assumed")
            rules.append(CheckpointRule("validation_end", every_n_epochs=1, files_per_save=1))
            continue
        files = (1 if callback.save_top_k != 0 else 0) + (1 if callback.save_last else 0)
        if files == 0:
            continue
        every_steps = compat.every_n_train_steps(callback, note)
        every_epochs = compat.every_n_epochs(callback, note)
        if compat.has_time_interval(callback, note):
            continue  # time-based saves: their count depends on the run's own speed
        if every_steps > 0:
            rules.append(CheckpointRule("steps", every_n_train_steps=every_steps, files_per_save=files))
            continue
        if every_epochs < 1:
            continue
        on_epoch_end = compat.saves_on_train_epoch_end(callback, trainer, note)
        rules.append(CheckpointRule("train_epoch_end" if on_epoch_end else "validation_end",
                                    every_n_epochs=every_epochs, files_per_save=files))
    return rules


def _validation_batches(trainer: Any) -> int:
    if not trainer.enable_validation:
        return 0
    num_val = trainer.num_val_batches
    if not num_val:
        # No sanity check ran, so the validation dataloader is not loaded yet. Lightning loads it
        # the same way at the first validation; doing it now only moves that call earlier.
        compat.load_validation_data(trainer)
        num_val = trainer.num_val_batches
    total = sum(num_val) if isinstance(num_val, (list, tuple)) else num_val
    return _finite_int(total) or 0


def _batches_done_in_epoch(trainer: Any, batches_per_epoch: float, note: Note) -> int:
    """Batches of the current epoch already trained, at ``on_train_start`` of a (resumed) fit.

    A checkpoint written in ``on_train_batch_end`` holds its batch as processed but not yet
    completed (Lightning completes it when the epoch loop restarts, after ``on_train_start``), and
    the progress of an epoch that has ended stays until the next epoch starts.
    """
    done = compat.batches_done_in_epoch(trainer, note)
    if math.isfinite(batches_per_epoch) and done >= int(batches_per_epoch):
        return 0
    return done


def plan_from_trainer(trainer: Any, pl_module: Any, note: Note = raise_unknown) -> RunPlan:
    """The plan of ``trainer.fit`` as configured, from ``on_train_start`` (dataloaders are set up).

    ``note`` hears of every Lightning setting that could not be read and what was assumed instead.
    """
    batches_per_epoch = float(trainer.num_training_batches)
    accumulate = int(trainer.accumulate_grad_batches or 1)
    steps_per_batch = None
    if not pl_module.automatic_optimization:
        # manual optimization: each optimizer's step() advances global_step once per batch
        steps_per_batch = float(max(1, len(trainer.optimizers or [1])))
        accumulate = 1
    total, epochs, unknown_reason = _total_batches(trainer, batches_per_epoch, accumulate, steps_per_batch)
    start_epoch = int(trainer.current_epoch)
    in_epoch = _batches_done_in_epoch(trainer, batches_per_epoch, note)
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
        sanity_val_batches=int(trainer.num_sanity_val_steps or 0),
        checkpoints=_checkpoint_rules(trainer, note),
        unknown_reason=unknown_reason,
    )
    if val_check_batch is None:
        plan.val_batches = 0  # time-based validation (val_check_interval as a duration) is not counted
    plan.max_time_s = compat.max_time_seconds(trainer, note)
    return plan


def limits_from_trainer(trainer: Any, note: Note = raise_unknown) -> RunLimits:
    """What may end the fit: max_steps, max_epochs, max_time and early-stopping callbacks."""
    max_steps = trainer.max_steps if trainer.max_steps is not None and trainer.max_steps > 0 else None
    max_epochs = trainer.fit_loop.max_epochs
    return RunLimits(
        max_steps=max_steps,
        max_epochs=max_epochs if max_epochs is not None and max_epochs >= 0 else None,
        max_time_s=compat.max_time_seconds(trainer, note),
        early_stopping=any(compat.is_early_stopping(c) for c in trainer.callbacks),
    )
