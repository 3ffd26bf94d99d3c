"""Clean training-step intervals measured on the device's timeline, never blocking the run.

Method: a device mark at the end of every training batch (on a GPU, a CUDA event on the current
stream of the model's device); a step's time is the device-timeline interval between its end mark
and the previous batch's end mark, read only once the end mark has been reached
(``clock.elapsed_s`` is None before that; nothing waits).

Why this and not host timestamps: when nothing synchronises (bf16, no logged metric), the host runs
ahead of the GPU. Right after a synchronisation (the end of the profiling window, a validation
run) the launch queue is empty and the host can queue a step in the time it takes to *launch* it,
so host intervals measure the launch rate until the queue is full again, and a clipped mean clips
only the slow side. On the device timeline a step ends when its last kernel has run, so each
interval is the step's real throughput whether the GPU or the host (data loading, Python) is the
bottleneck: if the GPU waits for the host, the wait lies between the marks too. The other
published remedy, discarding steps until the queue is full again, needs to know the queue depth;
this needs nothing. On a CPU clock marks are host timestamps, the same numbers as before.

    timer = StepTimer(clock)
    ...
    timer.batch_end(clean=True)        # in every training batch end hook
    for seconds in timer.ready():      # whenever convenient: what the device has finished
        ...
"""
from __future__ import annotations

from collections import deque
from typing import Any

from prenet_callbacks.measure.clocks import DeviceClock


class StepTimer:
    """Per-batch device intervals between batch-end marks, handed out once they have completed.

    Args:
        clock: the run's device clock (`prenet_callbacks.measure.clocks.clock_for`).
        max_pending: intervals kept while the device has not reached them; beyond this (a device
            lagging by hundreds of batches) the oldest are dropped, never waited for.
    """

    def __init__(self, clock: DeviceClock, *, max_pending: int = 256) -> None:
        if max_pending < 1:
            raise ValueError(f"StepTimer(max_pending={max_pending}): must be at least 1")
        self.clock = clock
        self.max_pending = max_pending
        self.dropped = 0                       # intervals dropped because the device lagged too far
        self._last: Any = None                 # the previous batch-end mark (None: no run open)
        self._open: Any = None                 # the opening mark of an `open`/`close` interval
        self._pending: deque[tuple[Any, Any, bool, Any]] = deque()

    def batch_end(self, *, clean: bool = True, tag: Any = None, mark: Any = None) -> None:
        """Mark the end of a training batch.

        Args:
            clean: whether the interval since the previous batch end is a plain training batch
                (False when validation, a checkpoint or an epoch boundary fell in between: the
                mark still starts the next interval).
            tag: anything to hand back with the interval (e.g. the global step).
            mark: the batch end's mark when it was taken then (a quiet step's, handed on later); default now.
        """
        mark = self.clock.mark() if mark is None else mark
        if self._last is not None:
            self._add(self._last, mark, clean, tag)
        self._last = mark

    def open(self) -> None:
        """Mark the start of a standalone interval (e.g. a forward pass); `close` ends it."""
        self._open = self.clock.mark()

    def close(self, *, tag: Any = None) -> None:
        """Mark the end of the interval `open` started (nothing happens without one)."""
        if self._open is not None:
            self._add(self._open, self.clock.mark(), True, tag)
            self._open = None

    def _add(self, start: Any, end: Any, clean: bool, tag: Any) -> None:
        self._pending.append((start, end, clean, tag))
        if len(self._pending) > self.max_pending:
            self._pending.popleft()
            self.dropped += 1

    def break_run(self) -> None:
        """The next batch end starts a new run: no interval spans what happens in between."""
        self._last = None

    def ready(self) -> list[float]:
        """Seconds of the clean intervals the device has completed since the last call, in order."""
        return [seconds for seconds, _ in self.ready_tagged()]

    def ready_tagged(self) -> list[tuple[float, Any]]:
        """Like `ready`, with each interval's tag."""
        out: list[tuple[float, Any]] = []
        while self._pending:
            start, end, clean, tag = self._pending[0]
            seconds = self.clock.elapsed_s(start, end)
            if seconds is None:
                break   # marks complete in order on one stream: later ones are not reached either
            self._pending.popleft()
            if clean:
                out.append((seconds, tag))
        return out

    def flush(self) -> list[float]:
        """Wait for the last mark (the fit is over) and return every remaining clean interval."""
        if self._pending:
            self.clock.wait(self._pending[-1][1])
        return self.ready()

    @property
    def pending(self) -> int:
        """Intervals recorded but not yet reached by the device."""
        return len(self._pending)
