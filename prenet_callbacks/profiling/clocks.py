"""Op timers: `time.perf_counter` on CPU, CUDA event pairs on GPU (resolved once, at the end).

A clock hands out opaque handles per timed interval; `resolve` turns a list of handles into
seconds. On CUDA nothing synchronises until `resolve`, so timing does not serialise the run.
"""
from __future__ import annotations

import time
from typing import Any

import torch


class CpuClock:
    """Wall-clock intervals; a handle is already the elapsed seconds."""

    deferred = False

    def start(self) -> float:
        return time.perf_counter()

    def stop(self, started: float) -> float:
        return time.perf_counter() - started

    def resolve(self, handles: list[Any]) -> float:
        return float(sum(handles))


class CudaClock:
    """GPU-time intervals on the current stream; a handle is a (start, end) event pair."""

    deferred = True

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def start(self) -> Any:
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def stop(self, started: Any) -> tuple[Any, Any]:
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        return started, end

    def resolve(self, handles: list[Any]) -> float:
        # The caller synchronises once before resolving; elapsed_time is in milliseconds.
        return float(sum(a.elapsed_time(b) for a, b in handles)) / 1e3

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)


def make_clock(device: torch.device | None) -> CpuClock | CudaClock:
    """CUDA events when profiling a CUDA device, else perf_counter."""
    if device is not None and device.type == "cuda" and torch.cuda.is_available():
        return CudaClock(device)
    return CpuClock()
