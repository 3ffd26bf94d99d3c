"""Read a torch.profiler trace: the time of each labelled range (``record_function``) we opened.

Every captured op runs inside a range labelled ``<prefix><n>`` (see `op_timing`). Afterwards:

- ``source="device"`` (CUDA): a kernel (or memcpy/memset) belongs to the range that encloses the
  torch op that launched it. Kineto links each device record to that op by correlation id
  (``linked_correlation_id`` of the device record == ``correlation_id`` of the op, which is the
  innermost non-user op on the launching thread), and the op belongs to the range on the op's
  thread whose interval contains the op's start. CPU records that carry a linked id themselves
  (``cudaLaunchKernel`` and other runtime calls) are CUPTI's, in another id space, and are skipped. Any thread counts, so backward ops on autograd's
  device threads are found; user-annotation records (the GPU-side copies of our ranges) are
  skipped. Only device durations are summed: the host time spent around an op never enters.
- ``source="cpu"``: the duration of the torch ops directly inside a range (not their children),
  i.e. the op's own CPU time without the capture's overhead. Used on CPU to check this parse with
  the real profiler API.

Events are read through the methods of ``torch._C._autograd._KinetoEvent`` (name, device_type,
start_ns, end_ns, start_thread_id, correlation_id, linked_correlation_id, is_user_annotation,
duration_ns); anything with those methods works, which is how tests feed device records to it.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Iterable

from torch.autograd import DeviceType

SOURCES = ("device", "cpu")


@dataclass
class LabelTimes:
    """Seconds per range number, plus what the trace held outside every range."""

    seconds: dict[int, float] = field(default_factory=dict)
    labels: int = 0              # ranges found in the trace
    device_records: int = 0      # kernels/memcpys seen (device source)
    unlabelled_s: float = 0.0    # device time launched outside every range (device source)


@dataclass
class _Ranges:
    """One thread's ranges, sorted by start (ours never overlap on a thread)."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)

    def find(self, t: int) -> int | None:
        i = bisect_right(self.starts, t) - 1
        if i >= 0 and t < self.ends[i]:
            return self.numbers[i]
        return None


def label_times(events: Iterable[Any], prefix: str, *, source: str = "device") -> LabelTimes:
    """Sum the time of every range labelled ``prefix + str(n)`` into ``seconds[n]``.

    Args:
        events: kineto events (``prof.profiler.kineto_results.events()``) or look-alikes.
        prefix: the label prefix our ranges carry; other ranges are ignored.
        source: "device" (kernel durations, CUDA) or "cpu" (direct child ops' CPU time).
    """
    if source not in SOURCES:
        raise ValueError(f"label_times(source={source!r}): expected one of {SOURCES}")
    labels: dict[int, list[tuple[int, int, int]]] = {}
    ops: list[tuple[int, int, int, int]] = []          # (thread, start, end, correlation)
    device: list[tuple[int, int]] = []                 # (linked correlation, duration ns)
    cut = len(prefix)
    for e in events:
        if e.device_type() == DeviceType.CPU:
            if e.is_user_annotation():
                name = e.name()
                if name.startswith(prefix) and name[cut:].isdigit():
                    labels.setdefault(e.start_thread_id(), []).append(
                        (e.start_ns(), e.end_ns(), int(name[cut:])))
                continue
            if e.linked_correlation_id():
                continue   # a CUDA runtime/driver call: its correlation id is CUPTI's, not an op's
            ops.append((e.start_thread_id(), e.start_ns(), e.end_ns(), e.correlation_id()))
        elif not e.is_user_annotation():
            device.append((e.linked_correlation_id(), e.duration_ns()))
    ranges: dict[int, _Ranges] = {}
    for thread, spans in labels.items():
        spans.sort()
        r = ranges[thread] = _Ranges()
        for start, end, n in spans:
            r.starts.append(start)
            r.ends.append(end)
            r.numbers.append(n)
    out = LabelTimes(labels=sum(len(s) for s in labels.values()))
    if source == "device":
        _device_times(ops, device, ranges, out)
    else:
        _cpu_times(ops, ranges, out)
    return out


def _device_times(ops: list[tuple[int, int, int, int]], device: list[tuple[int, int]],
                  ranges: dict[int, _Ranges], out: LabelTimes) -> None:
    launcher = {corr: (thread, start) for thread, start, _, corr in ops}
    seconds = out.seconds
    for linked, duration_ns in device:
        out.device_records += 1
        s = duration_ns / 1e9
        op = launcher.get(linked)
        r = ranges.get(op[0]) if op is not None else None
        n = r.find(op[1]) if r is not None else None
        if n is None:
            out.unlabelled_s += s
        else:
            seconds[n] = seconds.get(n, 0.0) + s


def _cpu_times(ops: list[tuple[int, int, int, int]], ranges: dict[int, _Ranges],
               out: LabelTimes) -> None:
    ops.sort(key=lambda op: (op[0], op[1], -op[2]))   # a parent before the children it starts with
    seconds = out.seconds
    covered: dict[int, int] = {}     # range number -> end of the last op counted in it
    for thread, start, end, _ in ops:
        r = ranges.get(thread)
        n = r.find(start) if r is not None else None
        if n is None or start < covered.get(n, -1):
            continue   # outside our ranges, or nested inside an op already counted
        covered[n] = end
        seconds[n] = seconds.get(n, 0.0) + (end - start) / 1e9
