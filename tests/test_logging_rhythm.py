"""``prenet/*`` metrics follow the Trainer's logging rhythm, in its rows, unless ``metrics_every_n_steps`` is set.

Real Lightning fits (a recording logger keeps every row Lightning writes) and a real HF Trainer (its
TensorBoard reporting callback records every scalar). The old keyword, ``log_every_n_steps``, still works
with a DeprecationWarning that names the new one.
"""
from __future__ import annotations

import warnings

import pytest
import torch

from integrations.loop import Tracker
from prenet_callbacks import PreNeTCallback, PreNeTTrainerCallback
from tests.hf_helpers import Samples, trainer as hf_trainer
from tests.lightning_helpers import RecordingLogger, TinyModule, loaders, trainer
from tests.test_transformers_callback import RecordingTensorBoard

FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, targets=[], print_report=False, html=False)
PRENET = {"prenet/eta_s", "prenet/predicted_total_s", "prenet/step_s"}


class LossModule(TinyModule):
    """Logs its loss at every step, as most modules do."""

    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        self.log("train_loss", loss)
        return loss


def _fit(tmp_path, callback, **trainer_kwargs) -> RecordingLogger:
    logger = RecordingLogger()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer(tmp_path, [callback], max_epochs=2, logger=logger, **trainer_kwargs).fit(
            LossModule(), *loaders(train_batches=30))
    return logger


def test_lightning_metrics_ride_in_the_trainers_rows(tmp_path):
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
    logger = _fit(tmp_path, callback, log_every_n_steps=4)
    train_rows = [(step, row) for step, row in logger.metrics if "train_loss" in row]
    ours = [(step, row) for step, row in logger.metrics if PRENET & set(row)]
    assert ours, "metrics were logged once the first prediction was made"
    first = callback.report.first_prediction["at_step"]
    # only in rows Lightning writes anyway (every 4 steps), each with the user's metrics and nothing else added
    assert all(row.keys() == PRENET | {"train_loss", "epoch"} for _, row in ours)
    assert all((step + 1) % 4 == 0 for step, _ in ours)
    assert len(ours) == len([s for s, _ in train_rows if s + 1 >= first])
    assert len(logger.metrics) == len([r for r in logger.metrics if "train_loss" in r[1] or "val_loss" in r[1]])


def test_lightning_own_interval_writes_rows_of_its_own(tmp_path):
    callback = PreNeTCallback(report_path=tmp_path / "r.json", metrics_every_n_steps=7, **FAST)
    logger = _fit(tmp_path, callback, log_every_n_steps=4)
    ours = [(step, row) for step, row in logger.metrics if PRENET & set(row)]
    assert ours and all(set(row) == PRENET for _, row in ours)      # no epoch, no user metric
    assert [step for step, _ in ours] == [s for s in range(7, 61, 7) if s >= callback.report.first_prediction["at_step"]]


def test_hf_metrics_when_the_trainer_logs(tmp_path):
    tensorboard = RecordingTensorBoard()
    writer = tensorboard.tb_writer
    callback = PreNeTTrainerCallback(report_path=tmp_path / "r.json", **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf_trainer(tmp_path, [tensorboard, callback], train=Samples(160), logging_steps=6).train()
    loss_steps = sorted({step for tag, _, step in writer.scalars if tag == "train/loss"})
    ours = sorted({step for tag, _, step in writer.scalars if tag == "train/prenet/eta_s"})
    first = callback.report.first_prediction["at_step"]
    assert loss_steps[:3] == [6, 12, 18]
    assert ours and ours == [s for s in loss_steps if s >= first]


def test_the_old_keyword_warns_and_still_works(tmp_path):
    with pytest.warns(DeprecationWarning, match="renamed metrics_every_n_steps"):
        callback = PreNeTCallback(log_every_n_steps=7)
    assert callback.config.metrics_every_n_steps == 7
    with pytest.warns(DeprecationWarning, match="renamed metrics_every_n_steps"):
        hf = PreNeTTrainerCallback(log_every_n_steps=9)
    assert hf.config.metrics_every_n_steps == 9
    assert PreNeTCallback().config.metrics_every_n_steps is None          # the Trainer's rhythm by default
    model = torch.nn.Linear(2, 2)
    with pytest.warns(DeprecationWarning, match="renamed metrics_every_n_steps"):
        tracker = Tracker(total_steps=10, model=model, log_every_n_steps=3, print_report=False, html=False,
                          report_path=tmp_path / "t.json", targets=[])
    assert tracker.run.session.config.metrics_every_n_steps == 3
    tracker.close()
    own = Tracker(total_steps=10, model=model, print_report=False, html=False, report_path=tmp_path / "u.json",
                  targets=[])
    assert own.run.session.config.metrics_every_n_steps == 50        # a loop keeps an interval of its own
    own.close()
