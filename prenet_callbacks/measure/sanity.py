"""The sanity check's validation batches, timed warm: what one validation batch costs before a real one ran.

The sanity check runs the real validation step at the real validation batch size, in eval mode, so
it is the right measurement but a cold one. On a CPU most of the coldness is first-touch page faults:
before training has grown the heap, glibc hands large tensors back to the kernel when they are freed,
so every validation batch touches fresh pages again (measured here: a CNN's batch of 128 took 125 ms
with 15,600 faults, 88 ms once training had run; an encoder's 64 ms with 8,800 faults, 40 ms warm).
Training then keeps those pages for batches its own size, and later validation runs at that size do
not pay them; an eval batch well above the training one allocates afresh and faults again in every
run (issue 24: a CNN at 4x the training batch). `SanityTimer` counts the process's minor page faults
over the batches and gives the batches both as timed and with the faults' cost, measured once per
process on this machine (`seconds_per_fault`), taken off: the estimate of a validation run uses the
first, its band reaches down to the second (`prenet_callbacks.forecast.eta`).

A compiled model compiles its eval graph in the sanity check's first batch. Dynamo's own compile time is
taken off by the session (`prenet_callbacks.measure.compile_clock`), but that first call also loads and first runs
the generated code outside Dynamo's callbacks (0.5 s a run left on a compiled encoder whose warm validation
run took 0.3 s): when a graph compiled during the check, its first batch's excess over the others is a
one-off of that graph, not a fixed cost of every validation run, and the fixed part is taken as zero.

``resource`` is POSIX: elsewhere no faults are counted and the sanity check is taken as timed.
"""
from __future__ import annotations

import functools
import mmap
import sys
import time
from dataclasses import dataclass
from typing import Callable

try:
    import resource
except ImportError:  # Windows: no fault counts, no correction
    resource = None  # type: ignore[assignment]

# Size of the probe that measures one fault's cost: large enough to time (512 faults of 4 KiB pages,
# 0.1-0.5 ms), small enough to be free (the 8 MiB it was cost 30 ms of the user's run).
_PROBE_BYTES = 2 << 20
_PROBE_REPEATS = 3
# Never remove more than this share of a timed interval: a fault cost measured under load could
# otherwise erase the batch itself.
_MAX_REMOVED_SHARE = 0.6


def minor_faults() -> int | None:
    """Minor page faults of this process so far (None where the OS does not say)."""
    if resource is None:
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


@functools.lru_cache(maxsize=1)
def seconds_per_fault() -> float | None:
    """One first-touch page fault's cost on this machine: a fresh anonymous mapping written twice
    (the first write faults every page in, the second does not); median over a few probes."""
    if resource is None:
        return None
    costs = []
    payload = b"\x01" * _PROBE_BYTES
    for _ in range(_PROBE_REPEATS):
        with mmap.mmap(-1, _PROBE_BYTES) as buffer:
            before = minor_faults() or 0
            start = time.perf_counter()
            buffer.write(payload)
            cold = time.perf_counter() - start
            faults = (minor_faults() or 0) - before
            buffer.seek(0)
            start = time.perf_counter()
            buffer.write(payload)
            warm = time.perf_counter() - start
        if faults > 0:
            costs.append(max(0.0, cold - warm) / faults)
    return sorted(costs)[len(costs) // 2] if costs else None


def graphs_compiled() -> int:
    """Graphs Dynamo has compiled in this process so far (0 without Dynamo imported: nothing compiled)."""
    if "torch._dynamo" not in sys.modules:
        return 0
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return 0
    return int(counters["stats"].get("unique_graphs", 0))


@dataclass
class SanityTimer:
    """The first and last batch ends of one sanity check, with the page-fault count at each.

    ``faults`` counts the process's minor page faults (None: not counted); ``fault_cost`` gives
    seconds per fault, asked only when faults happened; ``compiled`` counts graphs compiled so far.
    """

    faults: Callable[[], int | None] | None = None
    fault_cost: Callable[[], float | None] = seconds_per_fault
    compiled: Callable[[], int] = graphs_compiled
    start_s: float | None = None
    start_graphs: int = 0
    start_faults: int | None = None
    first_end: tuple[float, int | None] | None = None
    last_end: tuple[float, int | None] | None = None
    batches: int = 0

    def start(self, now: float) -> None:
        self.start_s, self.start_faults = now, self._count()
        self.start_graphs = self.compiled()
        self.first_end = self.last_end = None
        self.batches = 0

    def batch_end(self, now: float) -> None:
        self.last_end = (now, self._count())
        self.first_end = self.first_end or self.last_end
        self.batches += 1

    def _count(self) -> int | None:
        return self.faults() if self.faults is not None else None

    def _warm(self, seconds: float, faults_from: int | None, faults_to: int | None) -> tuple[float, float]:
        """``seconds`` less the faults' cost, and the cost removed."""
        if faults_from is None or faults_to is None or faults_to <= faults_from or seconds <= 0:
            return seconds, 0.0
        cost = self.fault_cost()
        if not cost:
            return seconds, 0.0
        removed = min((faults_to - faults_from) * cost, _MAX_REMOVED_SHARE * seconds)
        return seconds - removed, removed

    def result(self, end_s: float) -> tuple[float, float, float] | None:
        """(per batch, fixed part of the run, seconds of page faults removed), warm; None without batches.

        Per batch: from the first batch's end to the last's (the first batch also carries one-off
        start-up work); the fixed part is what the run took beyond its batches, zero when a graph
        compiled during the check (then that excess is the new graph's first call, see the module).
        """
        if self.start_s is None or self.first_end is None or self.last_end is None:
            return None
        duration, removed_total = self._warm(end_s - self.start_s, self.start_faults, self._count())
        if self.batches == 1:
            return duration, 0.0, removed_total
        (first_s, first_faults), (last_s, last_faults) = self.first_end, self.last_end
        between, _ = self._warm(last_s - first_s, first_faults, last_faults)
        per_batch = between / (self.batches - 1)
        fixed = 0.0 if self.compiled() > self.start_graphs else max(0.0, duration - per_batch * self.batches)
        return per_batch, fixed, removed_total

    def raw_per_batch(self, end_s: float) -> float | None:
        """Per batch as timed, faults and all (what `result` gives before its correction)."""
        if self.start_s is None or self.first_end is None or self.last_end is None:
            return None
        if self.batches == 1:
            return end_s - self.start_s
        return (self.last_end[0] - self.first_end[0]) / (self.batches - 1)
