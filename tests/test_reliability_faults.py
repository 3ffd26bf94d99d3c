"""Issue 7: a monitoring callback must never kill or change a training run.

Faults are injected at every stage the callback goes through (profiler creation and hook
registration, op capture, feature computation, table building, prediction, cross-hardware
projection, catalog loading, report writing, loggers, checkpoints, resume state) and in user code
(exceptions, KeyboardInterrupt) during the profiling window. Each time the fit must end exactly as
it would without the callback: same weights bit for bit, same global step, the same exception if
it fails, at most one `PreNeTWarning`, no hook, dispatch mode or wrapper left behind, and nothing
keeping the model alive.
"""
from __future__ import annotations

import errno
import gc
import json
import signal
import sys
import types
import warnings
import weakref
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint

import integrations.lightning as lightning_module
import prenet_callbacks
import prenet_callbacks.report as report_module
import prenet_callbacks.session.machine as session_module
from prenet_callbacks import PreNeTCallback
from prenet_callbacks.measure.profiling import ModuleProfiler, hook_snapshot
from prenet_callbacks.measure.profiling import profiler as profiler_module
from prenet_callbacks.measure.profiling import table_builder
from prenet_callbacks.measure.profiling.op_timing import HostOpTimer
from prenet_callbacks.measure.profiling.capture import CaptureMode
from prenet_callbacks.measure.step_account import StepAccount
from prenet_callbacks.session.machine import PreNeTWarning
from tests.lightning_helpers import RecordingLogger, TinyModule, loaders, trainer

# warm-up 1 step, profile steps 1-2, clean timing 3-5, first prediction after step 6
FAST = dict(warmup_steps=1, profile_steps=2, timing_steps=3, metrics_every_n_steps=5, targets=None, print_report=False)
TRAIN_BATCHES = 12
EPOCHS = 2


class DropoutModule(TinyModule):
    """TinyModule with dropout: any RNG draw by the callback would change the weights."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(inplace=True), nn.Dropout(0.3), nn.Linear(16, 2))

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=0.01)


class Interrupting(TinyModule):
    """Raises KeyboardInterrupt (a Ctrl+C) from training_step at a given global step."""

    def __init__(self, at_step: int) -> None:
        super().__init__()
        self.at_step = at_step

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        if self.global_step >= self.at_step:
            raise KeyboardInterrupt
        return super().training_step(batch, batch_idx)


def run(tmp_path: Path, callback: PreNeTCallback | None, module: pl.LightningModule | None = None, *,
        extra_callbacks: list | None = None, epochs: int = EPOCHS, ckpt_path: str | None = None,
        prenet_warnings_as_errors: bool = False, **kwargs: Any) -> tuple[pl.LightningModule, pl.Trainer, list[warnings.WarningMessage], BaseException | None]:
    """A seeded fit; returns the module, trainer, PreNeT warnings and the exception it raised (if any)."""
    pl.seed_everything(0, verbose=False)
    module = module or DropoutModule()
    callbacks = ([callback] if callback is not None else []) + list(extra_callbacks or [])
    t = trainer(tmp_path, callbacks, max_epochs=epochs, **kwargs)
    raised = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if prenet_warnings_as_errors:
            warnings.simplefilter("error", PreNeTWarning)
        try:
            t.fit(module, *loaders(train_batches=TRAIN_BATCHES), ckpt_path=ckpt_path)
        except BaseException as error:  # noqa: BLE001 - compared with the reference run
            raised = error
    ours = [w for w in caught if issubclass(w.category, PreNeTWarning)]
    return module, t, ours, raised


_REFERENCE: dict[str, list[torch.Tensor]] = {}
# Lightning itself registers a few state-dict hooks on every LightningModule.
_BASELINE_HOOKS = hook_snapshot(DropoutModule())


@pytest.fixture(autouse=True)
def _isolate_global_state():
    """A test that leaks global hooks or dispatch modes fails itself, not every test after it."""
    import torch.optim.optimizer as optim_module

    pre = dict(optim_module._global_optimizer_pre_hooks)
    post = dict(optim_module._global_optimizer_post_hooks)
    yield
    while torch._C._len_torch_dispatch_stack():
        torch._C._pop_torch_dispatch_stack(None)
    for live, saved in ((optim_module._global_optimizer_pre_hooks, pre),
                        (optim_module._global_optimizer_post_hooks, post)):
        for key in [k for k in live if k not in saved]:
            del live[key]


def reference_weights(tmp_path_factory) -> list[torch.Tensor]:
    if "dropout" not in _REFERENCE:
        module, _, _, raised = run(tmp_path_factory.mktemp("ref"), None)
        assert raised is None
        _REFERENCE["dropout"] = [p.detach().clone() for p in module.parameters()]
    return _REFERENCE["dropout"]


def assert_clean(module: nn.Module, t: pl.Trainer, callback: PreNeTCallback | None = None) -> None:
    """No hook, dispatch mode, optimizer hook or save_checkpoint wrapper left behind."""
    snapshot = {k: v for k, v in hook_snapshot(module).items() if v != _BASELINE_HOOKS.get(k, 0)}
    assert snapshot == {}, f"hooks left behind: {snapshot}"
    assert torch._C._len_torch_dispatch_stack() == 0
    assert "save_checkpoint" not in t.__dict__
    if callback is not None:
        assert callback.session.window.profiler is None and not callback.session.window.active
        assert not callback.session.guard.cleanups


def assert_same_weights(module: nn.Module, reference: list[torch.Tensor]) -> None:
    params = list(module.parameters())
    assert len(params) == len(reference)
    for a, b in zip(params, reference):
        assert torch.equal(a.detach(), b), "weights differ from the run without the callback"


def assert_released(make_run) -> None:
    """After the fit, the callback (still referenced by the user) keeps neither model nor trainer alive."""
    module, t, callback = make_run()
    module_ref, trainer_ref = weakref.ref(module), weakref.ref(t)
    del module, t
    # Lightning binds `pl_module.log`/`log_dict` onto every callback; that reference is Lightning's.
    callback.__dict__.pop("log", None)
    callback.__dict__.pop("log_dict", None)
    gc.collect()
    assert module_ref() is None, "the model outlives its fit (held by the callback?)"
    assert trainer_ref() is None, "the trainer outlives its fit (held by the callback?)"
    assert callback is not None


# ------------------------------------------------------------------------------------------------
# A clean run first: profiling on, nothing injected
# ------------------------------------------------------------------------------------------------
def test_profiled_run_is_bit_identical_and_leaves_nothing_behind(tmp_path, tmp_path_factory):
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
    module, t, ours, raised = run(tmp_path, callback)
    assert raised is None and [str(w.message) for w in ours] == []
    assert_same_weights(module, reference_weights(tmp_path_factory))
    assert_clean(module, t, callback)
    assert not callback.session.guard.disabled
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["measured"]["profiled_steps"] == 2 and data["measured"]["layers"]
    assert data["actual"]["steps"] == EPOCHS * TRAIN_BATCHES
    # the model's forward was replayed in eval mode (dropout off, RNG put back): the weights above agree
    assert data["measured"]["validation"]["eval_forward_s"] > 0


def test_callback_does_not_keep_the_model_alive(tmp_path):
    def make():
        callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
        module, t, _, raised = run(tmp_path, callback)
        assert raised is None
        return module, t, callback

    assert_released(make)


# ------------------------------------------------------------------------------------------------
# Internal faults: one warning, the run unchanged
# ------------------------------------------------------------------------------------------------
def _raise(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected fault")


def _fail_after(original, calls: int):
    """Wrap `original` so that it works `calls` times, then raises."""
    count = {"n": 0}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        count["n"] += 1
        if count["n"] > calls:
            raise RuntimeError("injected fault")
        return original(*args, **kwargs)

    return wrapper


def _fake_projection(monkeypatch, project) -> None:
    import prenet_callbacks.projection as real

    fake = types.ModuleType("prenet_callbacks.projection")
    fake.__dict__.update({k: v for k, v in vars(real).items() if not k.startswith("__")})
    fake.project_report = project  # the projection itself is what fails
    monkeypatch.setitem(sys.modules, "prenet_callbacks.projection", fake)
    monkeypatch.setattr(prenet_callbacks, "projection", fake, raising=False)


INTERNAL_FAULTS = {
    # creating the profiler / registering hooks
    "make_profiler": lambda mp: mp.setattr(lightning_module, "_make_profiler", _raise),
    "profiler_init": lambda mp: mp.setattr(ModuleProfiler, "__init__", _raise),
    "hook_registration_midway": lambda mp: mp.setattr(
        ModuleProfiler, "_hook_module", _fail_after(ModuleProfiler._hook_module, 2)),
    "optimizer_hooks": lambda mp: mp.setattr(ModuleProfiler, "_install_optimizer_hooks", _raise),
    "push_dispatch_mode": lambda mp: mp.setattr(CaptureMode, "__enter__", _raise),
    # op capture, while the model runs
    "record_op": lambda mp: mp.setattr(ModuleProfiler, "record_op", _raise),
    "module_pre_hook": lambda mp: mp.setattr(profiler_module.Attribution, "enter", _raise),
    "begin_phase": lambda mp: mp.setattr(ModuleProfiler, "begin_phase", _raise),
    "suspend": lambda mp: mp.setattr(ModuleProfiler, "suspend", _raise),
    "resume": lambda mp: mp.setattr(ModuleProfiler, "resume", _raise),
    "end_step": lambda mp: mp.setattr(ModuleProfiler, "end_step", _raise),
    # feature computation and the table, at the end of the window
    "op_spec": lambda mp: mp.setattr(table_builder, "op_spec_from_call", _raise),
    "layer_features": lambda mp: mp.setattr(table_builder, "layer_features", _raise),
    "build_table": lambda mp: mp.setattr(ModuleProfiler, "_build_table", _raise),
    # the run plan, the prediction and the projection onto other hardware
    "plan": lambda mp: mp.setattr(lightning_module, "plan_from_trainer", _raise),
    "predict_fit": lambda mp: mp.setattr(session_module, "predict_fit", _raise),
    "projection": lambda mp: _fake_projection(mp, _raise),
    "current_device": lambda mp: mp.setattr("prenet_callbacks.hardware.current_device", _raise),
    "state_sizes": lambda mp: mp.setattr(lightning_module, "state_sizes", _raise),
    "printer": lambda mp: mp.setattr(lightning_module, "print_report", _raise),
    # writing the report
    "report_write": lambda mp: mp.setattr(report_module.Report, "save_if_changed", _raise),
}


@pytest.mark.parametrize("where", sorted(INTERNAL_FAULTS))
def test_internal_fault_warns_at_most_once_and_changes_nothing(tmp_path, tmp_path_factory, monkeypatch, where):
    reference = reference_weights(tmp_path_factory)
    INTERNAL_FAULTS[where](monkeypatch)
    options = dict(FAST)
    if where == "projection":
        options["targets"] = ["A100"]
    if where == "printer":
        options["print_report"] = True
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **options)
    module, t, ours, raised = run(tmp_path, callback)
    assert raised is None, f"the fit failed: {raised!r}"
    assert_same_weights(module, reference)
    assert t.global_step == EPOCHS * TRAIN_BATCHES
    assert_clean(module, t, callback)
    # A fault the profiler contains itself (it stops capturing and says so) needs no warning; a
    # profiler that fails outright is dropped with one warning (predictions go on from step timing);
    # any other fault gives exactly one warning and the callback steps aside.
    assert len(ours) <= 1, [str(w.message) for w in ours]
    if ours and not callback.session.guard.disabled:
        assert "profile" in str(ours[0].message) and "Training is unchanged" in str(ours[0].message)
        assert any("per-module profile unavailable" in x for x in callback.report.limitations)
        assert callback.report.first_prediction is not None and callback.report.actual["steps"] == t.global_step
    elif ours:
        assert "continues unchanged" in str(ours[0].message)
    else:
        limitations = " ".join(callback.report.limitations)
        assert "injected fault" in limitations, "the fault vanished without a warning or a stated limitation"


def test_fault_in_op_timing_never_reaches_the_model(tmp_path, tmp_path_factory, monkeypatch):
    """The op clock runs inside the dispatch mode, around every aten call of the model."""
    reference = reference_weights(tmp_path_factory)
    monkeypatch.setattr(HostOpTimer, "stop", _fail_after(HostOpTimer.stop, 5))
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
    module, t, ours, raised = run(tmp_path, callback)
    assert raised is None, f"a profiler fault broke the model's forward: {raised!r}"
    assert_same_weights(module, reference)
    assert_clean(module, t, callback)
    assert len(ours) <= 1


def test_warnings_turned_into_errors_still_do_not_break_the_run(tmp_path, tmp_path_factory, monkeypatch):
    """`-W error` / PYTHONWARNINGS=error is common in CI: our one warning must not become a crash."""
    reference = reference_weights(tmp_path_factory)
    monkeypatch.setattr(session_module, "predict_fit", _raise)
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
    pl.seed_everything(0, verbose=False)
    module = DropoutModule()
    t = trainer(tmp_path, [callback], max_epochs=EPOCHS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PreNeTWarning)
        t.fit(module, *loaders(train_batches=TRAIN_BATCHES))
    assert callback.session.guard.disabled
    assert_same_weights(module, reference)
    assert_clean(module, t, callback)


def test_warnings_as_errors_inside_the_checkpoint_wrapper(tmp_path, tmp_path_factory, monkeypatch):
    """The save_checkpoint timing wrapper calls the session outside any Lightning hook wrapper."""
    reference = reference_weights(tmp_path_factory)
    monkeypatch.setattr(StepAccount, "checkpoint_end", _raise)
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
    ckpt = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True)
    module, t, ours, raised = run(tmp_path, callback, extra_callbacks=[ckpt], enable_checkpointing=True,
                                  prenet_warnings_as_errors=True)
    assert raised is None, f"our warning, turned into an error, broke a checkpoint save: {raised!r}"
    assert (tmp_path / "ckpt" / "last.ckpt").is_file()
    assert_same_weights(module, reference)
    assert_clean(module, t, callback)


def test_session_used_directly_never_raises_its_warning(monkeypatch):
    """Integrations without a hook wrapper (DeepSpeed) call guarded methods directly."""
    session = session_module.PredictionSession(session_module.SessionConfig(profile_layers=False))
    monkeypatch.setattr(session_module.PredictionSession, "_reset_fit_state", _raise)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        session.fit_start()
    assert session.guard.disabled and "injected fault" in session.guard.failure


def test_broken_model_after_a_fault_is_still_released(tmp_path, monkeypatch):
    monkeypatch.setattr(ModuleProfiler, "_build_table", _raise)

    def make():
        callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
        module, t, ours, raised = run(tmp_path, callback)
        assert raised is None and len(ours) == 1
        return module, t, callback

    assert_released(make)


# ------------------------------------------------------------------------------------------------
# Catalog override and report location
# ------------------------------------------------------------------------------------------------
BROKEN_TOML = {
    "syntax": "[[accelerator]\nname = 'X'\n",
    "bad_field": "[[accelerator]]\nname = 'My GPU'\nmemory_gb = 'lots'\n",
    "binary": "\x00\x01\x02",
}


@pytest.mark.parametrize("kind", sorted(BROKEN_TOML) + ["missing"])
@pytest.mark.parametrize("targets", [[], None])
def test_broken_hardware_override_file_does_not_stop_training(tmp_path, tmp_path_factory, monkeypatch, kind, targets):
    override = tmp_path / "hw.toml"
    if kind != "missing":
        override.write_text(BROKEN_TOML[kind])
    monkeypatch.setenv("PRENET_HARDWARE", str(override))
    reference = reference_weights(tmp_path_factory)
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **{**FAST, "targets": targets})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module, t, ours, raised = run(tmp_path, callback)
    assert raised is None
    assert_same_weights(module, reference)
    assert_clean(module, t, callback)
    assert len(ours) <= 1
    catalog_warnings = [w for w in caught if "hw.toml" in str(w.message)]
    assert len(catalog_warnings) <= 1


class _FullDisk:
    """A file object whose writes fail as on a full disk."""

    def __init__(self, fd: int) -> None:
        import os

        os.close(fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("location", ["full_disk", "read_only_rename", "folder_became_a_file"])
def test_report_that_cannot_be_written_warns_once_and_leaves_no_temp_file(tmp_path, tmp_path_factory,
                                                                          monkeypatch, location):
    reference = reference_weights(tmp_path_factory)
    report_dir = tmp_path / "reports"
    report_path = report_dir / "r.json"
    if location == "full_disk":
        monkeypatch.setattr(report_module.os, "fdopen", lambda fd, mode="r", **kwargs: _FullDisk(fd))
    elif location == "read_only_rename":
        def read_only(*args: Any, **kwargs: Any) -> None:
            raise PermissionError(errno.EROFS, "Read-only file system")
        monkeypatch.setattr(report_module.os, "replace", read_only)
    callback = PreNeTCallback(report_path=report_path, **FAST)   # writable now (a folder that cannot be is
    if location == "folder_became_a_file":                        # refused here: test_entry_points.py)
        tmp_path.mkdir(parents=True, exist_ok=True)
        report_dir.write_text("a file where the report's folder was to be")
    module, t, ours, raised = run(tmp_path / "run", callback)
    assert raised is None
    assert_same_weights(module, reference)
    assert_clean(module, t, callback)
    assert len(ours) == 1 and callback.session.guard.disabled
    assert "cannot write report" in str(ours[0].message) and str(report_path) in str(ours[0].message)
    if report_dir.is_dir():
        assert [p.name for p in report_dir.iterdir()] == [], "a temporary report file was left behind"


# ------------------------------------------------------------------------------------------------
# Loggers, checkpoints, resume state
# ------------------------------------------------------------------------------------------------
class ExplodingLogger(RecordingLogger):
    """A logger that fails on PreNeT's metrics in different ways."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error
        self.user_metrics = 0

    def log_metrics(self, metrics: dict, step: int | None = None) -> None:
        if any(k.startswith("prenet/") for k in metrics):
            raise self.error
        self.user_metrics += 1


@pytest.mark.parametrize("error", [TypeError("cannot log a float"), ConnectionError("wandb unreachable"),
                                   RecursionError("deep"), ValueError("step must increase")])
def test_logger_errors_of_any_kind(tmp_path, tmp_path_factory, error):
    reference = reference_weights(tmp_path_factory)
    logger = ExplodingLogger(error)
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
    module, t, ours, raised = run(tmp_path, callback, logger=logger, log_every_n_steps=1)
    assert raised is None
    assert_same_weights(module, reference)
    assert_clean(module, t, callback)
    assert len(ours) == 1 and type(error).__name__ in str(ours[0].message)
    assert logger.user_metrics > 0  # the user's own metrics keep flowing


def test_checkpoint_that_fails_to_save_fails_the_same_way(tmp_path, monkeypatch):
    """A user's checkpoint error passes through the timing wrapper unchanged, and is not ours."""

    def failing_save(self, checkpoint, filepath, storage_options=None):
        raise OSError(errno.ENOSPC, "No space left on device", str(filepath))

    monkeypatch.setattr(pl.strategies.SingleDeviceStrategy, "save_checkpoint", failing_save)
    outcomes = []
    for callback in (None, PreNeTCallback(report_path=tmp_path / "r.json", **FAST)):
        module, t, ours, raised = run(tmp_path / str(callback is None), callback, enable_checkpointing=True)
        assert isinstance(raised, OSError) and raised.errno == errno.ENOSPC
        assert ours == []
        assert_clean(module, t, callback)
        outcomes.append((type(raised), str(raised).replace(str(tmp_path / str(callback is None)), ""), t.global_step))
    assert outcomes[0] == outcomes[1]


def test_state_dict_failure_keeps_the_checkpoint_and_the_run(tmp_path, tmp_path_factory, monkeypatch):
    reference = reference_weights(tmp_path_factory)
    monkeypatch.setattr(session_module.PredictionSession, "state_dict", _raise)
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
    ckpt = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True)
    module, t, ours, raised = run(tmp_path, callback, extra_callbacks=[ckpt], enable_checkpointing=True)
    assert raised is None and (tmp_path / "ckpt" / "last.ckpt").is_file()
    assert_same_weights(module, reference)
    assert_clean(module, t, callback)
    assert len(ours) == 1


@pytest.mark.parametrize("state", [{"report": {"schema": "prenet-report/99"}}, {"report": "garbage"},
                                   {"measurements": {"batch": 7}}, {"unexpected": 1}])
def test_foreign_callback_state_on_resume_does_not_stop_it(tmp_path, state):
    ckpt_dir = tmp_path / "ckpt"
    first = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
    _, _, _, raised = run(tmp_path, first, epochs=1, extra_callbacks=[ModelCheckpoint(dirpath=ckpt_dir, save_last=True)],
                          enable_checkpointing=True)
    assert raised is None
    path = ckpt_dir / "last.ckpt"
    checkpoint = torch.load(path, weights_only=False)
    key = next(k for k in checkpoint["callbacks"] if k.startswith("PreNeTCallback"))
    checkpoint["callbacks"][key] = state
    torch.save(checkpoint, path)

    second = PreNeTCallback(report_path=tmp_path / "r2.json", **FAST)
    module, t, ours, raised = run(tmp_path, second, epochs=2, ckpt_path=str(path),
                                  extra_callbacks=[ModelCheckpoint(dirpath=ckpt_dir, save_last=True)],
                                  enable_checkpointing=True)
    assert raised is None and t.global_step == 2 * TRAIN_BATCHES
    assert_clean(module, t, second)
    assert len(ours) <= 1


# ------------------------------------------------------------------------------------------------
# User code failing while the callback profiles
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("at_step", [0, 1, 2, 4])  # before, at the start of, inside and after the window
def test_user_exception_during_the_window_propagates_unchanged(tmp_path, at_step):
    outcomes = []
    for callback in (None, PreNeTCallback(report_path=tmp_path / "r.json", **FAST)):
        torch.manual_seed(0)
        module, t, ours, raised = run(tmp_path, callback, module=TinyModule(fail_at_step=at_step))
        assert isinstance(raised, RuntimeError) and str(raised) == "user code failed"
        assert ours == []
        assert_clean(module, t, callback)
        outcomes.append((t.global_step, [p.detach().clone() for p in module.parameters()]))
    assert outcomes[0][0] == outcomes[1][0]
    for a, b in zip(outcomes[0][1], outcomes[1][1]):
        assert torch.equal(a, b)


@pytest.fixture
def restore_sigint():
    handler = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, handler)  # Lightning ignores SIGINT after a KeyboardInterrupt


@pytest.mark.parametrize("at_step", [1, 2])
def test_keyboard_interrupt_during_the_window_behaves_as_without_the_callback(tmp_path, restore_sigint, at_step):
    outcomes = []
    for callback in (None, PreNeTCallback(report_path=tmp_path / "r.json", **FAST)):
        torch.manual_seed(0)
        module, t, ours, raised = run(tmp_path, callback, module=Interrupting(at_step))
        signal.signal(signal.SIGINT, signal.default_int_handler)
        assert ours == []
        assert_clean(module, t, callback)
        outcomes.append((type(raised), getattr(raised, "code", None), t.global_step, t.state.status,
                         [p.detach().clone() for p in module.parameters()]))
    assert outcomes[0][:4] == outcomes[1][:4]
    for a, b in zip(outcomes[0][4], outcomes[1][4]):
        assert torch.equal(a, b)


def test_keyboard_interrupt_inside_the_callback_is_not_swallowed(tmp_path, monkeypatch, restore_sigint):
    """Ctrl+C that lands inside PreNeT's own code still stops the run (and leaves nothing behind)."""

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(session_module, "predict_fit", interrupted)
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
    module, t, ours, raised = run(tmp_path, callback)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    assert raised is not None and t.global_step < EPOCHS * TRAIN_BATCHES
    assert t.state.status == "interrupted"
    assert_clean(module, t, callback)
