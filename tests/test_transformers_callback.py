"""`PreNeTTrainerCallback` on real `transformers.Trainer` runs: report, metrics, resume, bad input, faults."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch

jsonschema = pytest.importorskip("jsonschema", reason="the test extra (jsonschema) is not installed")

pytest.importorskip("transformers", reason="the transformers extra is not installed")

from transformers.integrations import TensorBoardCallback  # noqa: E402

import integrations.transformers as hf_module  # noqa: E402
from prenet_callbacks import PreNeTCallback, PreNeTTrainerCallback  # noqa: E402
from prenet_callbacks.report import Report  # noqa: E402
from prenet_callbacks.session.machine import PreNeTWarning  # noqa: E402
from tests.hf_helpers import EventCounter, Samples, TinyRegressor, trainer, weights_digest  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")
SCHEMA = json.loads((Path(__file__).parents[1] / "prenet_callbacks" / "schemas" / "prenet-report-2.schema.json").read_text())
# warm-up 1, profile 1, 3 timed steps: the first prediction after step 5
FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=4, targets=[], print_report=False)
# 44 samples, batches of 4, accumulation 2: 6 optimizer steps per epoch, 18 in 3 epochs
RUN = dict(num_train_epochs=3, gradient_accumulation_steps=2, eval_strategy="steps", eval_steps=5,
           save_strategy="epoch")


class FakeWriter:
    """Stands in for a TensorBoard SummaryWriter: records scalars."""

    def __init__(self) -> None:
        self.scalars: list[tuple[str, float, int]] = []

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, value, step))

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


class RecordingTensorBoard(TensorBoardCallback):
    """The Trainer's TensorBoard reporting callback, writing to a `FakeWriter` (tensorboard is not installed)."""

    def __init__(self) -> None:  # noqa: D107 - skips the check that tensorboard is installed
        self.tb_writer = FakeWriter()
        self._SummaryWriter = None
        self.logging_dir = None


def run(tmp_path: Path, callback=None, *, extra=(), **settings):
    """A seeded run; returns the trainer, the PreNeT warnings and the event counts."""
    counter = EventCounter()
    callbacks = [*extra, counter] + ([callback] if callback is not None else [])
    options = dict(RUN)
    options.update(settings)
    t = trainer(tmp_path, callbacks, model=TinyRegressor(seed=0), eval_dataset=Samples(12), **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.train()
    return t, [w for w in caught if issubclass(w.category, PreNeTWarning)], counter


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    t, _, _ = run(tmp_path_factory.mktemp("reference"))
    return weights_digest(t.model), t.state.global_step


def test_report_of_a_trainer_run(tmp_path, reference, capsys):
    callback = PreNeTTrainerCallback(**dict(FAST, print_report=True))
    tensorboard = RecordingTensorBoard()
    writer = tensorboard.tb_writer  # the Trainer closes and drops it at the end
    t, ours, counter = run(tmp_path, callback, extra=[tensorboard])
    assert ours == [] and not callback.session.guard.disabled
    report = callback.report
    assert report.plan["total_steps"] == 18 and report.plan["validation_runs"] == counter.evaluations == 4
    assert report.plan["checkpoint_saves"] == counter.saves == 3
    assert report.actual["steps"] == 18 and report.actual["batches"] == 33
    first = report.first_prediction
    assert first is not None and first["at_step"] <= 6 and first["predicted_total_s"] > 0
    measured = report.measured
    assert measured["validation"]["runs"] >= 2 and measured["checkpoint"]["files"] == 3
    phases = measured["step_phases"]
    assert phases["forward_s"] > 0 and phases["backward_s"] > 0 and phases["optimizer_s"] > 0
    assert measured["layers"], "the model's layers are profiled"
    current = report.current
    assert current["framework"] == "transformers" and current["devices"] == 1
    assert current["precision"] == "32-true" and current["optimizer"] == "adamw" and current["batch_size"] == 4
    # the main process prints one panel and writes the report in output_dir
    out = capsys.readouterr().out
    assert out.count("Predicted run time") == 1 and out.count("PreNeT: the run took") == 1
    saved = Report.load(tmp_path / "prenet_report.json")
    assert saved.actual == json.loads(report.to_json())["actual"]
    jsonschema.validate(json.loads((tmp_path / "prenet_report.json").read_text()), SCHEMA)
    # the run's life: fresh, completed, with the time from trainer.train() to on_train_begin in it
    life = report.run
    assert life["framework"] == "transformers" and life["start"] == "fresh"
    assert life["ended"]["reason"] == "completed" and report.actual["ended"] == "completed"
    assert life["startup_s"] is not None and 0 <= life["startup_s"] < report.actual["fit_s"]
    assert life["limits"]["max_epochs"] == 3 and life["limits"]["early_stopping"] is False
    assert report.actual["first_prediction_error"] is not None
    # prenet/* metrics reach the reporting callbacks, at the Trainer's step
    tags = {tag for tag, _, _ in writer.scalars}
    assert {"train/prenet/eta_s", "train/prenet/predicted_total_s", "train/prenet/step_s"} <= tags
    assert all(step <= 18 for tag, _, step in writer.scalars if "prenet" in tag)
    # nothing left behind, and training computed exactly what it computes without PreNeT
    assert not t.model._forward_hooks and not t.model._forward_pre_hooks
    assert torch._C._len_torch_dispatch_stack() == 0
    assert (weights_digest(t.model), t.state.global_step) == reference


def test_eval_on_start_measures_the_evaluation_before_training(tmp_path):
    callback = PreNeTTrainerCallback(**FAST)
    run(tmp_path, callback, eval_on_start=True, num_train_epochs=1)
    measured = callback.report.measured
    assert measured["validation"]["sanity_per_batch_s"] > 0
    assert callback.report.plan["validation_runs"] == 2  # steps 5 and the last (6); the first is set-up


def test_evaluations_after_training_are_not_part_of_the_run(tmp_path):
    callback = PreNeTTrainerCallback(**FAST)
    t, _, _ = run(tmp_path, callback, num_train_epochs=1)
    actual = dict(callback.report.actual)
    t.evaluate()
    t.predict(Samples(8))
    assert callback.report.actual == actual and not callback.session.guard.disabled


def test_after_training_the_callback_lets_go_of_the_model_and_optimizer(tmp_path):
    """A callback kept after its Trainer is dropped (reused, or read for its report) holds none of the run's tensors."""
    import gc
    import weakref

    callback = PreNeTTrainerCallback(**FAST)
    t, _, _ = run(tmp_path, callback, num_train_epochs=1)
    model, optimizer = weakref.ref(t.model), weakref.ref(t.optimizer)
    del t
    gc.collect()   # the Trainer's own objects refer to each other
    assert model() is None and optimizer() is None
    assert callback.report.actual["steps"] > 0


def test_resumed_run_plans_what_remains(tmp_path):
    run(tmp_path, None, save_strategy="steps", save_steps=7)
    callback = PreNeTTrainerCallback(**FAST)
    counter = EventCounter()
    t = trainer(tmp_path, [counter, callback], model=TinyRegressor(seed=0), eval_dataset=Samples(12),
                **dict(RUN, save_strategy="steps", save_steps=7))
    t.train(resume_from_checkpoint=str(tmp_path / "checkpoint-7"))
    report = callback.report
    assert report.run["start"] == "resumed" and report.run["ended"]["reason"] == "completed"
    assert report.plan["start_step"] == 7 and report.plan["total_steps"] == 18
    assert report.actual["steps"] == 18 and report.actual["batches"] == 33
    assert report.plan["validation_runs"] == counter.evaluations
    assert report.plan["checkpoint_saves"] == counter.saves
    assert report.first_prediction["at_step"] > 7


# -- never break the run ---------------------------------------------------------------------------
def _fail_plan(monkeypatch):
    monkeypatch.setattr(hf_module, "plan_from_trainer", lambda *a, **k: 1 / 0)


def _fail_mid_run(monkeypatch):
    from prenet_callbacks.session.machine import PredictionSession
    from prenet_callbacks.session.machine import guarded as session_guarded

    original = PredictionSession.batch_end
    calls = {"n": 0}

    def broken(self, **kwargs):
        calls["n"] += 1
        if calls["n"] == 9:
            raise RuntimeError("injected fault in a step")
        return original(self, **kwargs)

    # the session's own guard takes the fault, as for a fault deep inside its step bookkeeping
    monkeypatch.setattr(PredictionSession, "batch_end", session_guarded(broken))


def _fail_in_profiler(monkeypatch):
    from prenet_callbacks.measure.profiling import ModuleProfiler

    def broken(self, *args):
        raise RuntimeError("injected profiler fault")

    monkeypatch.setattr(ModuleProfiler, "end_step", broken)


def _fail_in_evaluation(monkeypatch):
    from prenet_callbacks.session.machine import PredictionSession

    monkeypatch.setattr(PredictionSession, "validation_start", lambda self, sanity=False: 1 / 0)


def _fail_writing_the_report(monkeypatch):
    from prenet_callbacks.report import Report as R

    def broken(self, path, previous=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(R, "save_if_changed", broken)


FAULTS = {"plan": _fail_plan, "mid_run": _fail_mid_run, "evaluation": _fail_in_evaluation,
          "report_write": _fail_writing_the_report}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_an_internal_failure_warns_once_and_changes_nothing(tmp_path, reference, monkeypatch, fault):
    FAULTS[fault](monkeypatch)
    callback = PreNeTTrainerCallback(**FAST)
    t, ours, counter = run(tmp_path, callback)
    assert len(ours) == 1, [str(w.message) for w in ours]
    assert callback.session.guard.disabled
    assert (weights_digest(t.model), t.state.global_step) == reference
    assert counter.evaluations == 4 and counter.saves == 3
    assert not t.model._forward_hooks and torch._C._len_torch_dispatch_stack() == 0


def test_a_profiler_failure_keeps_predicting_from_step_timing(tmp_path, reference, monkeypatch):
    _fail_in_profiler(monkeypatch)
    callback = PreNeTTrainerCallback(**FAST)
    t, ours, _ = run(tmp_path, callback)
    assert len(ours) == 1 and "could not profile layers" in str(ours[0].message)
    assert not callback.session.guard.disabled and callback.report.first_prediction is not None
    assert any("per-module profile unavailable" in note for note in callback.report.limitations)
    assert (weights_digest(t.model), t.state.global_step) == reference


@pytest.mark.parametrize("error,at_call", [(ValueError("user bug"), 7), (KeyboardInterrupt(), 1)],
                         ids=["user_error_after_the_window", "ctrl_c_inside_the_profiling_window"])
def test_exceptions_pass_through_unchanged_and_leave_nothing_behind(tmp_path, error, at_call):
    class Exploding(TinyRegressor):
        def forward(self, x, labels=None):
            if self.training and torch.is_grad_enabled() and getattr(self, "calls", 0) >= at_call:
                raise error
            self.calls = getattr(self, "calls", 0) + 1
            return super().forward(x, labels)

    callback = PreNeTTrainerCallback(**FAST)
    model = Exploding()
    t = trainer(tmp_path, [callback], model=model)
    with pytest.raises(type(error)):
        t.train()
    assert not callback.session.guard.disabled, "a user error is the user's: PreNeT did not fail"
    ended = callback.report.run["ended"]
    assert ended["reason"] == ("interrupted" if isinstance(error, KeyboardInterrupt) else "failed")
    assert callback.report.actual["first_prediction_error"] is None
    assert torch._C._len_torch_dispatch_stack() == 0, "no profiler mode left on the dispatch stack"
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    assert "training_step" not in t.__dict__ and "train" not in t.__dict__


def test_early_stopping_ends_the_run_as_stopped_early(tmp_path):
    from transformers import EarlyStoppingCallback

    class Stalled(TinyRegressor):
        def forward(self, x, labels=None):
            result = super().forward(x, labels)
            if not self.training and "loss" in result:
                result["loss"] = result["loss"] * 0 + 1.0  # the evaluation loss never improves
            return result

    callback = PreNeTTrainerCallback(**FAST)
    stopper = EarlyStoppingCallback(early_stopping_patience=1)
    t = trainer(tmp_path, [stopper, callback], model=Stalled(), eval_dataset=Samples(12),
                **dict(RUN, num_train_epochs=10, eval_steps=3, save_strategy="steps", save_steps=3,
                       load_best_model_at_end=True, metric_for_best_model="loss"))
    t.train()
    report = callback.report
    assert t.state.global_step < 60
    assert report.run["limits"]["early_stopping"] is True
    assert report.run["ended"]["reason"] == "stopped_early" and "EarlyStoppingCallback" in report.run["ended"]["detail"]
    assert report.actual["steps"] == t.state.global_step and report.actual["first_prediction_error"] is None


def test_a_callback_added_after_construction_still_works(tmp_path):
    callback = PreNeTTrainerCallback(**FAST)
    t = trainer(tmp_path, [], model=TinyRegressor(seed=0), eval_dataset=Samples(12), **RUN)
    t.add_callback(callback)
    t.train()
    report = callback.report
    assert report.run["ended"]["reason"] == "completed" and report.run["startup_s"] is None
    assert any("trainer.train() and on_train_begin" in note for note in report.limitations)
    assert "training_step" not in t.__dict__


# -- bad input ---------------------------------------------------------------------------------------
BAD = [dict(warmup_steps=-1), dict(profile_steps=0), dict(timing_steps=2.5), dict(metrics_every_n_steps="10"),
       dict(report_path="runs/"), dict(targets=["not-a-gpu-xyz"]), dict(targets=[""]), dict(report_path="")]


@pytest.mark.parametrize("kwargs", BAD, ids=lambda k: next(iter(k)))
def test_bad_arguments_fail_at_construction_like_the_lightning_callback(kwargs):
    with pytest.raises(ValueError) as ours:
        PreNeTTrainerCallback(**kwargs)
    with pytest.raises(ValueError) as lightning:
        PreNeTCallback(**kwargs)
    assert str(ours.value) == str(lightning.value)


def test_a_missing_predictor_fails_at_construction(tmp_path):
    with pytest.raises(ValueError, match="predictor"):
        PreNeTTrainerCallback(predictor=tmp_path / "nothing_here")


def test_max_steps_minus_one_with_an_unsized_stream_is_refused_by_the_trainer_itself(tmp_path):
    """The Trainer refuses this run before any callback runs (the plan's rate-only case is in test_transformers_plan)."""
    from tests.hf_helpers import Stream

    callback = PreNeTTrainerCallback(**FAST)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="max_steps"):
            trainer(tmp_path, [callback], train=Stream(), max_steps=-1)
    assert not [w for w in caught if issubclass(w.category, PreNeTWarning)]
    assert callback.report.actual is None and not callback.session.guard.disabled


def test_the_trainer_example_runs(tmp_path):
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "examples" / "hf_trainer.py"
    spec = importlib.util.spec_from_file_location("hf_trainer_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    report = example.main(["--steps", "14", "--eval-steps", "5", "--save-steps", "7", "--width", "32", "--batch-size", "4",
                           "--targets", "--out", str(tmp_path)])
    assert report["actual"]["steps"] == 14 and report["plan"]["validation_runs"] == 3
    assert report["plan"]["checkpoint_saves"] == 2 and report["current"]["framework"] == "transformers"
    assert Report.load(tmp_path / "prenet_report.json").first_prediction is not None
