"""A plain loop's DataLoader epochs: planned from the training loader's length and timed as boundaries (issue 24)."""
from __future__ import annotations

import types

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from integrations.loop import Tracker
from prenet_callbacks.measure.loader_epochs import watch_loader_epochs
from prenet_callbacks.forecast.plan import plan_for_steps

FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=4, targets=[], print_report=False)


def _loader(n: int = 24, batch: int = 4) -> DataLoader:
    return DataLoader(TensorDataset(torch.randn(n, 8), torch.randn(n, 1)), batch_size=batch)


def _fake_session(accumulate: int = 1) -> types.SimpleNamespace:
    session = types.SimpleNamespace(plan=plan_for_steps(30, accumulate=accumulate), report=types.SimpleNamespace(plan={}),
                                    epochs=0)
    session.train_epoch_start = lambda: setattr(session, "epochs", session.epochs + 1)
    return session


def test_training_loader_gives_epochs_and_each_iteration_starts_one():
    session, other = _fake_session(), _loader(8)
    live = {"on": True}
    original = DataLoader.__iter__
    watcher = watch_loader_epochs(session, lambda: live["on"])
    try:
        train = _loader()
        for _ in range(3):
            for _batch in train:
                pass
            for _batch in other:  # another loader (an evaluation outside a block): not an epoch
                pass
        live["on"] = False
        list(train)               # inside a validation block or after the run: not counted
    finally:
        watcher.remove()
    assert DataLoader.__iter__ is original  # the last listener gone: DataLoader as it was
    assert session.epochs == 3
    assert session.plan.batches_per_epoch == len(train) == 6
    assert session.report.plan["batches_per_epoch"] == 6
    # one batch per step: steps and step-counted events are where the declared plan had them
    assert session.plan.total_steps == 30 and session.plan.epoch_ends_between(0, 30) == 4


def test_accumulation_or_a_loader_without_length_keeps_the_declared_plan():
    session = _fake_session(accumulate=2)
    watcher = watch_loader_epochs(session, lambda: True)
    try:
        list(_loader())
    finally:
        watcher.remove()
    assert session.epochs == 1 and session.plan.batches_per_epoch == float("inf")

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter([torch.zeros(2)] * 3)

    session = _fake_session()
    watcher = watch_loader_epochs(session, lambda: True)
    try:
        list(DataLoader(Stream(), batch_size=None))
    finally:
        watcher.remove()
    assert session.plan.batches_per_epoch == float("inf")


def test_a_listener_error_never_reaches_the_loop():
    session = _fake_session()
    session.train_epoch_start = lambda: 1 / 0
    watcher = watch_loader_epochs(session, lambda: True)
    try:
        assert len(list(_loader())) == 6
    finally:
        watcher.remove()


def test_tracker_over_loader_epochs_plans_and_measures_the_boundaries(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    train, epochs = _loader(48, 4), 4
    original = DataLoader.__iter__
    tracker = Tracker(total_steps=len(train) * epochs, model=model, optimizer=optimizer,
                      report_path=tmp_path / "r.json", **FAST)
    for _ in range(epochs):
        for x, y in train:
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad()
            tracker.step()
    report = tracker.close()
    assert DataLoader.__iter__ is original  # close() removed the listener with the other hooks
    assert report.plan["batches_per_epoch"] == 12
    measured = report.measured["epoch_boundary"]
    assert measured["count"] == epochs - 1          # each new iterator after the first: a boundary, not a step
    assert measured["first_epoch_start_s"] is not None  # the estimate before one is measured
    assert report.first_prediction["rates"]["epoch_boundary_s"] is not None
    assert report.actual["ended"] == "completed"


def test_a_later_wrapper_of_dataloader_iter_survives_our_removal():
    original = DataLoader.__iter__
    session = _fake_session()
    watcher = watch_loader_epochs(session, lambda: True)
    ours = DataLoader.__iter__
    seen = []

    def theirs(loader):  # another library patching DataLoader after us
        seen.append(loader)
        return ours(loader)

    DataLoader.__iter__ = theirs
    try:
        watcher.remove()
        assert DataLoader.__iter__ is theirs         # not overwritten with the original under their feet
        assert len(list(_loader(8))) == 2 and seen   # and the chain under it still iterates
        again = watch_loader_epochs(session, lambda: True)
        list(_loader(8))
        again.remove()
        assert session.epochs == 1                   # our inert wrapper, reused, listens again
    finally:
        DataLoader.__iter__ = original
