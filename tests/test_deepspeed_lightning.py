"""`PreNeTCallback` under Lightning's `DeepSpeedStrategy`, on CPU.

Lightning refuses DeepSpeed without CUDA (`DeepSpeedStrategy.setup_environment`); the test-only
subclass below lifts only that check, so the strategy's own code path (deepspeed.initialize with
its config, the engine's backward and step driven by Lightning) runs in one CPU process on gloo.
"""
from __future__ import annotations

import os

os.environ.setdefault("DS_ACCELERATOR", "cpu")

import pytest
import torch

from integrations.deepspeed_cpu import init_single_process_cpu

pytest.importorskip("deepspeed")
init_single_process_cpu()

import lightning.pytorch as pl  # noqa: E402
from lightning.pytorch.strategies import DDPStrategy, DeepSpeedStrategy  # noqa: E402

from integrations.deepspeed_config import describe_engine, precision_of  # noqa: E402
from prenet_callbacks import PreNeTCallback  # noqa: E402
from prenet_callbacks.report import Report  # noqa: E402
from tests.lightning_helpers import TinyModule, loaders  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),  # Lightning's CPU / worker notices
    pytest.mark.filterwarnings("error::prenet_callbacks.session.machine.PreNeTWarning"),
]


class CPUDeepSpeedStrategy(DeepSpeedStrategy):
    """Test only: DeepSpeedStrategy without its CUDA checks (everything else unchanged)."""

    def setup_environment(self) -> None:
        DDPStrategy.setup_environment(self)  # skip DeepSpeedStrategy's "only CUDA" refusal

    def setup_distributed(self) -> None:
        # the strategy checks that device indices match local ranks; a CPU device has no index
        self.parallel_devices = [torch.device("cpu", i) for i in range(len(self.parallel_devices))]
        super().setup_distributed()


class ConfigSpy(PreNeTCallback):
    """Records the engine's DeepSpeed configuration as the fit sees it (engine exists at fit start)."""

    def on_fit_start(self, trainer, pl_module) -> None:
        super().on_fit_start(trainer, pl_module)
        engine = trainer.strategy.deepspeed_engine
        self.seen = {"deepspeed": describe_engine(engine), "precision": precision_of(engine)}


@pytest.mark.parametrize("stage,precision,accumulate", [(0, "32-true", 1), (2, "bf16-mixed", 2), (3, "32-true", 2)])
def test_callback_predicts_under_deepspeed_strategy(stage, precision, accumulate, tmp_path):
    train, val = loaders(train_batches=24, val_batches=2)
    callback = ConfigSpy(warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=2,
                         report_path=tmp_path / "report.json", print_report=False)
    strategy = CPUDeepSpeedStrategy(stage=stage, config={
        "zero_optimization": {"stage": stage}, "zero_allow_untested_optimizer": True,
        "train_micro_batch_size_per_gpu": 4, "steps_per_print": 10**9,
        **({"bf16": {"enabled": True}} if precision == "bf16-mixed" else {}),
    })
    trainer = pl.Trainer(accelerator="cpu", devices=1, strategy=strategy, precision=precision, max_epochs=1,
                         accumulate_grad_batches=accumulate, callbacks=[callback], default_root_dir=tmp_path,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, num_sanity_val_steps=0)
    trainer.fit(TinyModule(), train, val)

    report = callback.report
    assert type(trainer.strategy).__mro__[1] is DeepSpeedStrategy
    assert report.current["strategy"] == "CPUDeepSpeedStrategy"
    assert report.first_prediction is not None and report.first_prediction["predicted_total_s"] > 0
    assert report.plan["total_steps"] == 24 // accumulate
    assert report.actual["steps"] == trainer.global_step == 24 // accumulate
    assert callback.seen["deepspeed"]["zero_stage"] == stage
    assert callback.seen["deepspeed"]["gradient_accumulation_steps"] == accumulate
    assert callback.seen["precision"] == precision
    assert Report.load(tmp_path / "report.json").actual["steps"] == trainer.global_step
