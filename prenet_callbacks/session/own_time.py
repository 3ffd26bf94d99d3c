"""What PreNeT itself costs the run it watches, measured inside the run.

An A/B comparison of whole fits (``benchmarks/overhead.py``) is the judge of overhead, but on a shared
machine its pairs scatter by several percent, more than the effect it looks for. The session also keeps
its own account: every event method of the session (`session.guard.guarded`) adds its wall time to
`OwnTime` when it is the outermost PreNeT call on the stack (a nested event is already inside its
caller's time), and the session marks the larger pieces inside them (closing the profiling window,
predicting and projecting, the end) as parts. Two clock reads a call (~0.1 us each). An integration's quiet
steps (`quiet_steps`) add the time between the two clock reads that keep each one.

Not in the account: the framework's own cost of calling a hook (and an adapter's one-attribute check before
a phase event on the steps between phase samples, `phase_sampling`), and the slower steps of the profiling
window while the per-module profiler is on (those are training steps, timed as such).
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator

PARTS = ("profiling", "predictions", "end")


class OwnTime:
    """Wall seconds spent inside PreNeT's session calls, in total and for its named parts."""

    def __init__(self, clock: Any = time.perf_counter) -> None:
        self.clock = clock
        self.depth = 0
        self.started = 0.0
        self.new_fit()

    def new_fit(self) -> None:
        """Start a fit's account afresh (an event in progress keeps being counted)."""
        self.total_s = 0.0
        self.calls = 0
        self.parts_s = dict.fromkeys(PARTS, 0.0)

    def enter(self) -> float | None:
        """Start of a session event: its start time when it is the outermost PreNeT call, else None.
        (Two plain methods, not a context manager: this runs several times a step.)"""
        if self.depth:
            return None
        self.depth = 1
        self.started = self.clock()
        return self.started

    def leave(self, start: float | None) -> None:
        """End of the event that `enter` gave ``start`` to."""
        if start is None:
            return
        self.depth = 0
        self.total_s += self.clock() - start
        self.calls += 1

    def add(self, seconds: float, calls: int) -> None:
        """Seconds spent in ``calls`` calls timed elsewhere (an integration's quiet steps, `quiet_steps`)."""
        self.total_s += seconds
        self.calls += calls

    @contextlib.contextmanager
    def part(self, name: str) -> Iterator[None]:
        """A named piece inside an event (already in the total): profiling, predictions or end."""
        start = self.clock()
        try:
            yield
        finally:
            self.parts_s[name] += self.clock() - start

    def summary(self, fit_s: float | None, batches: int) -> dict[str, Any]:
        """The report's ``actual.own_time``: total so far (the event in progress included), its share of
        the fit, the cost per training batch outside the parts, and the parts."""
        total = self.total_s + (self.clock() - self.started if self.depth else 0.0)
        parts = {f"{name}_s": round(seconds, 4) for name, seconds in self.parts_s.items()}
        per_batch = max(0.0, total - sum(self.parts_s.values()))
        return {"total_s": round(total, 4), "share": round(total / fit_s, 5) if fit_s else None,
                "per_batch_us": round(per_batch / batches * 1e6, 1) if batches else None, **parts}
