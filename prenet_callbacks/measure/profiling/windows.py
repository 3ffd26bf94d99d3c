"""The profiling windows' own clock: a mark on the run's clock where each window opens and closes.

Their total is what the profile had to explain; what no timed op covers is `unattributed_s`.
"""
from __future__ import annotations

from typing import Any, Callable

from prenet_callbacks.measure.clocks import DeviceClock


class WindowTimer:
    """Marks around each window on `clock`; a failing clock is handed to ``contain`` (what, error)."""

    def __init__(self, clock: DeviceClock, contain: Callable[[str, BaseException], None]) -> None:
        self.clock = clock
        self.contain = contain
        self.opened = 0                       # windows opened, the step count when end_step never came
        self._start: Any = None
        self._marks: list[tuple[Any, Any]] = []

    def open(self) -> None:
        self.opened += 1
        try:
            self._start = self.clock.mark()
        except Exception as exc:  # noqa: BLE001 - a clock fault is contained, never raised into the run
            self.contain("starting the window timer", exc)

    def close(self) -> None:
        if self._start is not None:
            started, self._start = self._start, None
            try:
                self._marks.append((started, self.clock.mark()))
            except Exception as exc:  # noqa: BLE001 - a clock fault is contained, never raised into the run
                self.contain("stopping the window timer", exc)

    def seconds(self) -> float:
        """Total time of the closed windows (waits once for the device to reach the last mark)."""
        if not self._marks:
            return 0.0
        self.clock.wait(self._marks[-1][1])
        return sum(self.clock.elapsed_s(a, b) or 0.0 for a, b in self._marks)
