"""The dispatch mode that sees every aten call below autograd, times it and hands it on.

It keeps no tensor: the profiler's `record_op` reduces each call to shapes and dtypes. Views and
metadata ops are passed straight through (no timing, no record) to keep the overhead down. How a
call is timed is the profiler's op timer's business (`op_timing`): a host clock on CPU, a labelled
``record_function`` range whose kernels torch.profiler times on CUDA.
"""
from __future__ import annotations

import time
from typing import Any, Protocol

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from predictor_models.aten.taxonomy import is_free_op
from prenet_callbacks.measure.profiling.op_timing import HostOpTimer, ProfilerOpTimer

_FREE: dict[Any, bool] = {}


class CaptureSink(Protocol):
    """What the mode reports to (the `ModuleProfiler`); the mode knows nothing else of it."""

    op_timer: HostOpTimer | ProfilerOpTimer

    def capturing(self) -> bool:
        """Whether a call happening now is to be timed and recorded."""

    def record_op(self, func: Any, args: tuple, kwargs: dict, out: Any, handle: Any) -> None:
        """One timed call, with its timer handle."""

    def contain(self, what: str, exc: BaseException) -> None:
        """A failure of the profiler's own code while `what`: stop capturing, say so."""

    def add_overhead(self, seconds: float) -> None:
        """Host time the mode added around a call."""


class CaptureMode(TorchDispatchMode):
    """Times each non-free aten call and reports it to the profiler."""

    def __init__(self, profiler: CaptureSink) -> None:
        super().__init__()
        self.profiler = profiler

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        entered = time.perf_counter()
        kwargs = kwargs or {}
        free = _FREE.get(func)
        if free is None:
            free = _FREE[func] = is_free_op(func)
        prof = self.profiler
        if free or not prof.capturing():
            return func(*args, **kwargs)
        timer = prof.op_timer
        try:
            started = timer.start()
        except Exception as exc:  # noqa: BLE001 - a profiler bug must never reach the model
            prof.contain(f"timing {func}", exc)
            return func(*args, **kwargs)
        before = time.perf_counter()
        try:
            out = func(*args, **kwargs)   # the model's own errors propagate unchanged
        finally:
            after = time.perf_counter()
            try:
                handle = timer.stop(started)   # closes a labelled range even when the op raised
            except Exception as exc:  # noqa: BLE001 - a profiler fault is contained, never raised into the model or the run
                prof.contain(f"timing {func}", exc)
                handle = None
        if handle is not None:
            try:
                prof.record_op(func, args, kwargs, out, handle)
            except Exception as exc:  # noqa: BLE001 - a profiler fault is contained, never raised into the model or the run
                prof.contain(f"recording {func}", exc)
        # host time this handler added around the op (not torch's own Python-mode cost)
        prof.add_overhead((before - entered) + (time.perf_counter() - after))
        return out


def mode_on_stack(mode: TorchDispatchMode) -> bool:
    """True when `mode` is anywhere on this thread's dispatch-mode stack."""
    return any(torch._C._get_dispatch_stack_at(i) is mode
               for i in range(torch._C._len_torch_dispatch_stack()))


def remove_mode(mode: TorchDispatchMode) -> bool:
    """Take `mode` off this thread's stack even when other modes were pushed above it."""
    if not mode_on_stack(mode):
        return False
    above = []
    while torch._C._len_torch_dispatch_stack() and \
            torch._C._get_dispatch_stack_at(torch._C._len_torch_dispatch_stack() - 1) is not mode:
        above.append(torch._C._pop_torch_dispatch_stack(None))
    mode.__exit__(None, None, None)
    for other in reversed(above):
        torch._C._push_on_torch_dispatch_stack(other)
    return True
