"""How long torch.compile has spent compiling, so that compile time is a one-off and never a rate.

A compiled model compiles on its first training call, again on the first call in eval mode (the
sanity check or the first validation run: another graph), and at every recompile. Timed as part of
that batch or that validation run, a few seconds of compilation would be charged to every later run
of it (a validation run of 30 ms estimated at 14 s). Dynamo announces each compilation to
``torch._dynamo.callback.callback_handler`` (start and end callbacks); `CompileClock` sums the time
between them, and the session takes what fell inside a timed region off that region's rate.

Importing Dynamo costs seconds, so the clock only listens when it is already imported (a model was
compiled before the run started); otherwise nothing can compile through it and it reads zero.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable


class CompileClock:
    """Seconds spent inside Dynamo compilations since `install` (``seconds()``); `remove` stops listening."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._done = 0.0
        self._open: list[float] = []          # start times of compilations in progress (nesting is possible)
        self._handler: Any = None

    @property
    def installed(self) -> bool:
        return self._handler is not None

    def install(self) -> bool:
        """Listen to Dynamo's compile callbacks if Dynamo is imported; True when listening."""
        if self._handler is not None or "torch._dynamo" not in sys.modules:
            return self._handler is not None
        try:
            from torch._dynamo.callback import callback_handler
        except ImportError:   # a torch without the callback handler: compile time stays in the rates
            return False
        callback_handler.register_start_callback(self._start)
        callback_handler.register_end_callback(self._end)
        self._handler = callback_handler
        return True

    def remove(self) -> None:
        handler, self._handler = self._handler, None
        if handler is not None:
            handler.remove_start_callback(self._start)
            handler.remove_end_callback(self._end)

    def seconds(self) -> float:
        """Compile seconds so far, counting a compilation still in progress up to now (called at every
        batch end: with nothing compiling it returns at once)."""
        if not self._open:   # nothing compiling now (one list read, atomic under the GIL): no lock, no clock read
            return self._done
        with self._lock:
            now = self._clock()
            return self._done + sum(now - start for start in self._open[:1])

    def _start(self, *args: Any) -> None:
        with self._lock:
            self._open.append(self._clock())

    def _end(self, *args: Any) -> None:
        with self._lock:
            if not self._open:
                return
            start = self._open.pop()
            if not self._open:   # only the outermost compilation counts (nested ones are inside it)
                self._done += self._clock() - start
