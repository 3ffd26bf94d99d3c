"""Device clocks: points on the timeline of the device a model runs on, read without blocking.

One clock object is chosen by the integration from the trainer's or engine's device
(`strategy.root_device`, `engine.device`) with `clock_for`, and handed to the session and to the
profiler, so that neither decides from a string whether the run is on a GPU.

- `CpuClock`: ``time.perf_counter``; a mark is a float, always reached.
- `CudaClock`: CUDA events recorded on ``torch.cuda.current_stream(device)`` of the model's
  device (not of the current device: a model on ``cuda:1`` without ``set_device`` is timed on
  GPU 1); a mark is reached when the stream has run everything queued before it
  (``event.query()``), so reading a mark never synchronises. Peak memory is that device's.

Importing this module does not import torch; only building a `CudaClock` does.

    clock = clock_for("cuda:1")
    a = clock.mark(); ...; b = clock.mark()
    clock.elapsed_s(a, b)      # None until the GPU reaches b, then seconds on the GPU's timeline
"""
from __future__ import annotations

import time
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class DeviceClock(Protocol):
    """What the session and the profiler need from a device's timeline."""

    kind: str      # "cpu" | "cuda"
    device: str    # "cpu", "cuda:1"

    def mark(self) -> Any:
        """A point on the device timeline, recorded now, without synchronising."""

    def elapsed_s(self, start: Any, end: Any) -> float | None:
        """Seconds from `start` to `end`; None while the device has not reached `end` (never blocks)."""

    def wait(self, mark: Any) -> None:
        """Block until the device reaches `mark`."""

    def reset_peak_memory(self) -> None:
        """Start a new peak-memory window on this device."""

    def peak_memory_bytes(self) -> int | None:
        """Peak bytes allocated on this device since the last reset; None where unknown (CPU)."""


class CpuClock:
    """Host time (``time.perf_counter``): right where ops run synchronously (CPU, meta)."""

    kind = "cpu"

    def __init__(self, device: str = "cpu") -> None:
        self.device = device

    def mark(self) -> float:
        return time.perf_counter()

    def elapsed_s(self, start: float, end: float) -> float:
        return end - start

    def wait(self, mark: float) -> None:
        return None

    def reset_peak_memory(self) -> None:
        return None

    def peak_memory_bytes(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"CpuClock({self.device!r})"


class CudaClock:
    """CUDA events on the current stream of one GPU; peak memory of that GPU.

    Args:
        index: the GPU's index (``cuda:1`` is 1).
    """

    kind = "cuda"

    def __init__(self, index: int) -> None:
        import torch

        self._torch = torch
        self.index = int(index)
        self.device = f"cuda:{self.index}"
        self._device = torch.device("cuda", self.index)

    def mark(self) -> Any:
        torch = self._torch
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(self._device))
        return event

    def elapsed_s(self, start: Any, end: Any) -> float | None:
        if not end.query() or not start.query():
            return None
        return start.elapsed_time(end) / 1e3   # CUDA events report milliseconds

    def wait(self, mark: Any) -> None:
        mark.synchronize()

    def reset_peak_memory(self) -> None:
        self._torch.cuda.reset_peak_memory_stats(self._device)

    def peak_memory_bytes(self) -> int:
        return int(self._torch.cuda.max_memory_allocated(self._device))

    def __repr__(self) -> str:
        return f"CudaClock({self.device!r})"


def clock_for(device: Any = "cpu") -> CpuClock | CudaClock:
    """The clock for the device a model trains on.

    Args:
        device: a ``torch.device`` or its string (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"meta"``).
            ``"cuda"`` without an index means the current GPU. Devices other than CUDA get host
            time (`CpuClock`), labelled with the device's name.

    Raises:
        ValueError: a CUDA device when CUDA is not available, or a malformed device string.
    """
    text = str(device) if device is not None else "cpu"
    kind, _, index = text.partition(":")
    if kind != "cuda":
        if index and not index.isdigit():
            raise ValueError(f"clock_for(device={device!r}): expected a device such as 'cpu' or 'cuda:1'")
        return CpuClock(text)
    import torch

    if not torch.cuda.is_available():
        raise ValueError(f"clock_for(device={device!r}): CUDA is not available in this process; "
                         "pass the device the model actually runs on (e.g. 'cpu')")
    if index and not index.isdigit():
        raise ValueError(f"clock_for(device={device!r}): expected 'cuda' or 'cuda:<index>'")
    return CudaClock(int(index) if index else torch.cuda.current_device())
