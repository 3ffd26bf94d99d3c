"""Issue 7: the models people train, each fitted by Lightning with `PreNeTCallback()` (layers profiled).

Models come from `tests/model_zoo.py` (in-place activations, tied and shared weights, attention,
LSTM/GRU, embeddings, BatchNorm/LayerNorm, custom autograd Functions, activation checkpointing,
a torch.compile'd submodule) plus a few defined here (GroupNorm in nested containers, a fully
compiled model) and training set-ups (manual optimization with two optimizers, gradient clipping,
gradient accumulation, bf16-mixed on CPU). Each fit must give no warning, a sane report (layers,
a first prediction of the right order, the actual steps) and, under a fixed seed, exactly the
weights of the same fit without the callback; no hook is left behind.
"""
from __future__ import annotations

import json
import warnings
from typing import Any, Callable

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

import lightning.pytorch as pl

from prenet_callbacks import PreNeTCallback
from prenet_callbacks.measure.profiling import hook_snapshot
from prenet_callbacks.session.machine import PreNeTWarning
from tests.lightning_helpers import trainer
from tests.model_zoo import ZOO, loss_fn

BATCHES = 14
OPTIONS = dict(warmup_steps=1, profile_steps=2, timing_steps=3, metrics_every_n_steps=4, print_report=False)


# ------------------------------------------------------------------------------------------------
# Zoo members missing from tests/model_zoo.py
# ------------------------------------------------------------------------------------------------
class NestedGroupNormNet(nn.Module):
    """GroupNorm, ModuleDict inside ModuleList inside Sequential, a shared activation module, dropout."""

    def __init__(self) -> None:
        super().__init__()
        self.act = nn.SiLU()
        self.stages = nn.ModuleList([
            nn.ModuleDict({"conv": nn.Conv2d(3, 8, 3, padding=1), "norm": nn.GroupNorm(2, 8)}),
            nn.ModuleDict({"conv": nn.Conv2d(8, 8, 3, padding=1), "norm": nn.GroupNorm(4, 8)}),
        ])
        self.head = nn.Sequential(nn.Sequential(nn.Flatten(), nn.Dropout(0.2)), nn.Linear(8 * 8 * 8, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for stage in self.stages:
            x = self.act(stage["norm"](stage["conv"](x)))
        return self.head(x)


def _nested():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(4, 3, 8, 8, generator=gen), torch.randint(0, 10, (4,), generator=gen)
    return NestedGroupNormNet(), lambda: ((x,), y)


def _fully_compiled():
    torch.manual_seed(0)
    model = torch.compile(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10)), backend="aot_eager")
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(8, 16, generator=gen), torch.randint(0, 10, (8,), generator=gen)
    return model, lambda: ((x,), y)


MODELS: dict[str, Callable[[], tuple[nn.Module, Callable]]] = {**ZOO, "nested_groupnorm": _nested,
                                                                "fully_compiled": _fully_compiled}


# ------------------------------------------------------------------------------------------------
# A LightningModule around any zoo model
# ------------------------------------------------------------------------------------------------
class Batches(Dataset):
    """The zoo's batch, slightly perturbed per index so that every step differs (deterministic)."""

    def __init__(self, batch_fn: Callable, n: int) -> None:
        self.inputs, self.target = batch_fn()
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        inputs = tuple(t + 0.01 * i if t.is_floating_point() else t for t in self.inputs)
        return inputs, self.target


class ZooModule(pl.LightningModule):
    def __init__(self, name: str, *, manual: bool = False) -> None:
        super().__init__()
        self.model, batch_fn = MODELS[name]()
        self.data = Batches(batch_fn, BATCHES)
        self.automatic_optimization = not manual

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(*inputs)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        inputs, target = batch
        if self.automatic_optimization:
            return loss_fn(self(*inputs).float(), target)
        # manual optimization, two optimizers (parameters split in two halves), clipping by hand
        for optimizer in self.optimizers():
            optimizer.zero_grad()
            loss = loss_fn(self(*inputs).float(), target)
            self.manual_backward(loss)
            self.clip_gradients(optimizer, gradient_clip_val=0.5, gradient_clip_algorithm="norm")
            optimizer.step()
        return None

    def configure_optimizers(self) -> Any:
        params = list(self.parameters())
        if self.automatic_optimization:
            return torch.optim.AdamW(params, lr=1e-3)
        half = max(1, len(params) // 2)
        return [torch.optim.SGD(params[:half], lr=0.05, momentum=0.9), torch.optim.Adam(params[half:], lr=1e-3)]

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.data, batch_size=None, shuffle=False)


SETUPS: dict[str, dict[str, Any]] = {
    **{name: {} for name in MODELS},
    "transformer+clip": dict(model="transformer", trainer=dict(gradient_clip_val=0.5)),
    "recurrent+accumulate": dict(model="recurrent", trainer=dict(accumulate_grad_batches=3)),
    "tied_lm+manual_two_optimizers": dict(model="tied_lm", manual=True),
    "nested_groupnorm+manual_two_optimizers": dict(model="nested_groupnorm", manual=True),
    "mlp+bf16-mixed": dict(model="mlp", trainer=dict(precision="bf16-mixed")),
    "transformer+bf16-mixed": dict(model="transformer", trainer=dict(precision="bf16-mixed")),
    "checkpoint+bf16-mixed": dict(model="checkpoint", trainer=dict(precision="bf16-mixed")),
}


def fit(tmp_path, setup: dict[str, Any], callback: PreNeTCallback | None):
    pl.seed_everything(0, verbose=False)
    module = ZooModule(setup.get("model", setup["name"]), manual=setup.get("manual", False))
    before = hook_snapshot(module)
    t = trainer(tmp_path, [callback] if callback else [], max_epochs=2, **setup.get("trainer", {}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.fit(module)
    ours = [str(w.message) for w in caught if issubclass(w.category, PreNeTWarning)]
    return module, t, ours, before


_REFERENCES: dict[str, list[torch.Tensor]] = {}


@pytest.mark.parametrize("name", list(SETUPS))
def test_zoo_model_trains_with_the_callback(tmp_path, name):
    setup = dict(SETUPS[name], name=name)
    reference, ref_trainer, _, _ = fit(tmp_path / "ref", setup, None)
    callback = PreNeTCallback(report_path=tmp_path / "r.json", **OPTIONS)
    module, t, ours, before = fit(tmp_path / "run", setup, callback)

    # the run is untouched
    assert ours == [], ours
    assert t.global_step == ref_trainer.global_step > 0
    for (pname, a), b in zip(module.named_parameters(), reference.parameters()):
        assert torch.equal(a.detach(), b.detach()), f"{pname} differs from the fit without the callback"
    assert hook_snapshot(module) == before
    assert torch._C._len_torch_dispatch_stack() == 0 and "save_checkpoint" not in t.__dict__

    # the report is sane
    session = callback.session
    assert not session.guard.disabled, session.guard.failure
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["actual"]["steps"] == t.global_step
    assert data["plan"]["total_steps"] == t.global_step
    first = data["predictions"][0]
    assert first["predicted_total_s"] > first["elapsed_s"] > 0 and first["step_s"] > 0
    assert first["low_s"] <= first["predicted_total_s"] <= first["high_s"]
    # the prediction is of the right order for the pace it was made at: what remains is the plan's remaining
    # batches at the measured batch time (and this fit has no validation or checkpoints). Not the wall clock
    # after it: this fit lasts a third of a second, and a stall of another process on a busy machine (2.1 s
    # once, beside a second test worker) can be longer than the whole run; ETA accuracy is measured by
    # benchmarks/eta_accuracy.py, not here
    assert first["steps"] == data["plan"]["total_steps"]
    remaining = (data["plan"]["total_batches"] - first["at_batch"]) * first["rates"]["batch_s"]
    assert 0.5 < first["eta_s"] / remaining < 2
    layers = data["measured"].get("layers")
    assert layers, "no per-layer profile"
    rows = layers["layers"] if isinstance(layers, dict) else layers
    assert rows and any(row.get("params", row.get("parameters", 0)) for row in rows if isinstance(row, dict))
    assert data["measured"]["profiled_steps"] >= 1
