"""Step phases timed on the device's own timeline during the profiling window.

Host clocks cannot time GPU work: kernels run asynchronously, so a host-side "forward" is only the
time to launch it. Phase boundaries are marks of the `DeviceClock` the integration chose (CUDA
events on the current stream of the model's device), recorded without synchronising; `resolve`
waits once, for the window's last mark, and reads them all.
"""
from __future__ import annotations

from typing import Any, Callable

from prenet_callbacks.measure.clocks import DeviceClock, clock_for

# Each mark opens a phase that lasts until the next mark; "end" closes the batch (the gap to the next
# batch's first mark is data loading, timed on the host).
_PHASE_OF_MARK = {"forward": "forward_s", "backward": "backward_s", "after_backward": "other_s",
                  "optimizer": "optimizer_s", "end": None}


class _EventFactoryClock:
    """A clock made of an event factory and a synchronise function (the older constructor)."""

    kind = "cuda"
    device = "cuda"

    def __init__(self, event_factory: Callable[[], Any], synchronize: Callable[[], None]) -> None:
        self._new_event = event_factory
        self._synchronize = synchronize

    def mark(self) -> Any:
        event = self._new_event()
        event.record()
        return event

    def elapsed_s(self, start: Any, end: Any) -> float:
        return start.elapsed_time(end) / 1000.0   # CUDA events report ms

    def wait(self, mark: Any) -> None:
        self._synchronize()


class PhaseEvents:
    """Record phase boundaries as device marks; `resolve` returns device seconds per phase per step.

    Args:
        clock: the run's device clock. Default: the current CUDA device (prefer passing the clock
            of the device the model runs on).
        event_factory, synchronize: the older way to build it (CUDA-event-like objects with
            ``record``/``elapsed_time`` and a synchronise function); ignored when `clock` is given.
    """

    def __init__(self, event_factory: Callable[[], Any] | None = None,
                 synchronize: Callable[[], None] | None = None, *,
                 clock: DeviceClock | None = None) -> None:
        if clock is None:
            if event_factory is not None and synchronize is not None:
                clock = _EventFactoryClock(event_factory, synchronize)
            else:
                clock = clock_for("cuda")
        self.clock = clock
        self._current: list[tuple[str, Any]] = []
        self._steps: list[list[tuple[str, Any]]] = []

    def mark(self, name: str) -> None:
        if name not in _PHASE_OF_MARK:
            raise ValueError(f"unknown phase mark {name!r}; expected one of {sorted(_PHASE_OF_MARK)}")
        self._current.append((name, self.clock.mark()))

    def end_step(self) -> None:
        self._steps.append(self._current)
        self._current = []

    def resolve(self) -> list[dict[str, float]]:
        """Device time per phase for every finished step (one wait, for the last mark)."""
        last = next((marks[-1][1] for marks in reversed(self._steps) if marks), None)
        if last is not None:
            self.clock.wait(last)
        resolved = []
        for marks in self._steps:
            phases = {"forward_s": 0.0, "backward_s": 0.0, "optimizer_s": 0.0, "other_s": 0.0}
            for (name, start), (_, stop) in zip(marks, marks[1:]):
                phase = _PHASE_OF_MARK[name]
                if phase is not None:
                    phases[phase] += self.clock.elapsed_s(start, stop) or 0.0
            resolved.append(phases)
        self._steps = []
        return resolved


# The name the session uses today.
CudaPhaseEvents = PhaseEvents
