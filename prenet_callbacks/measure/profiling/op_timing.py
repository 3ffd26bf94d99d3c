"""How captured ops and compiled blocks are timed: the host clock, or torch.profiler ranges.

- ``"dispatch"`` (`HostOpTimer`): ``time.perf_counter`` around each op inside the dispatch mode.
  Right on CPU and meta, where an op has finished when its call returns.
- ``"cupti"`` (`ProfilerOpTimer`, device source): on CUDA a host clock (or an event pair around a
  dispatch) measures launches, not kernels: the capture slows the host, the GPU runs dry and each
  interval takes in dispatch and launch. So each op runs inside a ``record_function`` range
  labelled with a number, `torch.profiler` records the kernels with CUPTI, and afterwards each
  range's time is the device time of the kernels its ops launched (`trace.label_times`).
- ``"profiler"`` (`ProfilerOpTimer`, CPU source): the same ranges and parse with the profiler's CPU
  activity and each op's CPU time, so that the CUDA path's API use and correlation can be checked on
  a machine without a GPU.

A timer hands out a token per timed range (`start`), turns it into a handle (`stop`), and after
`close` turns a list of handles into seconds (`resolve`). ``deferred`` timers only know seconds
after `close`.
"""
from __future__ import annotations

import itertools
import time
from typing import Any

import torch

from prenet_callbacks.measure.profiling.errors import ProfilerError
from prenet_callbacks.measure.profiling.trace import LabelTimes, label_times

OP_TIMINGS = ("dispatch", "cupti", "profiler")
LABEL_PREFIX = "prenet#"


class HostOpTimer:
    """Host seconds around each op; a handle is already the elapsed seconds."""

    kind = "dispatch"
    deferred = False

    def open(self) -> None:
        return None

    def start(self) -> float:
        return time.perf_counter()

    def stop(self, started: float) -> float:
        return time.perf_counter() - started

    def close(self) -> list[str]:
        return []

    def resolve(self, handles: Any) -> float:
        return float(handles) if isinstance(handles, (int, float)) else float(sum(handles))


class ProfilerOpTimer:
    """Numbered ``record_function`` ranges under one torch.profiler session; a handle is a number.

    Args:
        source: "device" (CUDA kernels through CUPTI: ``op_timing="cupti"``) or "cpu"
            (the profiler's CPU op times: ``op_timing="profiler"``).
        activities: torch.profiler activities to record; default: CPU, plus CUDA for "device".
    """

    deferred = True

    def __init__(self, source: str = "device", *, activities: list[Any] | None = None) -> None:
        if source not in ("device", "cpu"):
            raise ProfilerError(f"ProfilerOpTimer(source={source!r}): expected 'device' or 'cpu'")
        self.source = source
        self._activities = activities
        self.kind = "cupti" if source == "device" else "profiler"
        self._prof: Any = None
        self._numbers = itertools.count(1)
        self._opened = 0
        self.times: LabelTimes | None = None

    def open(self) -> None:
        """Start the torch.profiler session (once, at the start of the profiling window)."""
        from torch.profiler import ProfilerActivity, profile, supported_activities

        if torch._C._autograd._profiler_enabled():
            raise ProfilerError("another torch.profiler / autograd profiler session is running; two "
                                "cannot share a thread. Stop it, or use profile_layers=False")
        activities = self._activities
        if activities is None:
            activities = [ProfilerActivity.CPU]
            if self.source == "device":
                if ProfilerActivity.CUDA not in supported_activities():
                    raise ProfilerError("this torch build's profiler cannot record CUDA kernels (no "
                                        "CUPTI/kineto), which per-op GPU times need")
                activities.append(ProfilerActivity.CUDA)
        prof = profile(activities=activities, record_shapes=False, profile_memory=False,
                       with_stack=False, with_flops=False, with_modules=False)
        prof.start()
        self._prof = prof

    def start(self) -> tuple[int, Any]:
        n = next(self._numbers)
        rf = torch.autograd.profiler.record_function(LABEL_PREFIX + str(n))
        rf.__enter__()
        return n, rf

    def stop(self, token: tuple[int, Any]) -> int:
        n, rf = token
        rf.__exit__(None, None, None)
        self._opened += 1
        return n

    def close(self) -> list[str]:
        """Stop the profiler and read the trace; returns sentences about what could not be timed."""
        prof, self._prof = self._prof, None
        if prof is None:
            return []
        prof.stop()   # on CUDA this synchronises the device once
        self.times = label_times(self.trace_events(prof), LABEL_PREFIX, source=self.source)
        notes = []
        if self._opened and self.times.labels == 0:
            notes.append("the torch.profiler trace lost every op range (another profiler started "
                         "during the window?): per-op times are zero")
        elif self.source == "device" and self._opened and self.times.device_records == 0:
            notes.append("torch.profiler recorded no GPU kernels (CUPTI unavailable or busy?): "
                         "per-op times are zero")
        return notes

    def trace_events(self, prof: Any) -> list[Any]:
        """The raw kineto events of a stopped session (cheaper than building ``prof.events()``)."""
        results = getattr(prof.profiler, "kineto_results", None)
        return list(results.events()) if results is not None else []

    def resolve(self, handles: Any) -> float:
        seconds = self.times.seconds if self.times is not None else {}
        return float(sum(seconds.get(n, 0.0) for n in handles))

    @property
    def unlabelled_s(self) -> float:
        """Device time of kernels launched outside every op range (device source)."""
        return self.times.unlabelled_s if self.times is not None else 0.0


def op_timer_for(clock_kind: str, op_timing: str | None = None) -> HostOpTimer | ProfilerOpTimer:
    """The op timer for a clock kind ("cpu"/"cuda"); `op_timing` None picks the right one.

    Raises:
        ProfilerError: an unknown `op_timing`, or one that cannot time this device's ops.
    """
    if op_timing is None:
        op_timing = "cupti" if clock_kind == "cuda" else "dispatch"
    if op_timing not in OP_TIMINGS:
        raise ProfilerError(f"op_timing={op_timing!r}: expected one of {OP_TIMINGS} or None")
    if clock_kind == "cuda" and op_timing != "cupti":
        raise ProfilerError(f"op_timing={op_timing!r} cannot time GPU kernels (it times launches); "
                            "use op_timing='cupti' or None on CUDA")
    if clock_kind != "cuda" and op_timing == "cupti":
        raise ProfilerError(f"op_timing='cupti' needs a CUDA clock, got a {clock_kind!r} clock; "
                            "use 'dispatch' (default) or 'profiler' on CPU")
    if op_timing == "dispatch":
        return HostOpTimer()
    return ProfilerOpTimer("device" if op_timing == "cupti" else "cpu")
