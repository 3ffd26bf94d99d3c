"""Every Lightning attribute PreNeT reads outside the public API exists on the real objects.

Each read in `integrations.lightning_compat` raises `LightningStateUnknown` when no note is given,
so a Lightning upgrade that renames one fails here, for both packages, rather than silently
changing a plan. The fallbacks themselves are checked on objects that lack the attribute.
"""
from __future__ import annotations

import importlib
import types

import pytest

from integrations import lightning_compat as compat
from integrations.lightning_compat import LightningStateUnknown
from prenet_callbacks import PreNeTCallback
from tests.lightning_helpers import TinyModule, loaders
from tests.lightning_helpers import trainer as tiny_trainer

PACKAGES = [name for name in ("lightning.pytorch", "pytorch_lightning") if importlib.util.find_spec(name.split(".")[0])]
QUIET = dict(logger=False, enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", devices=1)


@pytest.fixture(params=PACKAGES)
def pl(request):
    return importlib.import_module(request.param)


def test_every_private_read_exists_on_real_objects(pl, tmp_path):
    checkpoint = pl.callbacks.ModelCheckpoint(dirpath=tmp_path, every_n_epochs=2)
    stopper = pl.callbacks.EarlyStopping(monitor="val_loss")
    trainer = pl.Trainer(default_root_dir=tmp_path, max_time={"seconds": 90}, callbacks=[checkpoint, stopper], **QUIET)
    # the default note raises: any of these failing means Lightning renamed what we read
    assert compat.max_time_seconds(trainer) == 90.0
    timer = next(c for c in trainer.callbacks if compat.is_timer(c))
    assert compat.timer_duration(timer) == 90.0 and callable(timer.time_remaining)
    assert compat.every_n_epochs(checkpoint) == 2
    assert compat.every_n_train_steps(checkpoint) == 0
    assert compat.has_time_interval(checkpoint) is False
    assert isinstance(compat.saves_on_train_epoch_end(checkpoint, trainer), bool)
    assert compat.batches_done_in_epoch(trainer) == 0
    assert callable(trainer.fit_loop.epoch_loop.val_loop.setup_data)  # `load_validation_data`
    assert compat.launched_processes(trainer) == []
    assert compat.is_early_stopping(stopper) and compat.is_model_checkpoint(checkpoint)
    assert stopper.stopped_epoch == 0 and stopper.monitor == "val_loss"  # public, read by the end reason


def test_the_subprocess_launcher_keeps_its_children(pl):
    module = importlib.import_module(f"{pl.__name__}.strategies.launchers.subprocess_script")
    launcher = module._SubprocessScriptLauncher(types.SimpleNamespace(creates_processes_externally=False), 2, 1)
    assert launcher.procs == []  # `launched_processes` reads it


def test_class_checks_cover_both_packages_and_subclasses(pl):
    class PatientStopping(pl.callbacks.EarlyStopping):
        pass

    assert compat.is_early_stopping(PatientStopping(monitor="loss"))
    # built without __init__: the test needs no tensorboard installed
    assert compat.is_tensorboard_logger(object.__new__(pl.loggers.TensorBoardLogger))
    assert not compat.is_early_stopping(pl.callbacks.ModelCheckpoint())
    assert not compat.is_timer(object())


def test_a_missing_attribute_is_an_error_without_a_note_and_a_fallback_with_one():
    bare = types.SimpleNamespace()
    with pytest.raises(LightningStateUnknown, match="_every_n_epochs"):
        compat.every_n_epochs(bare)
    notes: list[str] = []
    assert compat.every_n_epochs(bare, notes.append) == 1
    assert compat.every_n_train_steps(bare, notes.append) == 0
    assert compat.has_time_interval(bare, notes.append) is False
    assert compat.saves_on_train_epoch_end(bare, None, notes.append) is False
    assert compat.timer_duration(bare, notes.append) is None
    assert len(notes) == 5 and all("SimpleNamespace has no _" in note for note in notes)


def test_a_private_method_that_raises_falls_back_with_a_note():
    class Changed:
        def _should_save_on_train_epoch_end(self, trainer, extra):  # a new signature
            return True

    notes: list[str] = []
    assert compat.saves_on_train_epoch_end(Changed(), None, notes.append) is False
    assert "TypeError" in notes[0] and "after validation" in notes[0]


def test_a_custom_checkpoint_callback_is_planned_and_said_so(tmp_path):
    import lightning.pytorch as lp

    class EveryEpoch(lp.callbacks.Checkpoint):
        def on_validation_end(self, trainer, pl_module):
            trainer.save_checkpoint(tmp_path / f"epoch{trainer.current_epoch}.ckpt")

    callback = PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, targets=[], print_report=False,
                              warmup_steps=1, profile_steps=1, timing_steps=3)
    tiny_trainer(tmp_path, [EveryEpoch(), callback], max_epochs=2, enable_checkpointing=True).fit(TinyModule(), *loaders(train_batches=10))
    assert any("EveryEpoch is not a ModelCheckpoint" in note for note in callback.report.limitations)
    assert callback.report.plan["checkpoint_saves"] == 2 and not callback.session.guard.disabled
