"""Every read of Lightning state that is not public API, in one place, each with its fallback.

Lightning keeps some settings we need only in private attributes (``ModelCheckpoint._every_n_epochs``,
``Timer._duration``...). Read with ``getattr(obj, "_x", default)``, a Lightning upgrade that
renames one would silently change the plan. Here every such read is a named function: a vanished
attribute gives its documented fallback *and* a `Note` (the callbacks pass one that adds the text
to the report's ``limitations``); without a note it raises `LightningStateUnknown`.
``tests/test_lightning_compat.py`` builds the real objects and fails when an attribute we read is
gone, so an upgrade is caught by the suite rather than in a user's report.

Both packages are supported (``lightning.pytorch`` and ``pytorch_lightning``: the same code under two
names); class checks are ``isinstance`` against each one the process has already imported (an object of a
package nobody imported cannot exist), so subclasses count too and a check never imports the other package
(importing one takes seconds).
"""
from __future__ import annotations

import importlib
import sys
from typing import Any, Callable

from prenet_callbacks.extras import has_module

Note = Callable[[str], None]
_PACKAGES = ("pytorch_lightning", "lightning.pytorch")  # the order of PreNeTCallback's bases
_TOP_LEVEL = {"pytorch_lightning": "pytorch_lightning", "lightning.pytorch": "lightning"}  # found without importing
EXTRAS_HINT = ("pip install 'prenet-callbacks[lightning]' (for lightning.pytorch) or "
               "'prenet-callbacks[pytorch-lightning]' (for pytorch_lightning)")


class LightningStateUnknown(AttributeError):
    """A Lightning setting PreNeT reads is not there (an upgrade renamed it, or a custom callback
    lacks it); the message names it and what the fallback would assume."""


def raise_unknown(message: str) -> None:
    """The `Note` used when none is given: a setting that cannot be read is an error."""
    raise LightningStateUnknown(message)


def installed_packages() -> tuple[str, ...]:
    """The Lightning packages that are installed, found without importing them."""
    return tuple(package for package in _PACKAGES if has_module(_TOP_LEVEL[package]))


def imported_packages() -> tuple[str, ...]:
    """The Lightning packages this process has imported already (the user's Trainer comes from one of them)."""
    return tuple(package for package in _PACKAGES if package in sys.modules)


def lightning_classes(module: str, name: str, packages: tuple[str, ...] | None = None) -> tuple[type, ...]:
    """Class ``name`` of ``<package>.<module>`` for each of ``packages`` (default: those already imported).

    Imports ``<package>.<module>``, which is cheap once its package is loaded; a package that lacks it gives
    nothing to match."""
    found: list[type] = []
    for package in imported_packages() if packages is None else packages:
        try:
            cls = getattr(importlib.import_module(f"{package}.{module}"), name)
        except (ImportError, AttributeError):  # that package is not installed: nothing to match
            continue
        found.append(cls)
    return tuple(found)


def _is(obj: Any, module: str, name: str) -> bool:
    classes = lightning_classes(module, name)
    return bool(classes) and isinstance(obj, classes)


def is_early_stopping(callback: Any) -> bool:
    """An ``EarlyStopping`` callback (or a subclass) of either Lightning package."""
    return _is(callback, "callbacks", "EarlyStopping")


def is_timer(callback: Any) -> bool:
    """A ``Timer`` callback (``Trainer(max_time=...)`` installs one), of either package."""
    return _is(callback, "callbacks", "Timer")


def is_model_checkpoint(callback: Any) -> bool:
    """A ``ModelCheckpoint`` (or a subclass), of either package."""
    return _is(callback, "callbacks", "ModelCheckpoint")


def holds_whole_model(strategy: Any) -> bool:
    """A strategy whose module holds all its parameters on this rank (single device, DDP, DP): the
    model can be called directly outside the training step. Sharded ones (FSDP, DeepSpeed) cannot."""
    return any(_is(strategy, "strategies", name) for name in ("SingleDeviceStrategy", "DDPStrategy", "DataParallelStrategy"))


def is_tensorboard_logger(logger: Any) -> bool:
    """A ``TensorBoardLogger`` (a subclass too): its ``experiment`` is a ``SummaryWriter``.

    By class name along the MRO rather than ``isinstance``: Lightning's own class cannot be built
    without tensorboard installed, so stand-ins of that name (the tests' recording logger) count too.
    """
    return any(cls.__name__ == "TensorBoardLogger" for cls in type(logger).__mro__)


def _private(obj: Any, name: str, fallback: Any, meaning: str, note: Note) -> Any:
    try:
        return getattr(obj, name)
    except AttributeError:
        note(f"Lightning's {type(obj).__name__} has no {name} (a Lightning version PreNeT does not know): {meaning}")
        return fallback


# -- Timer ------------------------------------------------------------------------------------------
def timer_duration(timer: Any, note: Note = raise_unknown) -> float | None:
    """``Timer._duration``: the time limit in seconds (None: no limit).

    Fallback None: the time limit is unknown, so it is neither planned nor named as the reason the fit ended.
    """
    duration = _private(timer, "_duration", None, "Trainer(max_time) is not taken into account", note)
    return None if duration is None else float(duration)


def max_time_seconds(trainer: Any, note: Note = raise_unknown) -> float | None:
    """``Trainer(max_time=...)``: the duration of its first `Timer` callback that has one."""
    for callback in trainer.callbacks:
        if is_timer(callback):
            duration = timer_duration(callback, note)
            if duration is not None:
                return duration
    return None


# -- ModelCheckpoint --------------------------------------------------------------------------------
def every_n_train_steps(checkpoint: Any, note: Note = raise_unknown) -> int:
    """``ModelCheckpoint._every_n_train_steps`` (its ``every_n_train_steps``); fallback 0: no step-based saves."""
    return int(_private(checkpoint, "_every_n_train_steps", 0, "step-based saves are not planned", note) or 0)


def every_n_epochs(checkpoint: Any, note: Note = raise_unknown) -> int:
    """``ModelCheckpoint._every_n_epochs`` (its ``every_n_epochs``); fallback 1, Lightning's default."""
    return int(_private(checkpoint, "_every_n_epochs", 1, "a save every epoch is assumed", note) or 0)


def has_time_interval(checkpoint: Any, note: Note = raise_unknown) -> bool:
    """``ModelCheckpoint._train_time_interval`` is set (saves by time); fallback False: none assumed."""
    return _private(checkpoint, "_train_time_interval", None, "time-based saves are assumed off", note) is not None


def saves_on_train_epoch_end(checkpoint: Any, trainer: Any, note: Note = raise_unknown) -> bool:
    """``ModelCheckpoint._should_save_on_train_epoch_end(trainer)``: epoch saves come at the training
    epoch's end (True) or after validation (False).

    Fallback False (after validation, Lightning's choice whenever the fit validates): the method is
    gone or raised.
    """
    meaning = "epoch saves are placed after validation"
    method = _private(checkpoint, "_should_save_on_train_epoch_end", None, meaning, note)
    if method is None:
        return False
    try:
        return bool(method(trainer))
    except Exception as error:  # noqa: BLE001 - private API whose signature may change
        note(f"Lightning's ModelCheckpoint._should_save_on_train_epoch_end failed ({type(error).__name__}): {meaning}")
        return False


# -- loops ------------------------------------------------------------------------------------------
def batches_done_in_epoch(trainer: Any, note: Note = raise_unknown) -> int:
    """``fit_loop.epoch_loop.batch_progress.current``: batches of the current epoch processed or
    completed (the larger: a checkpoint written mid-batch holds it as processed only).

    Fallback 0: a resumed fit is taken to start at an epoch's first batch.
    """
    meaning = "a resumed fit is taken to start at the beginning of an epoch"
    current = trainer.fit_loop.epoch_loop.batch_progress.current
    completed = _private(current, "completed", 0, meaning, note)
    processed = _private(current, "processed", 0, meaning, note)
    return max(int(completed or 0), int(processed or 0))


def load_validation_data(trainer: Any) -> None:
    """``fit_loop.epoch_loop.val_loop.setup_data()``: load the validation dataloaders now (as
    Lightning does at the first validation), so that ``trainer.num_val_batches`` is known.

    No fallback: without it the validation size is unknown, so an error propagates (the callback steps aside).
    """
    trainer.fit_loop.epoch_loop.val_loop.setup_data()


# -- launchers --------------------------------------------------------------------------------------
def launched_processes(trainer: Any) -> list[Any]:
    """``strategy.launcher.procs``: the child processes Lightning's subprocess-script launcher started.

    Only that launcher has the attribute; with any other (spawn, none) the list is empty and the
    start-up is measured from this process's own start, or said to be unmeasured.
    """
    launcher = getattr(trainer.strategy, "launcher", None)
    return list(getattr(launcher, "procs", None) or [])
