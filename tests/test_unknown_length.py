"""A training loader without a length: a rate until the first epoch ends, then a total for the whole run.

A real Lightning fit over an iterable dataset of 40 batches an epoch, ``max_epochs=2``, with validation at each
epoch's end (as Lightning runs it for a loader without a length).
"""
from __future__ import annotations

import contextlib
import io
import warnings

import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset

from prenet_callbacks import PreNeTCallback
from prenet_callbacks.forecast.plan import RunPlan
from prenet_callbacks.outputs.render import render_text
from tests.lightning_helpers import TinyModule, loaders, trainer

FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, targets=[], html=False)
BATCHES = 40


class Finite(IterableDataset):
    """``4 * BATCHES`` samples and no ``__len__``: 40 batches of 4 an epoch, which no one can know beforehand."""

    def __iter__(self):
        g = torch.Generator().manual_seed(0)
        for _ in range(4 * BATCHES):
            yield torch.randn(8, generator=g), torch.randint(0, 2, (), generator=g)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("unknown")
    callback = PreNeTCallback(report_path=folder / "r.json", **FAST)
    module = TinyModule()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            trainer(folder, [callback], max_epochs=2).fit(module, DataLoader(Finite(), batch_size=4),
                                                          loaders(val_batches=3)[1])
    return callback, module, out.getvalue()


def test_a_rate_first_then_a_total_after_the_first_epoch(fitted):
    callback, module, printed = fitted
    report = callback.report
    first, *later = report.predictions
    assert first["predicted_total_s"] is None and first["batches_per_s"] > 0
    at_epoch_end = next(p for p in later if p["predicted_total_s"] is not None)
    assert at_epoch_end["at_step"] == BATCHES                    # made when the first epoch ended
    assert at_epoch_end["low_s"] <= at_epoch_end["predicted_total_s"] <= at_epoch_end["high_s"]
    assert at_epoch_end["eta_s"] == pytest.approx(at_epoch_end["predicted_total_s"] - at_epoch_end["elapsed_s"],
                                                  abs=0.01)
    plan = report.plan
    assert plan["total_steps"] == 2 * BATCHES and plan["batches_per_epoch"] == BATCHES and plan["max_epochs"] == 2
    assert plan["validation_runs"] == module.validation_runs == 2  # the epochs' validation runs, counted as they ran
    assert report.actual["steps"] == 2 * BATCHES
    assert sum("an epoch is taken as long as the first one seen (40 batches)" in n for n in report.limitations) == 1


def test_one_message_each_time(fitted):
    _, _, printed = fitted
    flat = " ".join(line.strip("│ ") for line in printed.splitlines())   # the panel's lines, unwrapped
    # the panel says once why there is no total yet, and when it comes
    assert flat.count("the training dataloader has no length") == 1
    assert "the total comes when the first epoch ends (max_epochs=2)" in flat and "Note:" not in flat
    # when the first epoch ends, one line gives the total
    lines = [line for line in printed.splitlines() if line.startswith("PreNeT: the first epoch ran 40 batches")]
    assert len(lines) == 1 and "predicted fit time" in lines[0] and "to go" in lines[0]


def test_the_final_panel_shows_the_learned_plan(fitted):
    callback, _, _ = fitted
    text = render_text(callback.report, width=100)
    assert "Plan: 80 optimizer steps, 2 epochs, 2 validation runs" in text


def test_nothing_to_learn_without_max_epochs_or_with_a_length():
    endless = RunPlan(total_batches=float("inf"), batches_per_epoch=float("inf"))
    assert endless.learn_epoch_length(40, None) is None and not endless.known_length
    sized = RunPlan(total_batches=80.0, batches_per_epoch=40.0, max_epochs=2)
    assert sized.learn_epoch_length(30, 2) is None and sized.total_batches == 80
    resumed = RunPlan(total_batches=float("inf"), batches_per_epoch=float("inf"), start_epoch=1, start_step=40)
    assert resumed.learn_epoch_length(40, 3) == 40 and resumed.total_steps == 120 and resumed.start_batch == 40
