"""The Trainer run plan counts exactly the batches, steps, evaluations and saves real `Trainer` runs do."""
from __future__ import annotations

import math

import pytest

pytest.importorskip("transformers", reason="the transformers extra is not installed")

from torch.utils.data import DataLoader
from transformers import TrainerCallback, TrainerState

from integrations.transformers_plan import TrainerPlan, eval_batches, plan_from_trainer
from tests.hf_helpers import EventCounter, Samples, Stream, arguments, trainer

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


class PlanProbe(TrainerCallback):
    """Builds the plan where the callback does (on_train_begin) and keeps it."""

    def __init__(self) -> None:
        self.plan: TrainerPlan | None = None

    def on_train_begin(self, args, state, control, train_dataloader=None, **kwargs):
        from integrations.transformers import _calling_trainer

        owner = _calling_trainer(self)
        self.plan = plan_from_trainer(args, state, train_dataloader, eval_dataset=owner.eval_dataset)


# 44 samples in batches of 4: 11 batches per epoch (odd, so that accumulation leaves a remainder)
CASES = {
    "fractional_epochs_accumulate": dict(num_train_epochs=1.5, gradient_accumulation_steps=2, save_strategy="epoch"),
    "eval_steps_off_period_end_mid_epoch": dict(max_steps=13, eval_strategy="steps", eval_steps=5,
                                                gradient_accumulation_steps=2),
    "eval_steps_fraction": dict(num_train_epochs=2, eval_strategy="steps", eval_steps=0.3),
    "eval_steps_delay": dict(num_train_epochs=2, eval_strategy="steps", eval_steps=2, eval_delay=7),
    "eval_epoch_accumulate": dict(num_train_epochs=3, eval_strategy="epoch", gradient_accumulation_steps=4),
    "eval_epoch_max_steps_mid_epoch": dict(max_steps=8, eval_strategy="epoch", save_strategy="epoch"),
    "eval_epoch_delay": dict(num_train_epochs=3, eval_strategy="epoch", eval_delay=2),
    "save_steps_limit_off_period_end": dict(max_steps=14, save_strategy="steps", save_steps=4, save_total_limit=1),
    "save_epoch_accumulate_remainder": dict(num_train_epochs=2, save_strategy="epoch", gradient_accumulation_steps=3),
    "eval_and_save_steps_best_model": dict(num_train_epochs=2, eval_strategy="steps", eval_steps=3, save_strategy="steps",
                                           save_steps=6, load_best_model_at_end=True, save_total_limit=2),
    "eval_on_start": dict(num_train_epochs=1, eval_strategy="steps", eval_steps=4, eval_on_start=True),
}


def run_and_probe(tmp_path, settings, *, train=None):
    probe, counter = PlanProbe(), EventCounter()
    t = trainer(tmp_path, [probe, counter], train=train, eval_dataset=Samples(10), **settings)
    t.train()
    return probe.plan, counter, t


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_counts_match_the_trainer(tmp_path, case):
    settings = CASES[case]
    plan, counter, t = run_and_probe(tmp_path, settings)
    assert plan.total_batches == counter.batches
    assert plan.total_steps == counter.steps == t.state.global_step
    planned_evaluations = plan.validation_runs_between(0, plan.total_batches)
    on_start = 1 if settings.get("eval_on_start") else 0  # before the first step: part of the set-up time
    assert planned_evaluations + on_start == counter.evaluations
    assert plan.checkpoint_saves_between(0, plan.total_batches) == counter.saves
    assert plan.to_dict()["validation_runs"] == planned_evaluations
    assert plan.val_batches == (3 if settings.get("eval_strategy") else 0)  # 10 samples in batches of 4


def test_iterable_dataset_with_max_steps(tmp_path):
    plan, counter, _ = run_and_probe(tmp_path, dict(max_steps=7, eval_strategy="epoch", gradient_accumulation_steps=2),
                                     train=Stream())
    assert plan.known_length and plan.total_batches == counter.batches == 14
    assert plan.total_steps == counter.steps == 7
    assert plan.validation_runs_between(0, plan.total_batches) == counter.evaluations == 1


def test_save_best_is_an_upper_bound(tmp_path):
    plan, counter, _ = run_and_probe(tmp_path, dict(num_train_epochs=2, eval_strategy="steps", eval_steps=3,
                                                    save_strategy="best", metric_for_best_model="loss"))
    planned = plan.checkpoint_saves_between(0, plan.total_batches)
    assert planned == counter.evaluations and 1 <= counter.saves <= planned


@pytest.mark.parametrize("resume_at", [6, 11])
def test_resumed_run_counts_what_remains(tmp_path, resume_at):
    settings = dict(num_train_epochs=3, gradient_accumulation_steps=2, eval_strategy="steps", eval_steps=4,
                    save_strategy="steps", save_steps=resume_at)
    run_and_probe(tmp_path, settings)
    probe, counter = PlanProbe(), EventCounter()
    t = trainer(tmp_path, [probe, counter], eval_dataset=Samples(10), **settings)
    t.train(resume_from_checkpoint=str(tmp_path / f"checkpoint-{resume_at}"))
    plan = probe.plan
    assert counter.first_step == plan.start_step == resume_at
    assert plan.total_batches - plan.start_batch == counter.batches
    assert plan.total_steps - plan.start_step == counter.steps
    assert plan.validation_runs_between(plan.start_batch, plan.total_batches) == counter.evaluations
    assert plan.checkpoint_saves_between(plan.start_batch, plan.total_batches) == counter.saves
    assert plan.start_epoch == resume_at // 6


def test_unknown_length_without_max_steps_gives_a_reason(tmp_path):
    """A loader with no length and no max_steps (the Trainer itself refuses to start such a run)."""
    state = TrainerState()
    state.max_steps, state.global_step = -1, 0
    plan = plan_from_trainer(arguments(tmp_path), state, DataLoader(Stream(), batch_size=4))
    assert not plan.known_length and math.isinf(plan.total_steps)
    assert "no length" in plan.unknown_reason and "max_steps" in plan.unknown_reason
    assert plan.to_dict()["total_steps"] is None and plan.to_dict()["validation_runs"] == 0


def test_eval_batches_per_process(tmp_path):
    args = arguments(tmp_path, per_device_eval_batch_size=4)
    assert eval_batches(Samples(10), args) == 3
    assert eval_batches({"a": Samples(10), "b": Samples(4)}, args) == 4
    assert eval_batches(None, args) == 0
    assert eval_batches(Stream(), args) is None
    args = arguments(tmp_path, per_device_eval_batch_size=4, dataloader_drop_last=True)
    assert eval_batches(Samples(10), args) == 2
