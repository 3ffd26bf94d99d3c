"""The eval-forward replay runs under the run's precision: Lightning's plugin, a Trainer's autocast, a loop's."""
from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from integrations.loop import Tracker
from prenet_callbacks.measure.eval_probe import REPEATS, EvalForwardProbe, precision_now, running_under

FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=5, targets=[], print_report=False,
            html=False)


class Seen(nn.Module):
    """Notes, for every forward: train mode, grad mode, CPU autocast on, and the dtype its matmul gave."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
        self.seen: list[tuple[bool, bool, bool, torch.dtype]] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        self.seen.append((self.training, torch.is_grad_enabled(), torch.is_autocast_enabled("cpu"), out.dtype))
        return out

    def replays(self) -> list[tuple[bool, torch.dtype]]:
        """(autocast on, output dtype) of the eval-mode, no-grad calls: the replay's (no validation ran)."""
        return [(autocast, dtype) for training, grad, autocast, dtype in self.seen if not training and not grad]


def test_the_replay_enters_the_autocast_the_training_call_ran_under_and_leaves_it():
    model = Seen().train()
    probe = EvalForwardProbe(model)
    probe.arm()
    probe.new_batch()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(torch.randn(4, 8)).float().sum().backward()
    assert probe.precision == ((("cpu", torch.bfloat16),), torch.float32)
    assert probe.measure() is not None and probe.declined is None
    assert model.replays() == [(True, torch.bfloat16)] * (REPEATS + 1)
    assert not torch.is_autocast_enabled("cpu")          # nothing of the replay's context is left on


def test_a_full_precision_call_is_replayed_in_full_precision_and_the_default_dtype_comes_back():
    model = Seen().train()
    probe = EvalForwardProbe(model)
    probe.arm()
    probe.new_batch()
    model(torch.randn(4, 8)).sum().backward()
    probe.measure()
    assert model.replays() == [(False, torch.float32)] * (REPEATS + 1)
    with running_under(((), torch.float64)):             # a `*-true` run's default dtype, put back after
        assert torch.get_default_dtype() == torch.float64 and precision_now() == ((), torch.float64)
    assert torch.get_default_dtype() == torch.float32


def test_a_lightning_bf16_mixed_fit_replays_its_forward_inside_autocast(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")
    from prenet_callbacks import PreNeTCallback
    from tests.lightning_helpers import loaders, trainer

    class Module(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = Seen()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.model(x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return nn.functional.cross_entropy(self(x).float(), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    module = Module()
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **FAST)
    train, _ = loaders(train_batches=12)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(bf16|precision|num_workers|does not have many workers).*")
        trainer(tmp_path, [callback], max_epochs=1, precision="bf16-mixed", limit_val_batches=0).fit(module, train)
    assert module.model.replays() == [(True, torch.bfloat16)] * (REPEATS + 1)   # no validation ran: the replay's
    assert callback.report.measured["validation"]["eval_forward_s"] > 0


def test_a_loop_under_torch_autocast_replays_its_forward_inside_autocast(tmp_path):
    model = Seen()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tracker = Tracker(total_steps=12, model=model, optimizer=optimizer, report_path=tmp_path / "r.json", **FAST)
    for _ in range(12):
        with tracker.train_step():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(torch.randn(4, 8)).float().pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    tracker.close()
    assert model.replays() == [(True, torch.bfloat16)] * (REPEATS + 1)
    assert tracker.report.measured["validation"]["eval_forward_s"] > 0


def test_a_trainer_with_bf16_replays_its_forward_inside_autocast(tmp_path):
    """accelerate wraps the model's forward itself in autocast: the replay goes through that forward."""
    pytest.importorskip("transformers")
    from prenet_callbacks import PreNeTTrainerCallback
    from tests.hf_helpers import Samples, TinyRegressor, trainer

    class Regressor(TinyRegressor):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[tuple[bool, bool, bool, torch.dtype]] = []

        def forward(self, x, labels=None):
            result = super().forward(x, labels)
            self.seen.append((self.training, torch.is_grad_enabled(), torch.is_autocast_enabled("cpu"),
                              result["logits"].dtype))
            return result

    from accelerate.state import AcceleratorState

    model = Regressor()
    callback = PreNeTTrainerCallback(report_path=tmp_path / "r.json", **FAST)
    shared = dict(AcceleratorState._shared_state)   # accelerate keeps bf16 for every later Accelerator: put back
    try:
        trainer(tmp_path, [callback], model=model, train=Samples(48), bf16=True, num_train_epochs=1).train()
    finally:
        AcceleratorState._shared_state.clear()
        AcceleratorState._shared_state.update(shared)
    replays = [(autocast, dtype) for training, grad, autocast, dtype in model.seen if not training and not grad]
    assert replays == [(True, torch.bfloat16)] * (REPEATS + 1)
