"""A busy machine, seen from the run: how long its threads waited for a CPU, and how its clean steps spread.

Another CPU-bound process beside the run slows its steps by whatever share of the cores it takes, and
that share moves (a shared host ran this project's steps at 2 ms and 170 ms within a minute). The
mean of such steps is the run's real pace here, and the ETA uses it, but it is not the model's own
host time: carried to a GPU it would become every target's step.

The measurement that says so is the run's own: Linux counts, per thread, the time spent on a CPU and the
time spent runnable but waiting for one (``/proc/self/task/*/schedstat``). `CpuWait` reads both at each
prediction (no per-batch cost) and gives the share of the interval's runnable time spent waiting: near
zero on a quiet machine, large when something else holds the cores. It has no lag, unlike the 1-minute
load average, which stays high for a minute after a busy neighbour stops (a quiet run started then was
named busy when the load alone decided). Where schedstat does not exist, the load beyond the run's own
threads counts only when the clean steps' spread (90th over 10th percentile) agrees.

`contention` gives the figures, read at each prediction; the projection takes a CPU run's host time from
its steps without the wait (`from_report`), and the report names the busy machine in one line.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from prenet_callbacks.forecast.estimators import RobustDuration
from prenet_callbacks.units import format_step_time

# The clean steps' quantile a host time may come from: a step that nothing else slowed (the 20th
# percentile, not the minimum: one lucky step is not the model's pace).
CLEAN_QUANTILE = 0.2
_WAIT_BUSY = 0.10         # the run's threads waited for a CPU this share of their runnable time: busy
_SPREAD_BUSY = 2.0        # p90 / p10 of clean batches at or above this: the steps are not one pace
_OTHERS_BUSY = 1.0        # load average beyond the run's own threads: at least one other busy core's worth
_MIN_BATCHES = 8
LINE_START = "the machine is busy"

ThreadTimes = dict[str, tuple[int, int]]


def thread_times() -> ThreadTimes | None:
    """Per thread of this process, nanoseconds ``(on a CPU, runnable but waiting for one)`` (Linux's
    schedstat); None where the kernel does not expose them."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:   # not Linux
        return None
    found: ThreadTimes = {}
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as stat:
                fields = stat.read().split()
        except OSError:   # the thread ended meanwhile, or schedstat is off
            continue
        found[tid] = (int(fields[0]), int(fields[1]))
    return found or None


class CpuWait:
    """The share of the run's runnable time its threads spent waiting for a CPU, between readings.

    Args:
        read: the per-thread times (`thread_times`; tests pass their own).
    """

    def __init__(self, read: Callable[[], ThreadTimes | None] = thread_times) -> None:
        self.read = read
        self.last = read()

    def share(self) -> float | None:
        """Waiting / (on a CPU + waiting) since the previous call (or construction); None without schedstat.

        A thread that ended since the last reading drops out; one that started counts from zero."""
        now = self.read()
        before, self.last = self.last, now
        if now is None or before is None:
            return None
        run = wait = 0
        for tid, (on_cpu, waiting) in now.items():
            was_on, was_waiting = before.get(tid, (0, 0))
            run += on_cpu - was_on
            wait += waiting - was_waiting
        return wait / (run + wait) if run + wait > 0 else None


def contention(batch: RobustDuration, *, threads: int, wait: float | None = None, window_wait: float | None = None,
               cores: int | None = None, load: float | None = None,
               data: RobustDuration | None = None) -> dict[str, Any] | None:
    """The clean batches' quantiles, the threads' wait for a CPU (``wait``: since the last prediction;
    ``window_wait``: up to the profiling window's close), the machine's load and the data wait's clean quantile
    (``data``: the batches' waits for their data; a short fetch is often not preempted at all, where the
    mean carries every preemption); None before `_MIN_BATCHES` clean batches."""
    if len(batch.recent) < _MIN_BATCHES:
        return None
    cores = cores or os.cpu_count() or 1
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (OSError, AttributeError):   # not on this OS
            load = None
    p10, p20, p50, p90 = (batch.quantile(q) for q in (0.1, CLEAN_QUANTILE, 0.5, 0.9))
    others = max(0.0, load - threads) if load is not None else None
    spread = p90 / p10 if p10 else None
    if wait is not None:      # measured in the interval itself: it decides
        busy = wait >= _WAIT_BUSY
    else:                     # the load lags: it counts only when the steps' spread agrees
        busy = bool(spread is not None and spread >= _SPREAD_BUSY and others is not None and others >= _OTHERS_BUSY)
    return {"p10_s": p10, "p20_s": p20, "p50_s": p50, "p90_s": p90, "spread": round(spread, 3) if spread else None,
            "cpu_wait": round(wait, 3) if wait is not None else None,
            "window_cpu_wait": round(window_wait, 3) if window_wait is not None else None,
            "load_1min": round(load, 2) if load is not None else None, "cores": cores, "threads": threads,
            "busy": busy, "data_p20_s": _clean_quantile(data)}


def _clean_quantile(samples: RobustDuration | None) -> float | None:
    if samples is None or len(samples.recent) < _MIN_BATCHES:
        return None
    return samples.quantile(CLEAN_QUANTILE)


def busy_line(found: dict[str, Any] | None) -> str | None:
    """One line for the panel when the machine is busy, naming what was measured; None when it is not."""
    if not found or not found["busy"]:
        return None
    parts = []
    if found.get("cpu_wait") is not None:
        parts.append(f"this run's threads waited for a CPU {found['cpu_wait']:.0%} of the time they were ready to run")
    if found["load_1min"] is not None:
        parts.append(f"load average {found['load_1min']:.1f} on {found['cores']} cores")
    if found["spread"]:
        parts.append(f"steps {format_step_time(found['p10_s'])} to {format_step_time(found['p90_s'])} "
                     "(10th to 90th percentile)")
    return (f"{LINE_START} ({'; '.join(parts)}): the ETA follows the run's pace here; other hardware is projected "
            "from its steps without the wait")


def note_contention(limitations: list[str], found: dict[str, Any] | None) -> None:
    """Keep one current busy-machine line among the report's limitations (replacing the previous one)."""
    limitations[:] = [line for line in limitations if not line.startswith(LINE_START)]
    line = busy_line(found)
    if line:
        limitations.append(line)
