"""PreNeTCallback inside real (tiny) Lightning fits."""
from __future__ import annotations

import json
import warnings

import pytest
import torch

import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint

import prenet_callbacks.session.machine as session_module
from prenet_callbacks import PreNeTCallback
from prenet_callbacks.measure.step_account import StepAccount
from prenet_callbacks.session.machine import PreNeTWarning
from tests.lightning_helpers import RecordingLogger, Stream, TinyModule, loaders, trainer
from torch.utils.data import DataLoader

FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=5, targets=[], print_report=False)


def fit(tmp_path, callback=None, seed=0, epochs=2, module=None, **kwargs):
    pl.seed_everything(seed, verbose=False)
    module = module or TinyModule()
    callbacks = [callback] if callback is not None else []
    trainer(tmp_path, callbacks, max_epochs=epochs, **kwargs).fit(module, *loaders(train_batches=20))
    return module


def test_predicts_and_writes_the_report(tmp_path):
    callback = PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, **FAST)
    fit(tmp_path, callback)
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["schema"] == "prenet-report/2.1"
    first = data["predictions"][0]
    assert first["at_step"] == 4 and first["predicted_total_s"] > first["elapsed_s"] > 0
    assert data["actual"]["steps"] == 40 and data["actual"]["fit_s"] > 0
    assert data["plan"]["total_steps"] == 40 and data["plan"]["validation_runs"] == 2
    assert callback.report.to_dict()["predictions"] == data["predictions"]


def test_accepted_by_the_standalone_pytorch_lightning_trainer(tmp_path):
    import pytorch_lightning as ptl

    class PTLModule(ptl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(8, 2)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.cross_entropy(self.layer(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    callback = PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, **FAST)
    t = ptl.Trainer(max_epochs=1, callbacks=[callback], logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False, default_root_dir=str(tmp_path))
    t.fit(PTLModule(), loaders(train_batches=30)[0])
    assert callback.report.first_prediction is not None and not callback.session.guard.disabled


def test_metrics_reach_every_logger(tmp_path):
    logger = RecordingLogger()
    fit(tmp_path, PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, **FAST), logger=logger)
    prenet = [m for _, m in logger.metrics if "prenet/eta_s" in m]
    assert prenet and {"prenet/eta_s", "prenet/predicted_total_s", "prenet/step_s"} <= set(prenet[0])


def test_default_report_path_is_the_log_dir(tmp_path):
    callback = PreNeTCallback(profile_layers=False, **FAST)
    fit(tmp_path, callback, logger=pl.loggers.CSVLogger(str(tmp_path), name="logs"))
    assert (tmp_path / "logs" / "version_0" / "prenet_report.json").is_file()


@pytest.mark.parametrize("where", ["predict_fit", "save_checkpoint", "logger"])
def test_injected_failure_warns_once_and_leaves_the_run_unchanged(tmp_path, monkeypatch, where):
    reference = fit(tmp_path / "ref", None, enable_checkpointing=True)

    class BrokenLogger(RecordingLogger):
        def log_metrics(self, metrics, step=None):
            if any(k.startswith("prenet/") for k in metrics):
                raise OSError("disk full")

    kwargs = dict(enable_checkpointing=True)
    if where == "predict_fit":
        monkeypatch.setattr(session_module, "predict_fit", lambda *a, **k: 1 / 0)
    elif where == "save_checkpoint":
        monkeypatch.setattr(StepAccount, "checkpoint_end", lambda self: 1 / 0)
    else:
        kwargs["logger"] = BrokenLogger()
    callback = PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, **FAST)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = fit(tmp_path / "run", callback, **kwargs)
    ours = [w for w in caught if issubclass(w.category, PreNeTWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    assert callback.session.guard.disabled
    for a, b in zip(reference.parameters(), module.parameters()):
        assert torch.equal(a, b)
    assert module.trainer.global_step == reference.trainer.global_step
    assert "save_checkpoint" not in module.trainer.__dict__  # the timing wrapper is gone


def test_weights_are_bit_identical_with_and_without_the_callback(tmp_path):
    reference = fit(tmp_path / "ref", None)
    module = fit(tmp_path / "run", PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, **FAST))
    for a, b in zip(reference.parameters(), module.parameters()):
        assert torch.equal(a, b)


def test_user_exception_propagates_and_cleans_up(tmp_path):
    callback = PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, **FAST)
    module = TinyModule(fail_at_step=6)
    with pytest.raises(RuntimeError, match="user code failed"):
        fit(tmp_path, callback, module=module)
    assert "save_checkpoint" not in module.trainer.__dict__


class StopAfter(pl.Callback):
    def __init__(self, batches: int) -> None:
        self.batches = batches

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if batch_idx + 1 >= self.batches:
            trainer.should_stop = True


def test_unknown_length_gives_a_rate_and_says_why(tmp_path):
    callback = PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, **FAST)
    t = trainer(tmp_path, [callback, StopAfter(30)], max_epochs=1, limit_val_batches=0)
    t.fit(TinyModule(), DataLoader(Stream(), batch_size=4))
    entries = callback.report.predictions
    assert entries and all(p["predicted_total_s"] is None for p in entries)
    assert entries[0]["batches_per_s"] > 0 and "no length" in entries[0]["note"]
    assert callback.report.actual["steps"] == 30


def test_resume_keeps_the_history(tmp_path):
    ckpt_dir = tmp_path / "ckpt"
    first = PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, **FAST)
    pl.seed_everything(0, verbose=False)
    t = trainer(tmp_path, [first, ModelCheckpoint(dirpath=ckpt_dir, save_last=True)], max_epochs=1,
                enable_checkpointing=True)
    t.fit(TinyModule(), *loaders(train_batches=20))
    before = list(first.report.predictions)
    second = PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, **FAST)
    t2 = trainer(tmp_path, [second, ModelCheckpoint(dirpath=ckpt_dir, save_last=True)], max_epochs=3,
                 enable_checkpointing=True)
    t2.fit(TinyModule(), *loaders(train_batches=20), ckpt_path=str(ckpt_dir / "last.ckpt"))
    history = second.report.predictions
    assert history[: len(before)] == before and len(history) > len(before)
    resumed = [p for p in history if p["fit"] == 2]
    assert resumed and resumed[0]["at_step"] > 20
    assert second.report.plan["start_step"] == 20 and second.report.actual["steps"] == 60


@pytest.mark.parametrize("kwargs, message", [
    (dict(warmup_steps=-1), "warmup_steps must be >= 0"),
    (dict(profile_steps=0), "profile_steps must be >= 1"),
    (dict(metrics_every_n_steps=2.5), "metrics_every_n_steps must be an integer"),
    (dict(timing_steps=True), "timing_steps must be an integer"),
    (dict(targets=[""]), "non-empty strings"),
    (dict(targets=123), "must be a list"),
])
def test_bad_constructor_arguments_raise_clearly(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PreNeTCallback(**kwargs)


def test_report_path_that_is_a_directory_is_refused(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        PreNeTCallback(report_path=tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="which is a file"):
        PreNeTCallback(report_path=tmp_path / "file" / "r.json")


@pytest.mark.parametrize("where", ["construct", "start"])
def test_a_profiler_failure_keeps_step_timing_with_one_warning(tmp_path, monkeypatch, where):
    import integrations.lightning as lightning_module
    from prenet_callbacks.measure.profiling import ModuleProfiler

    if where == "construct":
        monkeypatch.setattr(lightning_module, "_make_profiler", lambda pl_module: 1 / 0)
    else:
        monkeypatch.setattr(ModuleProfiler, "start", lambda self: 1 / 0)
    reference = fit(tmp_path / "ref", None)
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = fit(tmp_path / "run", callback)
    assert len([w for w in caught if issubclass(w.category, PreNeTWarning)]) == 1
    assert not callback.session.guard.disabled and callback.report.first_prediction is not None
    assert any("per-module profile unavailable" in text for text in callback.report.limitations)
    for a, b in zip(reference.parameters(), module.parameters()):
        assert torch.equal(a, b)
    assert torch._C._len_torch_dispatch_stack() == 0


def test_layer_profile_lands_in_the_report(tmp_path):
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **{**FAST, "profile_steps": 2})
    fit(tmp_path, callback)
    layers = {layer["name"]: layer for layer in callback.report.measured["layers"]["layers"]}
    first_linear = layers["net.0"]
    assert first_linear["module_type"] == "Linear" and first_linear["forward_s"] > 0 and first_linear["backward_s"] > 0
    gemm = [op for op in first_linear["ops"] if op["spec"]["op_class"] == "gemm" and op["phase"] == "fwd"][0]
    assert gemm["spec"]["dims"]["k"] == 8 and gemm["spec"]["dims"]["n"] == 16
    assert callback.report.measured["profiled_steps"] == 2
    assert set(callback.report.measured["step_phases"]) >= {"data_s", "forward_s", "backward_s", "optimizer_s"}


def test_default_targets_are_projected_with_a_recommendation(tmp_path):
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **{**FAST, "targets": None})
    fit(tmp_path, callback)
    targets = callback.report.targets
    names = {(t["devices"], t["name"]) for t in targets}
    assert (8, "H100-SXM5") in names and (1, "A100-SXM4-80GB") in names
    assert all(t["total_s"] > 0 for t in targets)
    rec = callback.report.recommendation
    # a 0.2-s fit: whether a GPU wins by more than its band is the rule's call; either way the advice is
    # consistent with the rows (tests/test_advice_consistency.py checks the rule itself)
    assert rec["text"] and (rec["stay"] or rec["fastest"] in {t["label"] for t in targets})
    assert callback.report.current["batch_size"] == 4 and callback.report.current["optimizer"] == "sgd"


# -- patches of the trainer survive ours -----------------------------------------------------------
def test_a_users_save_checkpoint_patch_survives_the_timing_wrapper(tmp_path):
    """The wrapper is undone by putting back what the trainer had, not by deleting the attribute."""
    callback = PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, **FAST)
    t = trainer(tmp_path, [callback], max_epochs=2, enable_checkpointing=True)
    original, calls = t.save_checkpoint, []

    def users_save(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    t.save_checkpoint = users_save
    t.fit(TinyModule(), *loaders(train_batches=10))
    assert t.__dict__["save_checkpoint"] is users_save  # restored, not deleted
    assert len(calls) == 2 and callback.report.measured["checkpoint"]["files"] == 2  # still timed


def test_a_callbacks_patch_made_before_ours_survives(tmp_path):
    from tests.lightning_helpers import SaveCounter

    saves = SaveCounter()
    callback = PreNeTCallback(report_path=tmp_path / "r.json", profile_layers=False, **FAST)
    t = trainer(tmp_path, [saves, callback], max_epochs=2, enable_checkpointing=True)
    t.fit(TinyModule(), *loaders(train_batches=10))
    patched = t.__dict__["save_checkpoint"]
    assert patched.__name__ == "counting" and saves.saves == 2
    t.save_checkpoint(tmp_path / "after.ckpt")  # the user's patch still works after the fit
    assert saves.saves == 3
