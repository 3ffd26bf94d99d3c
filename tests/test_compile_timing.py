"""torch.compile's compilations are one-off costs: never a validation run's or a step's rate (issue 24).

A compiled model compiles in the first training steps, again for eval mode (the sanity check), and at
recompiles. A backend that takes a known time to "compile" (it sleeps, then runs the graph as it is)
makes that cost unmistakable on a CPU in a second or two.
"""
from __future__ import annotations

import time

import lightning.pytorch as pl
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from prenet_callbacks import PreNeTCallback
from prenet_callbacks.measure.compile_clock import CompileClock

COMPILE_S = 1.5


def _slow_backend(gm, example_inputs):
    time.sleep(COMPILE_S)
    return gm.forward


class _Net(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 4))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, _):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def validation_step(self, batch, _):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def test_compile_clock_sums_compilations_and_reads_zero_without_them():
    torch.compiler.reset()
    clock = CompileClock()
    assert clock.install()          # this test module imported Dynamo through torch.compiler
    try:
        f = torch.compile(lambda x: x * 2 + 1, backend=_slow_backend)
        before = clock.seconds()
        f(torch.ones(3))
        first = clock.seconds() - before
        f(torch.ones(3))            # cached: no compilation
        assert first >= COMPILE_S * 0.9 and clock.seconds() - before == pytest.approx(first)
    finally:
        clock.remove()
        torch.compiler.reset()


@pytest.mark.slow
def test_a_compiled_model_does_not_charge_compilation_to_every_validation_run(tmp_path):
    torch.compiler.reset()
    data = TensorDataset(torch.randn(512, 32), torch.randint(0, 4, (512,)))
    model = _Net()
    model.forward = torch.compile(model.forward, backend=_slow_backend)
    callback = PreNeTCallback(report_path=tmp_path / "r.json", warmup_steps=2, profile_steps=2, timing_steps=5,
                              print_report=False, html=False)
    trainer = pl.Trainer(max_epochs=3, callbacks=[callback], logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=2,
                         default_root_dir=tmp_path)
    trainer.fit(model, DataLoader(data, batch_size=16), DataLoader(data, batch_size=64))
    torch.compiler.reset()
    report = callback.report
    assert not callback.session.guard.disabled
    first = report.first_prediction
    # a validation run of 8 small batches: milliseconds, not the seconds of an eval-mode compilation
    assert first["rates"]["validation_run_s"] < COMPILE_S / 3
    assert report.measured["validation"]["mean_s"] < COMPILE_S / 3
    # what remains beyond the training batches at the measured pace (three validation runs, epoch ends) is less
    # than one compilation: none is charged again (0.08 s on a quiet machine, 0.52 s once with every batch 30x
    # slower beside a second test worker). Not the ratio to the fit's wall time, which a neighbour on a shared
    # CPU moved by 73% once
    batches_left = report.plan["total_batches"] - first["at_batch"]
    assert 0 <= first["eta_s"] - batches_left * first["rates"]["batch_s"] < COMPILE_S
    assert report.measured["compile_s"] >= 2 * COMPILE_S * 0.9   # training graph and eval graph, at least
