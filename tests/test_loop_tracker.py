"""`Tracker` on real plain-PyTorch and `accelerate` loops: plan, report, metrics, faults, bad input."""
from __future__ import annotations

import json
import time
import types
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

from integrations.loop import Tracker
from prenet_callbacks import PreNeTCallback
from prenet_callbacks.report import Report
from prenet_callbacks.session.machine import PredictionSession, PreNeTWarning

SCHEMA = json.loads((Path(__file__).parents[1] / "prenet_callbacks" / "schemas" / "prenet-report-2.schema.json").read_text())
FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=4, targets=[], print_report=False)


def make_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(inplace=True), nn.Dropout(0.2), nn.Linear(32, 1))


class Loop:
    """A hand-written loop: train, evaluate every `eval_every` steps, save every `save_every` steps."""

    def __init__(self, steps: int, *, eval_every: int = 0, save_every: int = 0, accumulate: int = 1, seed: int = 0):
        self.steps, self.eval_every, self.save_every, self.accumulate = steps, eval_every, save_every, accumulate
        self.model = make_model(seed)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-2)
        self.evaluations = self.saves = 0

    def run(self, tracker: Tracker | None, tmp_path, *, stop_at: int | None = None) -> None:
        torch.manual_seed(1)
        for step in range(1, self.steps + 1):
            for _ in range(self.accumulate):
                x = torch.randn(8, 16)
                loss = self.model(x).pow(2).mean() / self.accumulate
                loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            if tracker is not None:
                tracker.step()
            if self.eval_every and step % self.eval_every == 0:
                with (tracker.validation() if tracker else _nothing()), torch.no_grad():
                    self.model.eval()
                    for _ in range(3):
                        self.model(torch.randn(8, 16))
                    self.model.train()
                    self.evaluations += 1
            if self.save_every and step % self.save_every == 0:
                with tracker.checkpoint() if tracker else _nothing():
                    torch.save(self.model.state_dict(), tmp_path / "ckpt.pt")
                    self.saves += 1
            if stop_at == step:
                break

    def weights(self) -> list[torch.Tensor]:
        return [p.detach().clone() for p in self.model.parameters()]


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def hooks_left(model: nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    loop = Loop(24, eval_every=5, save_every=8)
    loop.run(None, tmp_path_factory.mktemp("ref"))
    return loop.weights()


def test_a_plain_loop_gets_the_whole_report(tmp_path, reference):
    loop = Loop(24, eval_every=5, save_every=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PreNeTWarning)
        with Tracker(total_steps=24, model=loop.model, optimizer=loop.optimizer, eval_every=5, eval_batches=3,
                     checkpoint_every=8, report_path=tmp_path / "report.json", **FAST) as tracker:
            loop.run(tracker, tmp_path)
    report = tracker.report
    assert report.plan["total_steps"] == 24
    assert report.plan["validation_runs"] == loop.evaluations == 4
    assert report.plan["checkpoint_saves"] == loop.saves == 3
    assert report.actual["steps"] == 24 and tracker.steps == 24
    assert report.first_prediction["at_step"] <= 6
    measured = report.measured
    assert measured["validation"]["runs"] >= 3 and measured["checkpoint"]["files"] == 3
    phases = measured["step_phases"]
    assert phases["forward_s"] > 0 and phases["backward_s"] > 0 and phases["optimizer_s"] > 0
    assert measured["layers"]
    assert report.current["framework"] == "loop" and report.current["devices"] == 1
    assert report.run["framework"] == "loop" and report.run["start"] == "fresh"
    assert report.run["ended"]["reason"] == "completed" and report.actual["first_prediction_error"] is not None
    assert report.run["limits"]["max_steps"] == 24
    assert Report.load(tmp_path / "report.json").actual == report.actual
    jsonschema = pytest.importorskip("jsonschema", reason="the test extra (jsonschema) is not installed")
    jsonschema.validate(json.loads((tmp_path / "report.json").read_text()), SCHEMA)
    assert hooks_left(loop.model) == 0 and not loop.optimizer._optimizer_step_pre_hooks
    assert all(torch.equal(a, b) for a, b in zip(loop.weights(), reference)), "the tracker changed the training"


def test_evaluation_is_timed_apart_from_steps(tmp_path):
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    tracker = Tracker(total_steps=15, model=model, optimizer=optimizer, eval_every=3, report_path=tmp_path / "r.json",
                      **FAST)
    for step in range(1, 16):
        with tracker.train_step():
            model(torch.randn(4, 16)).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
        if step % 3 == 0:
            with tracker.validation():
                time.sleep(0.05)  # a slow evaluation: were it counted as training, the step time would show it
    tracker.close()
    measured = tracker.report.measured
    assert measured["validation"]["mean_s"] >= 0.05 and measured["batch_s"] < 0.05
    assert tracker.report.plan["validation_runs"] == 5
    assert any("eval_batches" in note for note in tracker.report.limitations)


def test_without_total_steps_only_a_rate(tmp_path):
    loop = Loop(12)
    tracker = Tracker(model=loop.model, optimizer=loop.optimizer, report_path=tmp_path / "r.json", **FAST)
    loop.run(tracker, tmp_path)
    report = tracker.close()
    latest = report.latest_prediction
    assert latest["predicted_total_s"] is None and latest["step_s"] > 0
    assert "total_steps=None" in latest["note"]
    assert report.plan["total_steps"] is None and report.actual["steps"] == 12
    assert report.run["ended"]["reason"] == "completed"


def test_without_a_model_steps_are_still_timed(tmp_path):
    loop = Loop(12)
    tracker = Tracker(total_steps=12, report_path=tmp_path / "r.json", **FAST)
    loop.run(tracker, tmp_path)
    report = tracker.close()
    assert report.first_prediction is not None and report.actual["steps"] == 12
    assert "layers" not in report.measured
    assert any("no model given" in note for note in report.limitations)


def test_stopping_early_and_closing_twice(tmp_path):
    loop = Loop(100)
    tracker = Tracker(total_steps=100, model=loop.model, optimizer=loop.optimizer, report_path=tmp_path / "r.json",
                      **FAST)
    loop.run(tracker, tmp_path, stop_at=10)
    report = tracker.close()
    assert report.actual["steps"] == 10 and report.run["ended"]["reason"] == "stopped_early"
    assert "10 of 100" in report.run["ended"]["detail"] and report.actual["first_prediction_error"] is None
    assert report.actual["predicted_for_done_work_s"] > 0
    assert tracker.close() is report and hooks_left(loop.model) == 0
    tracker.step()  # after close: nothing happens
    assert report.actual["steps"] == 10


def test_resumed_loop_plans_what_remains(tmp_path):
    loop = Loop(10)
    tracker = Tracker(total_steps=30, start_step=20, model=loop.model, optimizer=loop.optimizer,
                      report_path=tmp_path / "r.json", **FAST)
    loop.run(tracker, tmp_path)
    report = tracker.close()
    assert report.plan["start_step"] == 20 and report.actual["steps"] == 30
    assert report.run["start"] == "attached_late" and report.run["ended"]["reason"] == "completed"


def test_accumulation_cycles_with_accelerate(tmp_path):
    accelerate = pytest.importorskip("accelerate", reason="the transformers extra (accelerate) is not installed")
    from accelerate.tracking import GeneralTracker

    class Recorder(GeneralTracker):
        name = "recorder"
        requires_logging_directory = False

        def __init__(self):
            super().__init__()
            self.logged = []

        @property
        def tracker(self):
            return self

        def store_init_configuration(self, values):
            pass

        def log(self, values, step=None, **kwargs):
            self.logged.append((dict(values), step))

    recorder = Recorder()
    accelerator = accelerate.Accelerator(cpu=True, gradient_accumulation_steps=2, log_with=[recorder])
    accelerator.init_trackers("prenet-test")
    model = make_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model, optimizer = accelerator.prepare(model, optimizer)
    tracker = Tracker(total_steps=12, model=model, optimizer=optimizer, accelerator=accelerator,
                      report_path=tmp_path / "r.json", **FAST)
    for _ in range(24):  # 24 micro-batches, an optimizer step every 2
        with accelerator.accumulate(model):
            accelerator.backward(model(torch.randn(8, 16)).pow(2).mean())
            optimizer.step()
            optimizer.zero_grad()
            tracker.step()  # called on every micro-batch: only the cycle ends count
    report = tracker.close()
    assert report.actual["steps"] == 12 and report.current["precision"] == "32-true"
    assert report.current["devices"] == 1 and report.current["framework"] == "loop"
    assert any("prenet/step_s" in values for values, _ in recorder.logged)
    assert hooks_left(model) == 0


def test_mixed_precision_and_world_size_come_from_the_accelerator(tmp_path):
    fake = types.SimpleNamespace(num_processes=4, mixed_precision="bf16", device=torch.device("cpu"),
                                 is_main_process=False, sync_gradients=True, trackers=[])
    tracker = Tracker(total_steps=5, accelerator=fake, report_path=tmp_path / "r.json", **FAST)
    assert tracker.report.current["precision"] == "bf16-mixed" and tracker.report.current["devices"] == 4
    for _ in range(5):
        tracker.step()
    tracker.close()
    assert not (tmp_path / "r.json").exists(), "only the main process writes"


# -- never break the loop ---------------------------------------------------------------------------
def test_an_internal_failure_warns_once_and_changes_nothing(tmp_path, reference, monkeypatch):
    original = PredictionSession.before_optimizer_step
    calls = {"n": 0}

    def broken(self):
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("injected fault")
        return original(self)

    monkeypatch.setattr(PredictionSession, "before_optimizer_step", broken)
    loop = Loop(24, eval_every=5, save_every=8)
    with pytest.warns(PreNeTWarning, match="injected fault") as caught:
        tracker = Tracker(total_steps=24, model=loop.model, optimizer=loop.optimizer, eval_every=5,
                          checkpoint_every=8, report_path=tmp_path / "r.json", **FAST)
        loop.run(tracker, tmp_path)
        tracker.close()
    assert len([w for w in caught if issubclass(w.category, PreNeTWarning)]) == 1
    assert tracker.run.session.guard.disabled
    assert hooks_left(loop.model) == 0 and not loop.optimizer._optimizer_step_pre_hooks
    assert torch._C._len_torch_dispatch_stack() == 0
    assert all(torch.equal(a, b) for a, b in zip(loop.weights(), reference))


def test_user_errors_pass_through_blocks(tmp_path):
    tracker = Tracker(total_steps=5, report_path=tmp_path / "r.json", **FAST)
    with pytest.raises(KeyError):
        with tracker.validation():
            raise KeyError("user bug")
    assert tracker.steps == 0 and not tracker.run.session.guard.disabled and tracker.run.in_block == 0
    tracker.close()


def test_an_exception_out_of_a_step_ends_the_run_inside_the_profiling_window(tmp_path):
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    tracker = Tracker(total_steps=20, model=model, optimizer=optimizer, report_path=tmp_path / "r.json", **FAST)
    with pytest.raises(KeyboardInterrupt):
        for step in range(20):
            with tracker.train_step():
                model(torch.randn(4, 16)).sum().backward()
                if step == 1:  # the profiled step: the profiler's mode and hooks are in place
                    raise KeyboardInterrupt
                optimizer.step()
                optimizer.zero_grad()
    assert torch._C._len_torch_dispatch_stack() == 0 and hooks_left(model) == 0
    assert tracker.report.actual["steps"] == 1 and not tracker.run.session.guard.disabled
    assert tracker.report.run["ended"]["reason"] == "interrupted"


def test_an_exception_out_of_a_with_block_is_a_failed_run(tmp_path):
    loop = Loop(30)
    with pytest.raises(RuntimeError, match="loss is nan"):
        with Tracker(total_steps=30, model=loop.model, optimizer=loop.optimizer, report_path=tmp_path / "r.json",
                     **FAST) as tracker:
            loop.run(tracker, tmp_path, stop_at=12)
            raise RuntimeError("loss is nan")
    ended = tracker.report.run["ended"]
    assert ended["reason"] == "failed" and "loss is nan" in ended["detail"] and ended["at_step"] == 12
    assert hooks_left(loop.model) == 0


# -- bad input ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,match", [
    (dict(total_steps=0), "total_steps must be a positive integer"),
    (dict(total_steps=2.5), "total_steps must be a positive integer"),
    (dict(total_steps=True), "total_steps must be a positive integer"),
    (dict(total_steps=10, start_step=10), "total_steps=10 is not beyond start_step=10"),
    (dict(total_steps=10, start_step=-1), "start_step must be an integer >= 0"),
    (dict(eval_every=0), "eval_every must be a positive integer"),
    (dict(checkpoint_every="5"), "checkpoint_every must be a positive integer"),
    (dict(eval_batches=-2), "eval_batches must be a positive integer"),
    (dict(model="model"), "model must be the torch.nn.Module"),
    (dict(optimizer=object()), "optimizer must be a torch.optim.Optimizer"),
    (dict(accelerator=object()), "accelerator must be an accelerate.Accelerator"),
    (dict(precision="fp8"), "precision must be one of"),
])
def test_bad_arguments_fail_at_construction(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Tracker(**kwargs)


@pytest.mark.parametrize("kwargs", [dict(warmup_steps=-1), dict(timing_steps=0), dict(report_path="runs/"),
                                    dict(targets=[""])], ids=lambda k: next(iter(k)))
def test_session_options_fail_like_the_lightning_callback(kwargs):
    with pytest.raises(ValueError) as ours:
        Tracker(total_steps=10, **kwargs)
    with pytest.raises(ValueError) as lightning:
        PreNeTCallback(**kwargs)
    assert str(ours.value) == str(lightning.value)


def _load_example(name: str):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_plain_loop_example_runs(tmp_path):
    report = _load_example("plain_loop").main(["--steps", "24", "--eval-every", "8", "--save-every", "12", "--width", "16",
                                               "--batch-size", "4", "--targets", "--out", str(tmp_path)])
    assert report["actual"]["steps"] == 24 and report["plan"]["validation_runs"] == 3
    assert Report.load(tmp_path / "prenet_report.json").first_prediction is not None


def test_the_project_imports_without_the_transformers_extra(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys\n"
            "sys.modules['transformers'] = None; sys.modules['accelerate'] = None  # as if not installed\n"
            "import prenet_callbacks\n"
            "from prenet_callbacks import Tracker\n"
            f"Tracker(total_steps=3, print_report=False, targets=[], report_path={str(tmp_path / 'r.json')!r}).close()\n"
            "try:\n"
            "    prenet_callbacks.PreNeTTrainerCallback\n"
            "except ImportError as error:\n"
            "    print('ImportError:', error)\n")
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "pip install 'prenet-callbacks[transformers]'" in proc.stdout


def test_close_lets_go_of_the_model_and_optimizer(tmp_path):
    """PreNeT's objects refer to each other, so what they hold is freed only by a collection; after `close` they
    hold none of the user's tensors: dropping the model frees it at once, with the collector off."""
    import gc
    import weakref

    Loop(1)   # a process's first optimizer leaves a cycle of torch's frames behind: not PreNeT's, and not tested here
    gc.disable()
    try:
        loop = Loop(24, eval_every=5)
        tracker = Tracker(total_steps=24, model=loop.model, optimizer=loop.optimizer,
                          report_path=tmp_path / "r.json", **FAST)
        loop.run(tracker, tmp_path)
        report = tracker.close()
        model, optimizer = weakref.ref(loop.model), weakref.ref(loop.optimizer)
        del loop
        assert model() is None and optimizer() is None   # the tracker is still alive, and holds neither
        assert tracker.report is report and report.actual["steps"] == 24 and report.measured["layers"]
        # closed before its first prediction: nothing held on to the optimizer for a note still to come
        loop = Loop(24)
        tracker = Tracker(total_steps=24, model=loop.model, optimizer=loop.optimizer,
                          report_path=tmp_path / "early.json", **FAST)
        loop.run(tracker, tmp_path, stop_at=2)
        tracker.close()
        model, optimizer = weakref.ref(loop.model), weakref.ref(loop.optimizer)
        del loop
        assert model() is None and optimizer() is None
    finally:
        gc.enable()
