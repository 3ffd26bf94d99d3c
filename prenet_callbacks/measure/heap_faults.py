"""Page faults of training steps on a CPU: the allocator returning a step's memory to the kernel, or not.

A CPU step allocates its activations and gradients afresh and frees them at its end. glibc's malloc
keeps freed memory for the next step, or hands it back to the kernel (it trims the heap's top, and
unmaps chunks above its mmap threshold), and then every step faults the same pages in again, zeroed.
Which of the two happens depends on where long-lived allocations happen to lie in the heap, so it
changes when the process allocates something else (an evaluation, a checkpoint, a new tensor): the
same loop in the same process ran at 5.3 ms a step with no faults, and at 7.2 ms with 1,800 minor
faults a step (an LSTM, batch 16, on this project's 2-core host; an encoder showed the same). On the
plain-loop benchmark that flip came after the first prediction in 2 of 3 runs and made them 25% slower.

`HeapWatch` watches without changing anything: it counts the timed batches' minor faults (``getrusage``),
which say what the run pays now: every batch until the first prediction, then as often as the reads keep
within `READ_SHARE` of the run's time (`read_due`), each read spread over the batches since the last one.
A read is one ``getrusage`` of the whole process: ~0.5 us in a tight loop, but right after a training step
on this project's shared 2-core host 14 us at the median and 1.6 ms on average (6-13 ms in one call in ten;
``/proc/self/stat``, which also sums the process's CPU time over its threads, has the same tail;
``RUSAGE_THREAD`` has none, but misses the faults of torch's worker threads). A run seen faulting heavily
pays that on the run itself: at `seconds_per_fault` each, `HeapRisk` prices the batches without those
faults, the band reaches down to them (`prenet_callbacks.forecast.eta`), and a note names the fix. The other state,
a run that does not fault now starting to, cannot be seen without changing the process, so by default it
is neither priced nor in the band. With ``allocator_probe=True`` the user opts in to a probe that does:
the watch trims the heap (``malloc_trim(0)``, which changes the process's heap for the rest of the run)
before one untimed warm-up batch and counts that batch's faults, the pages a step touches afresh when nothing is kept, and the band
reaches that state too. jemalloc or tcmalloc (``LD_PRELOAD``), or ``MALLOC_TOP_PAD_`` (bytes glibc keeps at
the heap's top), keep the pages: the probe then finds few to fault, or is skipped.

Only on Linux with glibc (``malloc_trim`` resolves); elsewhere nothing is watched.
"""
from __future__ import annotations

import ctypes
import math
import os
import statistics
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

from prenet_callbacks.units import format_step_time

# Reads of timed batches' faults kept (the median of the latest says what the run pays now).
_RECENT_BATCHES = 64
# After the first prediction the count is read while reads cost at most this share of the run (`read_due`):
# on a quiet host a read right after a step takes 15-20 us, so about one read every 150-200 ms (0.05% had read
# one batch in four of a 9-ms loop, ~5 us a batch with the read's bookkeeping: 2026-12-05, line by line).
READ_SHARE = 0.0001
# The note is shown when the measured (or probed) cost of a batch's faults is above this share of the batch.
_NOTE_SHARE = 0.05
_PAGE_BYTES = 4096
_FIX = ("to avoid it, start Python with MALLOC_TOP_PAD_=268435456 in the environment (or with jemalloc or "
        "tcmalloc preloaded)")


def glibc_trim() -> Callable[[], object] | None:
    """glibc's ``malloc_trim(0)`` (return every free heap page to the kernel), or None where there is none
    or where ``MALLOC_TOP_PAD_`` already keeps the heap's top (the risk the probe measures is handled)."""
    if not sys.platform.startswith("linux") or os.environ.get("MALLOC_TOP_PAD_"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # musl, a static build: no such call
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)


@dataclass(frozen=True)
class HeapRisk:
    """What a batch would cost more (``refault_s``) or less (``faulting_s``) if the allocator changed state."""

    probe_faults: int | None   # faults of one batch after a heap trim (every fresh page it touches); None: no probe
    current_faults: float      # median faults of the latest timed batches
    seconds_per_fault: float

    @property
    def refault_s(self) -> float:
        """Seconds a batch adds if every batch re-faulted what the probe did (0 without a probe: not seen)."""
        if self.probe_faults is None:
            return 0.0
        return max(0.0, self.probe_faults - self.current_faults) * self.seconds_per_fault

    @property
    def faulting_s(self) -> float:
        """Seconds a batch saves if the faults it takes now stopped."""
        return self.current_faults * self.seconds_per_fault

    def reach_s(self, batches: float) -> tuple[float, float]:
        """``(down, up)``: seconds the remaining ``batches`` save or add in the other state."""
        return batches * self.faulting_s, batches * self.refault_s

    def describe(self, batch_s: float, batches: float, predicted_s: float) -> str | None:
        """The note for a prediction of ``predicted_s`` with ``batches`` of ``batch_s`` left, in plain words;
        None unless the batch's measured (or probed) fault cost is above `_NOTE_SHARE` of ``batch_s``."""
        down, up = self.reach_s(batches)
        starts = up >= down and self.probe_faults is not None
        per_batch = self.refault_s if starts else self.faulting_s
        if per_batch <= _NOTE_SHARE * batch_s:
            return None
        cost = f"{format_step_time(per_batch)} ({per_batch / batch_s:.0%} of a batch)"
        if starts:
            megabytes = self.probe_faults * _PAGE_BYTES / 1e6
            return (f"memory: each batch would take {cost} longer if the C library's allocator (glibc) starts "
                    f"handing freed memory back to the system between batches, as it may at any point: every batch "
                    f"would then ask again for {megabytes:.0f} MB; the band allows for it (up to "
                    f"+{up / predicted_s:.0%}); {_FIX}")
        megabytes = self.current_faults * _PAGE_BYTES / 1e6
        return (f"memory: each batch spends {cost} asking the system again for {megabytes:.0f} MB that the C "
                f"library's allocator (glibc) handed back after the previous batch; this may stop at any point, "
                f"so the band reaches down to the run without it (-{down / predicted_s:.0%}); {_FIX}")


class HeapWatch:
    """Counts page faults of timed training batches; with ``trim``, also probes one untimed batch after a heap trim.

    Args:
        faults: the process's minor page faults so far (`sanity.minor_faults`).
        fault_cost: seconds one first-touch fault costs here (`sanity.seconds_per_fault`).
        trim: returns free heap memory to the kernel (`glibc_trim`); None (the default): never called,
            nothing probed, the process is left as it is (``allocator_probe=True`` passes it).
        clock: the session's clock, for what a read costs (`read_due`).
    """

    def __init__(self, faults: Callable[[], int | None], fault_cost: Callable[[], float | None],
                 trim: Callable[[], object] | None = None, clock: Callable[[], float] = time.perf_counter) -> None:
        self.faults = faults
        self.fault_cost = fault_cost
        self.trim = trim
        self.clock = clock
        self._read_at = -math.inf    # when the count was last read (session time) and what reading it cost
        self._read_cost = 0.0
        self.probe_faults: int | None = None
        self._probe_from: int | None = None
        self._last_end: int | None = None
        self._unread = 0             # batch ends since the last count read (`skip_batch`)
        self._recent: deque[float] = deque(maxlen=_RECENT_BATCHES)   # faults per batch, per read

    @property
    def probes(self) -> bool:
        """Whether this watch trims the heap to probe the other state (only with ``allocator_probe=True``)."""
        return self.trim is not None

    def start_probe(self) -> None:
        """Trim the heap now; the batch that follows is the probe (call at its start). Without ``trim``: nothing."""
        if self.trim is None:
            return
        self.trim()
        self._probe_from = self.faults()

    def read_due(self, now: float) -> bool:
        """Whether a read at session time ``now`` keeps reads within `READ_SHARE` of the run: the last read's
        cost against the time since it."""
        return self._read_cost <= READ_SHARE * (now - self._read_at)

    def batch_end(self, *, timing: bool) -> None:
        """A training batch ended: the probe's faults, or the timed batches' since the last read, per batch."""
        started = self.clock()
        now = self.faults()
        self._read_at = self.clock()
        self._read_cost = self._read_at - started
        if now is None:
            return
        batches, self._unread = self._unread + 1, 0
        if self._probe_from is not None:
            self.probe_faults, self._probe_from = now - self._probe_from, None
        elif timing and self._last_end is not None:
            self._recent.append((now - self._last_end) / batches)
        self._last_end = now

    def skip_batch(self) -> None:
        """A batch end whose count is not read (`read_due`): the next read spreads its faults over this one."""
        self._unread += 1

    def skip_interval(self) -> None:
        """What ran since the last batch end (a prediction, the profiler's stop) is not a batch's faults."""
        self._last_end = self.faults()
        self._unread = 0

    def risk(self) -> HeapRisk | None:
        """What the timed batches' faults cost (and, with a probe, the other state), once some were counted."""
        if not self._recent or (self.trim is not None and self.probe_faults is None):
            return None
        cost = self.fault_cost()
        if not cost:
            return None
        return HeapRisk(self.probe_faults, float(statistics.median(self._recent)), cost)
