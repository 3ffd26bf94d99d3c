"""`PreNeTTrainerCallback.attach(trainer)`, the explicit Trainer handle, and the guards it installs
putting back exactly what the Trainer had (a user's own patch of ``train`` / ``training_step`` included)."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers", reason="the transformers extra is not installed")

import integrations.transformers as hf_module
from prenet_callbacks import PreNeTTrainerCallback
from tests.hf_helpers import EventCounter, Samples, TinyRegressor, trainer

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")
FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=4, targets=[], print_report=False)
RUN = dict(num_train_epochs=2, eval_strategy="steps", eval_steps=4)


def counting_patch(t, name):
    """A user's own patch of ``t.<name>`` on the instance; returns it and its call list."""
    original, calls = getattr(t, name), []

    def users_patch(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    t.__dict__[name] = users_patch
    return users_patch, calls


def test_attach_after_construction_serves_that_trainer(tmp_path):
    counter = EventCounter()
    t = trainer(tmp_path, [counter], model=TinyRegressor(), eval_dataset=Samples(12), **RUN)
    callback = PreNeTTrainerCallback(**FAST)
    assert callback.attach(t) is callback
    t.train()
    report = callback.report
    assert report.run["ended"]["reason"] == "completed" and report.run["startup_s"] is not None
    assert report.plan["validation_runs"] == counter.evaluations > 0
    assert not any("not found" in note or "on_train_begin" in note for note in report.limitations)
    assert "train" not in t.__dict__ and "training_step" not in t.__dict__


def test_attach_when_already_a_callback_adds_and_guards_nothing_twice(tmp_path):
    callback = PreNeTTrainerCallback(**FAST)
    t = trainer(tmp_path, [callback])
    guard = t.__dict__["train"]  # installed at on_init_end, from the calling Trainer
    callback.attach(t)
    assert t.__dict__["train"] is guard
    assert sum(cb is callback for cb in t.callback_handler.callbacks) == 1
    t.train()
    assert callback.report.run["ended"]["reason"] == "completed" and "train" not in t.__dict__


def test_attach_refuses_what_is_not_a_trainer():
    with pytest.raises(TypeError, match="transformers.Trainer"):
        PreNeTTrainerCallback(**FAST).attach(object())


def test_a_users_train_patch_survives_attach(tmp_path):
    t = trainer(tmp_path, [])
    users_train, calls = counting_patch(t, "train")
    callback = PreNeTTrainerCallback(**FAST).attach(t)
    t.train()
    assert t.__dict__["train"] is users_train and calls == [1]  # put back, not deleted
    assert callback.report.run["ended"]["reason"] == "completed"


def test_a_users_training_step_patch_survives_the_step_guard(tmp_path):
    t = trainer(tmp_path, [])
    users_step, calls = counting_patch(t, "training_step")
    callback = PreNeTTrainerCallback(**FAST)
    t.add_callback(callback)  # no handle on train(): each training step is guarded instead
    t.train()
    assert t.__dict__["training_step"] is users_step and len(calls) == 22
    assert callback.report.run["ended"]["reason"] == "completed"


def test_a_patch_made_on_top_of_our_guard_is_left_in_place(tmp_path):
    callback = PreNeTTrainerCallback(**FAST)
    t = trainer(tmp_path, [callback])
    users_train, calls = counting_patch(t, "train")
    t.train()
    assert t.__dict__["train"] is users_train and calls == [1]
    assert callback.report.run["ended"]["reason"] == "completed"


def test_without_a_trainer_handle_the_run_goes_on_and_says_how_to_give_one(tmp_path, monkeypatch):
    monkeypatch.setattr(hf_module, "_calling_trainer", lambda callback: None)
    callback = PreNeTTrainerCallback(**FAST)
    t = trainer(tmp_path, [callback], eval_dataset=Samples(12), **RUN)
    t.train()
    assert callback.report.run["ended"]["reason"] == "completed" and not callback.session.guard.disabled
    assert any("callback.attach(trainer)" in note for note in callback.report.limitations)
