"""`integrations.deepspeed.attach` on real DeepSpeed engines: ZeRO 0-3, fp32/fp16/bf16, accumulation.

One process, CPU, gloo: a single process group serves every test (DeepSpeed keeps it global),
the shared-memory comm op and FusedAdam are never JIT-built (see `integrations.deepspeed_cpu`).
"""
from __future__ import annotations

import json
import os
import warnings

os.environ.setdefault("DS_ACCELERATOR", "cpu")

import pytest
import torch
from torch import nn

from integrations.deepspeed_cpu import init_single_process_cpu

deepspeed = pytest.importorskip("deepspeed")
init_single_process_cpu()

from integrations.deepspeed import attach  # noqa: E402 - after the process group exists
from prenet_callbacks.report import Report  # noqa: E402
from prenet_callbacks.session.machine import PreNeTWarning  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    # PreNeT stepping aside is a failure here, except where a test provokes it
    pytest.mark.filterwarnings("error::prenet_callbacks.session.machine.PreNeTWarning"),
]
_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
_WRAPPED = ("forward", "backward", "step", "save_checkpoint")
# few steps everywhere: the first prediction comes after warm-up + profile + 3 timed steps
_FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=2)


def make_mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    # ReLU(inplace=True): the case that breaks full backward hooks
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(inplace=True), nn.Linear(32, 32), nn.ReLU(inplace=True),
                         nn.Linear(32, 4))


def make_engine(stage: int = 0, dtype: str = "fp32", accumulate: int = 1, *, seed: int = 0,
                monitor_dir: str | None = None, offload: bool = False) -> "deepspeed.DeepSpeedEngine":
    model = make_mlp(seed)
    config: dict = {
        "train_micro_batch_size_per_gpu": 4,
        "gradient_accumulation_steps": accumulate,
        "optimizer": {"type": "Adam", "params": {"lr": 1e-3, "torch_adam": True}},
        "zero_optimization": {"stage": stage},
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }
    if dtype == "fp16":
        config["fp16"] = {"enabled": True, "initial_scale_power": 8}
    elif dtype == "bf16":
        config["bf16"] = {"enabled": True}
    if monitor_dir is not None:
        config["csv_monitor"] = {"enabled": True, "output_path": monitor_dir, "job_name": "run"}
    if offload:
        config["zero_optimization"]["offload_optimizer"] = {"device": "cpu"}
        config["zero_force_ds_cpu_optimizer"] = False  # keep torch Adam: no cpu_adam JIT build
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    return engine


def train(engine, micro_batches: int, *, dtype: str = "fp32", seed: int = 1) -> list[float]:
    """The user's loop: forward, backward, step per micro-batch."""
    generator = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(micro_batches):
        x = torch.randn(4, 16, generator=generator).to(_DTYPES[dtype])
        loss = engine(x).float().pow(2).mean()
        engine.backward(loss)
        engine.step()
        losses.append(loss.detach().item())
    return losses


def assert_unwrapped(engine) -> None:
    for name in _WRAPPED:
        assert name not in engine.__dict__, f"engine.{name} is still wrapped"
    assert "_prenet_handle" not in engine.__dict__


@pytest.mark.parametrize("stage,dtype,accumulate", [
    (0, "fp32", 1), (1, "bf16", 2), (2, "fp16", 2), (3, "fp32", 2), (3, "bf16", 1),
])
def test_predicts_whole_run_for_zero_stage(stage, dtype, accumulate, tmp_report, monkeypatch):
    if dtype == "fp16":
        # DeepSpeed's CPU accelerator refuses fp16 unless oneDNN reports AVX512-FP16 (CPU-dependent);
        # torch computes fp16 on any CPU, and what is tested here is attach() under fp16 loss scaling.
        from deepspeed.accelerator import get_accelerator

        monkeypatch.setattr(type(get_accelerator()), "is_fp16_supported", lambda self: True)
    engine = make_engine(stage, dtype, accumulate)
    total_steps = 8
    handle = attach(engine, total_steps=total_steps, report_path=tmp_report, print_report=False, **_FAST)
    assert handle.attached and all(name in engine.__dict__ for name in ("forward", "backward", "step"))

    train(engine, total_steps * accumulate, dtype=dtype)

    report = handle.report
    assert engine.global_steps == total_steps
    first = report.first_prediction
    assert first is not None and first["predicted_total_s"] > 0
    assert report.actual is not None and report.actual["steps"] == total_steps
    assert report.actual["batches"] == total_steps * accumulate
    assert report.plan["total_steps"] == total_steps and report.plan["accumulate"] == accumulate
    # the last step ended the run: everything is unwrapped without a call to detach()
    assert not handle.attached
    assert_unwrapped(engine)
    assert report.current["framework"] == "deepspeed"
    assert report.current["precision"] == {"fp32": "32-true", "fp16": "16-mixed", "bf16": "bf16-mixed"}[dtype]
    assert report.current["deepspeed"] == {
        "zero_stage": stage, "offload_optimizer": None, "offload_param": None,
        "gradient_accumulation_steps": accumulate, "micro_batch_per_gpu": 4, "dtype": dtype,
    }
    phases = report.measured["step_phases"]
    assert phases["forward_s"] > 0 and phases["backward_s"] > 0 and phases["optimizer_s"] > 0
    saved = Report.load(tmp_report)
    assert saved.actual == json.loads(report.to_json())["actual"]
    # the engine trains on after the run's end, untouched
    train(engine, accumulate, dtype=dtype)
    assert engine.global_steps == total_steps + 1


def test_profiled_layers_when_the_profiler_is_installed(tmp_report):
    pytest.importorskip("prenet_callbacks.measure.profiling", reason="ModuleProfiler not in this build")
    try:
        from prenet_callbacks.measure.profiling import ModuleProfiler  # noqa: F401
    except ImportError:
        pytest.skip("ModuleProfiler not in this build")
    engine = make_engine(3, "fp32", 1)
    handle = attach(engine, total_steps=7, report_path=tmp_report, print_report=False, **_FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PreNeTWarning)
        train(engine, 7)
    assert handle.report.measured.get("layers")
    assert_unwrapped(engine)


def test_attaching_does_not_change_training(tmp_report):
    reference = make_engine(2, "fp32", 2, seed=3)
    expected = train(reference, 12)
    engine = make_engine(2, "fp32", 2, seed=3)
    attach(engine, total_steps=6, report_path=tmp_report, print_report=False, **_FAST)
    assert train(engine, 12) == expected
    for a, b in zip(reference.module.parameters(), engine.module.parameters()):
        assert torch.equal(a, b)


def test_detach_restores_methods_including_an_instance_wrapper(tmp_report):
    engine = make_engine(0)
    sentinel_calls = []
    class_step = type(engine).step

    def user_step(*args, **kwargs):  # a wrapper the user set before attaching
        sentinel_calls.append(1)
        return class_step(engine, *args, **kwargs)

    engine.__dict__["step"] = user_step
    handle = attach(engine, total_steps=50, report_path=tmp_report, print_report=False, **_FAST)
    train(engine, 2)
    handle.detach()
    handle.detach()  # idempotent
    assert engine.__dict__["step"] is user_step
    assert "forward" not in engine.__dict__ and "backward" not in engine.__dict__
    assert not handle.attached
    train(engine, 1)
    assert len(sentinel_calls) == 3
    # a fresh attach is allowed once detached
    attach(engine, total_steps=60, report_path=tmp_report, print_report=False).detach()


def test_finish_early_records_the_run_and_detaches(tmp_report, capsys):
    engine = make_engine(1, "fp32", 1)
    handle = attach(engine, total_steps=1000, report_path=tmp_report, **_FAST)
    train(engine, 7)
    assert "Predicted" in capsys.readouterr().out  # the table, printed on rank 0
    report = handle.finish()
    assert report.actual["steps"] == 7 and report.predictions
    assert report.predictions[0]["predicted_total_s"] > report.actual["fit_s"]  # 1000 steps planned
    assert Report.load(tmp_report).actual["steps"] == 7
    assert_unwrapped(engine)
    assert handle.finish() is report  # idempotent


def test_checkpoint_saves_are_timed_apart(tmp_report, tmp_path):
    engine = make_engine(2, "fp32", 1)
    handle = attach(engine, total_steps=9, report_path=tmp_report, print_report=False, **_FAST)
    train(engine, 4)
    engine.save_checkpoint(str(tmp_path / "ckpt"))
    train(engine, 5)
    assert handle.report.measured["checkpoint"]["files"] == 1
    assert_unwrapped(engine)


def test_logs_to_the_engine_monitor(tmp_report, tmp_path):
    engine = make_engine(0, monitor_dir=str(tmp_path / "monitor"))
    attach(engine, total_steps=9, report_path=tmp_report, print_report=False, **_FAST)
    train(engine, 9)
    logged = tmp_path / "monitor" / "run" / "prenet_eta_s.csv"
    assert logged.is_file()
    rows = logged.read_text().splitlines()
    assert rows[0] == "step,eta_s" and len(rows) >= 2


def test_not_rank_zero_neither_prints_nor_writes(tmp_report, capsys):
    engine = make_engine(0)
    engine.global_rank = 1  # what rank 1 of a multi-process run sees
    handle = attach(engine, total_steps=7, report_path=tmp_report, **_FAST)
    train(engine, 7)
    assert handle.report.first_prediction is not None  # every rank measures
    assert not tmp_report.exists() and "Predicted" not in capsys.readouterr().out


def test_records_cpu_offload(tmp_report):
    engine = make_engine(2, "fp32", 1, offload=True)
    handle = attach(engine, total_steps=3, report_path=tmp_report, print_report=False, **_FAST)
    assert handle.report.current["deepspeed"]["offload_optimizer"] == "cpu"
    assert handle.report.current["deepspeed"]["offload_param"] is None
    train(engine, 3)
    assert not handle.attached


def test_a_failure_while_attached_warns_once_detaches_and_training_goes_on(tmp_report):
    reference = make_engine(1, "fp32", 1, seed=5)
    expected = train(reference, 10)
    engine = make_engine(1, "fp32", 1, seed=5)
    handle = attach(engine, total_steps=10, report_path=tmp_report, print_report=False, **_FAST)

    def broken_sink(metrics, step):
        raise RuntimeError("logger down")

    handle.session.outputs.logger_sinks = [broken_sink]
    with pytest.warns(PreNeTWarning, match="logger down") as caught:
        losses = train(engine, 10)
    assert len([w for w in caught if issubclass(w.category, PreNeTWarning)]) == 1
    assert losses == expected
    assert_unwrapped(engine) and not handle.attached


def test_user_errors_pass_through_unchanged(tmp_report):
    engine = make_engine(0)
    handle = attach(engine, total_steps=20, report_path=tmp_report, print_report=False, **_FAST)
    with pytest.raises(RuntimeError, match="mat1 and mat2"):
        engine(torch.randn(4, 7))
    assert handle.attached  # a user error is the user's: PreNeT stays attached
    handle.detach()


# -- bad input ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("not_an_engine", [None, make_mlp(), "engine", object()])
def test_attach_refuses_what_is_not_an_engine(not_an_engine):
    with pytest.raises(TypeError, match="DeepSpeedEngine returned by deepspeed.initialize"):
        attach(not_an_engine, total_steps=10)


@pytest.fixture(scope="module")
def shared_engine():
    return make_engine(0)


@pytest.mark.parametrize("total_steps", [0, -5, 2.5, True, "100"])
def test_attach_refuses_a_bad_total_steps(shared_engine, total_steps):
    with pytest.raises(ValueError, match="total_steps must be a positive integer"):
        attach(shared_engine, total_steps=total_steps)
    assert_unwrapped(shared_engine)


def test_attach_refuses_bad_options_and_a_second_attach(shared_engine, tmp_report, tmp_path):
    with pytest.raises(ValueError, match="warmup_steps"):
        attach(shared_engine, total_steps=10, warmup_steps=-1)
    with pytest.raises(ValueError, match="is a directory"):
        attach(shared_engine, total_steps=10, report_path=tmp_path)
    with pytest.raises(ValueError, match="predictor: predictor artifact .*not found"):
        attach(shared_engine, total_steps=10, predictor=tmp_path / "no_predictor")
    handle = attach(shared_engine, total_steps=10, report_path=tmp_report)
    try:
        with pytest.raises(ValueError, match="already has PreNeT attached"):
            attach(shared_engine, total_steps=10, report_path=tmp_report)
    finally:
        handle.detach()
    assert_unwrapped(shared_engine)


def test_attach_refuses_a_run_already_past_total_steps(tmp_report):
    engine = make_engine(0)
    train(engine, 3)
    with pytest.raises(ValueError, match="global_steps=3"):
        attach(engine, total_steps=3, report_path=tmp_report)
    handle = attach(engine, total_steps=8, report_path=tmp_report, print_report=False, **_FAST)
    assert handle.report.plan["start_step"] == 3 and handle.report.run["start"] == "attached_late"
    train(engine, 5)
    assert handle.report.actual["steps"] == 8 and handle.report.run["ended"]["reason"] == "completed"


def test_projects_targets_once_the_projection_is_installed(tmp_report):
    try:
        from prenet_callbacks.projection import project_report  # noqa: F401
    except ImportError:
        pytest.skip("cross-hardware projection not in this build yet")
    engine = make_engine(2, "bf16", 2)
    handle = attach(engine, total_steps=7, report_path=tmp_report, targets=["A100", "8x H100"],
                    print_report=False, **_FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PreNeTWarning)
        train(engine, 14, dtype="bf16")
    projected = {(t["name"], t["devices"]) for t in handle.report.targets}
    assert ("H100-SXM5", 8) in projected and any(name.startswith("A100") for name, _ in projected)


def test_the_raw_deepspeed_example_runs(tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "deepspeed_raw.py"
    spec = importlib.util.spec_from_file_location("deepspeed_raw_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    report = example.main(["--zero", "3", "--precision", "bf16", "--steps", "30", "--width", "64",
                           "--out", str(tmp_path)])
    assert report["actual"]["steps"] == 30 and report["current"]["deepspeed"]["zero_stage"] == 3
    assert Report.load(tmp_path / "prenet_report.json").first_prediction is not None


def test_evaluation_between_steps_is_timed_apart(tmp_report):
    import time

    engine = make_engine(1, "fp32", 1)
    # evaluation is made slow on purpose: were it counted as training, the step time would show it
    engine.module.register_forward_pre_hook(lambda module, args: None if torch.is_grad_enabled() else time.sleep(0.05))
    handle = attach(engine, total_steps=12, report_path=tmp_report, print_report=False, **_FAST)
    for step in range(1, 13):
        train(engine, 1)
        if step % 3 == 0:  # evaluate every 3 steps
            with torch.no_grad():
                engine(torch.randn(4, 16))
    measured = handle.report.measured
    assert measured["validation"]["runs"] >= 2
    assert measured["validation"]["mean_s"] >= 0.05
    assert measured["batch_s"] < 0.05


# -- declared schedules (eval_every, checkpoint_every) and rate-only runs ---------------------------
def evaluate(engine, batches: int = 2) -> None:
    with torch.no_grad():
        for _ in range(batches):
            engine(torch.randn(4, 16))


def test_schedule_is_planned_and_the_run_ends_after_the_last_steps_save(tmp_report, tmp_path):
    engine = make_engine(1, "fp32", 2)
    handle = attach(engine, total_steps=12, eval_every=3, eval_batches=2, checkpoint_every=4,
                    report_path=tmp_report, print_report=False, **_FAST)
    evaluations = saves = 0
    for step in range(1, 13):
        train(engine, 2, seed=step)
        if step % 3 == 0:
            evaluate(engine)
            evaluations += 1
        if step == 12:
            assert handle.attached, "an evaluation and a save are due after the last step"
        if step % 4 == 0:
            engine.save_checkpoint(str(tmp_path / "ckpt"))
            saves += 1
    report = handle.report
    assert report.plan["validation_runs"] == evaluations == 4
    assert report.plan["checkpoint_saves"] == saves == 3
    assert report.measured["checkpoint"]["files"] == 3  # the last save is inside the run
    assert report.actual["steps"] == 12 and not handle.attached
    assert_unwrapped(engine)


def test_an_evaluation_due_after_the_last_step_ends_with_its_block(tmp_report):
    engine = make_engine(0)
    handle = attach(engine, total_steps=9, eval_every=3, report_path=tmp_report, print_report=False, **_FAST)
    for step in range(1, 10):
        train(engine, 1, seed=step)
        if step % 3 == 0:
            with handle.validation():
                evaluate(engine)
    assert handle.report.actual["steps"] == 9 and not handle.attached
    assert handle.report.plan["validation_runs"] == 3


def test_an_evaluation_found_by_its_forwards_ends_at_finish(tmp_report):
    engine = make_engine(0)
    handle = attach(engine, total_steps=6, eval_every=3, report_path=tmp_report, print_report=False, **_FAST)
    for step in range(1, 7):
        train(engine, 1, seed=step)
        if step % 3 == 0:
            evaluate(engine)
    assert handle.attached and handle.report.actual is None  # no-grad forwards never say they are over
    report = handle.finish()
    assert report.actual["steps"] == 6 and report.run["ended"]["reason"] == "completed"
    assert_unwrapped(engine)


def test_training_on_after_the_last_step_ends_the_run(tmp_report):
    engine = make_engine(0)
    handle = attach(engine, total_steps=6, eval_every=6, report_path=tmp_report, print_report=False, **_FAST)
    train(engine, 6)
    evaluate(engine)
    train(engine, 1)
    assert handle.report.actual["steps"] == 6 and not handle.attached
    assert engine.global_steps == 7


def test_without_total_steps_a_rate_until_finish(tmp_report):
    engine = make_engine(0)
    handle = attach(engine, total_steps=None, report_path=tmp_report, print_report=False, **_FAST)
    train(engine, 10)
    latest = handle.report.latest_prediction
    assert latest["predicted_total_s"] is None and latest["step_s"] > 0 and "total_steps=None" in latest["note"]
    assert handle.attached
    report = handle.finish()
    assert report.actual["steps"] == 10 and report.plan["total_steps"] is None
    assert report.run["ended"]["reason"] == "completed" and report.run["framework"] == "deepspeed"
    assert_unwrapped(engine)


def test_finish_before_total_steps_is_an_early_stop(tmp_report):
    engine = make_engine(0)
    handle = attach(engine, total_steps=50, report_path=tmp_report, print_report=False, **_FAST)
    train(engine, 8)
    report = handle.finish()
    assert report.actual["steps"] == 8 and report.run["ended"]["reason"] == "stopped_early"
    assert "finished after 8 of 50" in report.run["ended"]["detail"]
    assert report.actual["first_prediction_error"] is None and report.actual["predicted_for_done_work_s"] > 0


@pytest.mark.parametrize("kwargs,match", [
    (dict(eval_every=0), "eval_every must be a positive integer"),
    (dict(checkpoint_every=2.5), "checkpoint_every must be a positive integer"),
    (dict(eval_batches="3"), "eval_batches must be a positive integer"),
])
def test_attach_refuses_a_bad_schedule(shared_engine, kwargs, match):
    with pytest.raises(ValueError, match=match):
        attach(shared_engine, total_steps=10, **kwargs)
    assert_unwrapped(shared_engine)


def test_ctrl_c_inside_the_profiling_window_detaches(tmp_report):
    engine = make_engine(0)
    handle = attach(engine, total_steps=20, report_path=tmp_report, print_report=False, **_FAST)
    train(engine, 1)  # warm-up; the next step is profiled
    engine.module.register_forward_hook(lambda *args: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        train(engine, 1)
    assert torch._C._len_torch_dispatch_stack() == 0
    assert not handle.attached and handle.report.run["ended"]["reason"] == "interrupted"
    assert_unwrapped(engine)


def quiet_run(tmp_path, *, quiet: bool, accumulate: int = 1, steps: int = 200):
    """A raw DeepSpeed loop on one clock (the session reads only it): steps of uneven length, an evaluation of two
    no-grad forwards every 60 steps; ``quiet``: whether steps between the session's events may keep their time."""
    from types import SimpleNamespace

    from tests.test_quiet_steps import StepClock

    engine = make_engine(0, "fp32", accumulate)
    handle = attach(engine, total_steps=steps, eval_every=60, eval_batches=2, report_path=tmp_path / f"q{quiet}.json",
                    print_report=False, warmup_steps=1, profile_steps=1, timing_steps=3)
    enabled = handle.session.quiet.enabled
    clock = StepClock()
    session = handle.session
    session.now = clock
    session.fit_start_time = clock.now
    session.quiet.enabled = quiet and enabled
    replayed = []
    replay_one = session.quiet.replay_one
    session.quiet.replay_one = lambda at, step, mark: (replayed.append(step), replay_one(at, step, mark))
    # an evaluation forward takes 10 ms on the clock, inside the engine's forward (between its wrapper's events)
    engine.module.register_forward_pre_hook(
        lambda module, inputs: setattr(clock, "now", clock.now + 0.01) if not torch.is_grad_enabled() else None)
    generator = torch.Generator().manual_seed(1)
    for step in range(1, steps + 1):
        for _ in range(accumulate):
            loss = engine(torch.randn(4, 16, generator=generator)).pow(2).mean()
            engine.backward(loss)
            engine.step()
            clock.now += 0.010 + 0.001 * (step % 7)
        if step % 60 == 0:
            with torch.no_grad():
                for _ in range(2):
                    engine(torch.randn(4, 16, generator=generator))
    ended_at_its_last_step = not handle.attached
    handle.finish()
    return SimpleNamespace(session=session, report=handle.report, replayed=replayed, enabled=enabled,
                           ended_at_its_last_step=ended_at_its_last_step)


def test_quiet_steps_replay_to_the_same_measurements(tmp_path):
    from tests.test_quiet_steps import assert_replayed_alike

    full, quiet = quiet_run(tmp_path, quiet=False, steps=205), quiet_run(tmp_path, quiet=True, steps=205)
    assert quiet.enabled
    assert full.ended_at_its_last_step and quiet.ended_at_its_last_step   # the last step is never kept
    assert_replayed_alike(full, quiet, steps=205, kept_at_least=100)
    assert quiet.report.measured["validation"]["runs"] == full.report.measured["validation"]["runs"] > 0


def test_with_accumulation_every_micro_batch_takes_the_full_path(tmp_path):
    run = quiet_run(tmp_path, quiet=True, accumulate=2, steps=40)
    assert not run.enabled and not run.replayed and run.session.done_steps == 40


def test_a_quiet_step_is_the_next_one_and_never_the_runs_last(tmp_report):
    engine = make_engine(0, "fp32", 1)
    handle = attach(engine, total_steps=10, report_path=tmp_report, print_report=False, **_FAST)
    events = handle.events
    events.last_global_steps, engine.global_steps = 8, 9
    assert events._quiet_step() == 9
    events.last_global_steps, engine.global_steps = 9, 10
    assert events._quiet_step() is None          # the last step ends the run: the full path
    events.last_global_steps, engine.global_steps = 6, 8
    assert events._quiet_step() is None          # a step not seen in between: the full path counts both
    handle.detach()
