"""The run plan counts exactly the batches, validation runs and checkpoint files Lightning runs."""
from __future__ import annotations

import math

import pytest
import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint

from integrations.lightning_plan import plan_from_trainer
from prenet_callbacks.forecast.plan import INF, CheckpointRule, RunPlan, plan_for_steps
from tests.lightning_helpers import SaveCounter, Stream, TinyModule, loaders, trainer
from torch.utils.data import DataLoader


class PlanProbe(pl.Callback):
    def __init__(self) -> None:
        self.plan: RunPlan | None = None
        self.batches = 0

    def on_train_start(self, trainer, pl_module) -> None:
        self.plan = plan_from_trainer(trainer, pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.batches += 1


CASES = {
    "epochs": dict(max_epochs=3),
    "val_fraction": dict(max_epochs=2, val_check_interval=0.25),
    "val_int": dict(max_epochs=2, val_check_interval=3),
    "val_every_2_epochs": dict(max_epochs=5, check_val_every_n_epoch=2),
    "val_global_batches": dict(max_epochs=3, val_check_interval=7, check_val_every_n_epoch=None),
    "accumulate": dict(max_epochs=2, accumulate_grad_batches=3),
    "max_steps_mid_epoch": dict(max_steps=13, max_epochs=10),
    "max_steps_accumulate": dict(max_steps=7, accumulate_grad_batches=4),
    "limit_train": dict(max_epochs=2, limit_train_batches=4, limit_val_batches=1),
    "no_val": dict(max_epochs=2, limit_val_batches=0),
    "no_sanity": dict(max_epochs=2, num_sanity_val_steps=0),
}
CHECKPOINTS = {
    "every_epoch_last": lambda d: ModelCheckpoint(dirpath=d, save_last=True),
    "every_2_epochs": lambda d: ModelCheckpoint(dirpath=d, every_n_epochs=2),
    "every_4_steps": lambda d: ModelCheckpoint(dirpath=d, every_n_train_steps=4, save_top_k=-1),
    "monitored_epoch_end": lambda d: ModelCheckpoint(dirpath=d, monitor=None, save_on_train_epoch_end=True),
}


def run_and_probe(tmp_path, kwargs, checkpoint=None, module=None):
    probe, saves = PlanProbe(), SaveCounter()
    callbacks = [probe, saves]
    if checkpoint is not None:
        callbacks.append(checkpoint)
    module = module or TinyModule()
    kwargs = dict(kwargs)
    if checkpoint is not None:
        kwargs["enable_checkpointing"] = True
    trainer(tmp_path, callbacks, **kwargs).fit(module, *loaders(train_batches=10, val_batches=3))
    return probe, saves, module


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_counts_match_lightning(tmp_path, case):
    probe, _, module = run_and_probe(tmp_path, CASES[case])
    plan = probe.plan
    assert plan.total_batches == probe.batches
    assert plan.validation_runs_between(0, plan.total_batches) == module.validation_runs
    assert plan.total_steps == module.global_step


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
@pytest.mark.parametrize("case", ["epochs", "val_fraction", "max_steps_mid_epoch", "val_every_2_epochs"])
def test_plan_counts_checkpoint_files(tmp_path, name, case):
    probe, saves, _ = run_and_probe(tmp_path, CASES[case], CHECKPOINTS[name](str(tmp_path / "ckpt")))
    plan = probe.plan
    assert plan.checkpoint_saves_between(0, plan.total_batches) == saves.saves


def test_manual_optimization_with_two_optimizers(tmp_path):
    probe, _, module = run_and_probe(tmp_path, dict(max_steps=12), module=TinyModule(manual=True))
    assert probe.plan.total_batches == probe.batches == 6
    assert probe.plan.total_steps == module.global_step == 12


def test_iterable_dataset_with_max_steps_counts_steps(tmp_path):
    probe = PlanProbe()
    t = trainer(tmp_path, [probe], max_epochs=1, limit_val_batches=0, max_steps=5)
    t.fit(TinyModule(), DataLoader(Stream(), batch_size=4))
    assert probe.plan.total_batches == 5 and probe.plan.known_length


def test_unknown_length_reason():
    plan = RunPlan(total_batches=INF, batches_per_epoch=INF, unknown_reason="iterable")
    assert not plan.known_length and math.isinf(plan.total_steps)
    assert plan.to_dict()["total_batches"] is None


def test_plan_round_trips_through_json_dict():
    plan = RunPlan(total_batches=100, batches_per_epoch=25, max_epochs=4, accumulate=2, val_batches=3,
                   val_check_batch=25, checkpoints=[CheckpointRule("validation_end", files_per_save=2)])
    again = RunPlan.from_dict(plan.to_dict())
    assert again == plan
    assert plan.to_dict()["validation_runs"] == 4 and plan.to_dict()["checkpoint_saves"] == 8


def test_counts_only_what_remains():
    plan = RunPlan(total_batches=100, batches_per_epoch=25, max_epochs=4, val_batches=3, val_check_batch=25)
    assert plan.validation_runs_between(30, 100) == 3
    assert plan.epoch_ends_between(30, 100) == 2  # after epochs 2 and 3; the last end is the fit's end
    assert plan.steps_done_after(30) == 30


def test_plan_for_steps():
    plan = plan_for_steps(50, accumulate=2, start_step=10)
    assert plan.total_steps == 50 and plan.start_batch == 20 and plan.validation_runs_between(0, 100) == 0
