"""Device time of one op, timed the way GPU kernels are timed.

Why our own loop and not `torch.utils.benchmark.Timer`: that timer measures blocks of runs between
host synchronisations with a warm L2 cache, while the predictor is trained on the device time of one
call with its inputs coming from DRAM. This follows the method of Triton's `do_bench`
(`triton.testing`, not a dependency here): CUDA events around every call, no synchronisation
between repeats (the events are read once at the end), and before every call a write of a buffer
larger than any L2 cache, so that each call starts cold. The flush runs on the GPU before the start
event, so the host has already queued the call when its start event fires: the interval is the op's
device time, not the host's launch rate.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

FLUSH_BYTES = 256 * 2**20   # above the largest L2 (B200: 126 MB across both dies)


class Backend(Protocol):
    """What the timer needs from the device (CUDA below; tests pass a fake)."""

    def event(self) -> Any: ...              # object with record() and elapsed_time(other) in ms
    def synchronize(self) -> None: ...
    def flush(self) -> None: ...             # evict the L2 cache (a write of FLUSH_BYTES)


@dataclass
class CudaBackend:
    """Events on the current stream of ``device``, and an L2 flush buffer on it."""

    torch: Any
    device: Any

    def __post_init__(self) -> None:
        self._buffer = self.torch.empty(FLUSH_BYTES // 4, dtype=self.torch.int32, device=self.device)

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def synchronize(self) -> None:
        self.torch.cuda.synchronize(self.device)

    def flush(self) -> None:
        self._buffer.zero_()


@dataclass(frozen=True)
class Timing:
    seconds: float      # median device time of one call
    repeats: int


def time_op(fn: Callable[[], Any], backend: Backend, *, budget_ms: float = 25.0, min_repeats: int = 5,
            max_repeats: int = 200) -> Timing:
    """Median device time of ``fn()``: one warm-up call (cuDNN/cuBLAS heuristics, allocations), a
    5-call estimate, then as many repeats as fit in ``budget_ms`` (within the given bounds)."""
    fn()
    estimate = _run(fn, backend, 5)
    per_call_ms = max(min(estimate), 1e-4)
    repeats = int(min(max(budget_ms / per_call_ms, min_repeats), max_repeats))
    times = sorted(_run(fn, backend, repeats))
    return Timing(times[len(times) // 2] * 1e-3, repeats)


def _run(fn: Callable[[], Any], backend: Backend, repeats: int) -> list[float]:
    starts = [backend.event() for _ in range(repeats)]
    ends = [backend.event() for _ in range(repeats)]
    for start, end in zip(starts, ends):
        backend.flush()
        start.record()
        fn()
        end.record()
    backend.synchronize()
    return [start.elapsed_time(end) for start, end in zip(starts, ends)]
