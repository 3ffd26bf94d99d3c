"""Epochs of a hand-written loop, seen from its training DataLoader: planned and timed like a framework's.

A plain loop that iterates a ``DataLoader`` for several epochs starts a new iterator at each epoch: with
``num_workers`` > 0 that spawns the workers again and waits for their first batches (0.08-0.1 s an epoch
on a 2-core machine with two workers, against a 10 ms step), and a ``shuffle`` draws a new order. A
`Tracker` is told the run's steps, not its epochs, so before this those boundaries were priced as
nothing and, once they happened, counted as (clipped) training steps: the first prediction of an
encoder loop with a 2-worker loader was 8.6% short at the run's own pace.

`watch_loader_epochs` listens to ``DataLoader.__iter__`` while a run is live. The first loader iterated
outside a validation or checkpoint block is the training loader: its length gives the plan's epochs
(``batches_per_epoch``), and every new iteration of it is an epoch start for the session (the interval
that holds it is an epoch boundary, measured; before one is measured, the first epoch's start, from the
iterator's creation to the first batch, is its estimate). Loaders without a length, loops that draw
from a generator or ``itertools.cycle``, and loops with gradient accumulation (whose cycles need not
restart at an epoch's end) keep the plan as declared.
"""
from __future__ import annotations

import functools
import math
import threading
import weakref
from typing import Any, Callable

from torch.utils.data import DataLoader

_lock = threading.Lock()
_listeners: list[Callable[[Any], None]] = []
_original_iter: Any = None


def _patched_iter(loader: Any) -> Any:
    for listener in list(_listeners):  # a copy: a listener may remove itself (its run ending) meanwhile
        try:
            listener(loader)
        except Exception:  # noqa: BLE001 - watching an epoch must never break the user's loop
            pass
    return _original_iter(loader)


def _add(listener: Callable[[Any], None]) -> None:
    global _original_iter
    with _lock:
        if _original_iter is None:   # not installed (an inert one left under a later wrapper is reused)
            _original_iter = DataLoader.__iter__
            DataLoader.__iter__ = functools.wraps(_original_iter)(_patched_iter)  # type: ignore[method-assign]
        _listeners.append(listener)


def _discard(listener: Callable[[Any], None]) -> None:
    """Stop one listener; with the last one gone put back what ``DataLoader.__iter__`` was, unless
    someone wrapped it again on top of ours: theirs stays, and ours, left under it, is inert."""
    global _original_iter
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)
        if _listeners or _original_iter is None:
            return
        if getattr(DataLoader.__dict__.get("__iter__"), "__wrapped__", None) is _original_iter:
            DataLoader.__iter__ = _original_iter  # type: ignore[method-assign]
            _original_iter = None


class LoaderEpochs:
    """The listener for one run; ``remove()`` stops it (and restores ``DataLoader.__iter__`` when last)."""

    def __init__(self, session: Any, live: Callable[[], bool]) -> None:
        self.session = session
        self.live = live
        self.loader: Any = None       # weak reference to the training loader, once seen
        self.epochs_started = 0

    def __call__(self, loader: Any) -> None:
        if not self.live():
            return
        if self.loader is None:
            self.loader = weakref.ref(loader)
            self._plan_epochs(loader)
        elif self.loader() is not loader:
            return  # another loader (an evaluation outside a validation block): not the training epochs
        self.epochs_started += 1
        self.session.train_epoch_start()

    def _plan_epochs(self, loader: Any) -> None:
        plan = getattr(self.session, "plan", None)
        if plan is None or math.isfinite(plan.batches_per_epoch) or plan.accumulate != 1 or plan.steps_per_batch:
            return
        try:
            batches = len(loader)
        except TypeError:  # an iterable dataset: no epochs to plan
            return
        if batches < 1:
            return
        # one batch per optimizer step: the steps and every step-counted event stay where they were
        plan.batches_per_epoch = float(batches)
        self.session.report.plan = plan.to_dict()

    def remove(self) -> None:
        _discard(self)


def watch_loader_epochs(session: Any, live: Callable[[], bool]) -> LoaderEpochs:
    """Start listening for the training loader's epochs of ``session`` while ``live()``; returns the handle."""
    watcher = LoaderEpochs(session, live)
    _add(watcher)
    return watcher
