"""Step phases timed on the GPU with CUDA events during the profiling window.

Host clocks cannot time GPU work: kernels run asynchronously, so a host-side "forward" is only the
time to launch it. Events are recorded at each phase boundary without synchronising; one
synchronisation at the end of the window resolves them all.
"""
from __future__ import annotations

from typing import Any, Callable

# Each mark opens a phase that lasts until the next mark; "end" closes the batch (the gap to the next
# batch's first mark is data loading, timed on the host).
_PHASE_OF_MARK = {"forward": "forward_s", "backward": "backward_s", "after_backward": "other_s",
                  "optimizer": "optimizer_s", "end": None}


class CudaPhaseEvents:
    """Record phase boundaries as events; `resolve` returns GPU seconds per phase for each step."""

    def __init__(self, event_factory: Callable[[], Any] | None = None,
                 synchronize: Callable[[], None] | None = None) -> None:
        if event_factory is None or synchronize is None:
            import torch

            event_factory = event_factory or (lambda: torch.cuda.Event(enable_timing=True))
            synchronize = synchronize or torch.cuda.synchronize
        self._new_event = event_factory
        self._synchronize = synchronize
        self._current: list[tuple[str, Any]] = []
        self._steps: list[list[tuple[str, Any]]] = []

    def mark(self, name: str) -> None:
        if name not in _PHASE_OF_MARK:
            raise ValueError(f"unknown phase mark {name!r}")
        event = self._new_event()
        event.record()
        self._current.append((name, event))

    def end_step(self) -> None:
        self._steps.append(self._current)
        self._current = []

    def resolve(self) -> list[dict[str, float]]:
        """GPU time per phase for every finished step (one synchronisation)."""
        self._synchronize()
        resolved = []
        for marks in self._steps:
            phases = {"forward_s": 0.0, "backward_s": 0.0, "optimizer_s": 0.0, "other_s": 0.0}
            for (name, start), (_, stop) in zip(marks, marks[1:]):
                phase = _PHASE_OF_MARK[name]
                if phase is not None:
                    phases[phase] += start.elapsed_time(stop) / 1000.0  # CUDA events report ms
            resolved.append(phases)
        self._steps = []
        return resolved
