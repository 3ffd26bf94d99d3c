"""Issue 7: resuming from a checkpoint taken mid-run keeps the history and continues the ETA correctly.

One 50-step fit saves a checkpoint every 10 optimizer steps and at the end of each epoch; fits
resumed from them (mid-epoch, on the last batch of an epoch, at an epoch end) must plan the
right number of remaining batches, keep the predictions made before the checkpoint, and plan what
is left of the run from the resumed fit's own pace (judged on the prediction's own figures: how close
an ETA comes to the wall time is measured by `benchmarks/eta_accuracy.py`, never asserted by a test on
a shared machine, where it failed whenever a neighbour changed the pace mid-fit).
"""
from __future__ import annotations

import time

import pytest

import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint

from prenet_callbacks import PreNeTCallback
from tests.lightning_helpers import TinyModule, loaders, trainer
from tests.prediction_checks import assert_plans_what_is_left

FAST = dict(warmup_steps=1, profile_steps=2, timing_steps=3, metrics_every_n_steps=5, targets=None, print_report=False)
BPE = 25  # batches (= optimizer steps) per epoch


class Sleepy(TinyModule):
    def training_step(self, batch, batch_idx):
        time.sleep(0.008)
        return super().training_step(batch, batch_idx)


@pytest.fixture(scope="module")
def first_fit(tmp_path_factory):
    base = tmp_path_factory.mktemp("resume")
    callback = PreNeTCallback(report_path=base / "report.json", **FAST)
    every = ModelCheckpoint(dirpath=base / "steps", every_n_train_steps=10, save_top_k=-1, filename="{step}")
    epochs = ModelCheckpoint(dirpath=base / "epochs", save_top_k=-1, filename="{epoch}")
    pl.seed_everything(0, verbose=False)
    trainer(base, [callback, every, epochs], max_epochs=2, enable_checkpointing=True,
            limit_val_batches=2).fit(Sleepy(), *loaders(train_batches=BPE))
    return base, callback


CHECKPOINTS = {
    "mid_epoch": ("steps/step=30.ckpt", 30),         # epoch 1, batch 5, saved in on_train_batch_end
    "mid_first_epoch": ("steps/step=20.ckpt", 20),   # epoch 0, batch 20
    "last_batch_of_epoch": ("steps/step=50.ckpt", 50),  # the epoch's last batch, before its end
    "epoch_end": ("epochs/epoch=0.ckpt", 25),        # saved at the end of epoch 0
}


@pytest.mark.parametrize("kind", sorted(CHECKPOINTS))
def test_resume_plans_the_remaining_batches_and_predicts_them(first_fit, tmp_path, kind):
    base, first = first_fit
    path, done = CHECKPOINTS[kind]
    callback = PreNeTCallback(report_path=base / "report.json", **FAST)
    pl.seed_everything(0, verbose=False)
    t = trainer(tmp_path, [callback], max_epochs=4, limit_val_batches=2)
    t.fit(Sleepy(), *loaders(train_batches=BPE), ckpt_path=str(base / path))
    report = callback.report
    total = 4 * BPE
    assert report.plan["start_step"] == done
    assert report.plan["start_batch"] == done, "batches done before the checkpoint are miscounted"
    assert t.global_step == total
    assert report.actual["steps"] == total and report.actual["batches"] == total

    # history made before the checkpoint is kept, in order, and the new fit continues it
    before = [p for p in report.predictions if p["fit"] == 1]
    assert before and all(p["at_step"] <= done for p in before)
    assert before == [p for p in first.report.predictions if p["at_step"] <= done][: len(before)]
    resumed = [p for p in report.predictions if p["fit"] == 2]
    assert resumed and resumed[0]["at_step"] > done
    assert [p["at_step"] for p in resumed] == sorted(p["at_step"] for p in resumed)

    # the resumed fit's first prediction plans what is left of the run: the steps after it at the batch time it
    # measured (validation and epoch ends are small here), not a whole run again nor the steps before the checkpoint
    first_prediction = resumed[0]
    assert_plans_what_is_left(first_prediction, report.plan["total_batches"])
    assert first_prediction["predicted_total_s"] == pytest.approx(first_prediction["elapsed_s"] + first_prediction["eta_s"],
                                                                  abs=2e-3)
    actual = report.actual["fit_s"]
    assert report.actual["first_prediction_error"] == pytest.approx(first_prediction["predicted_total_s"] / actual - 1,
                                                                   abs=1e-3)


def test_resume_with_a_different_report_path_still_works(first_fit, tmp_path):
    """A changed report_path changes the callback's state key: no history, but a correct fit."""
    base, _ = first_fit
    callback = PreNeTCallback(report_path=tmp_path / "other.json", **FAST)
    t = trainer(tmp_path, [callback], max_epochs=3, limit_val_batches=2)
    t.fit(Sleepy(), *loaders(train_batches=BPE), ckpt_path=str(base / "steps" / "step=30.ckpt"))
    assert not callback.session.guard.disabled
    assert callback.report.plan["start_step"] == 30 and t.global_step == 3 * BPE
    assert (tmp_path / "other.json").is_file()
