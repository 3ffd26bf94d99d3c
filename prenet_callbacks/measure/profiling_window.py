"""The profiling window: the few optimizer steps the per-module profiler runs over.

`ProfilingWindow` drives the module profiler (start, resume, suspend, phases, end of step, stop) and
contains its failures: a profiler that raises is stopped and dropped, with one stated limitation,
and predictions go on from step timing. It also keeps the window's own measurements: each profiled
step's phases (on a GPU replaced by their CUDA-event times), the device's memory peak over the
window, and the per-module table with its coverage of a clean step.

The profiler and the memory account outlive a fit (an integration attaches them once); the rest is
one fit's and starts afresh in `new_fit`.
"""
from __future__ import annotations

import time
import warnings
from typing import Any, Callable, Protocol

from prenet_callbacks.measure.clocks import DeviceClock
from prenet_callbacks.measure.eval_probe import EvalForwardProbe
from prenet_callbacks.measure.memory_account import memory_summary
from prenet_callbacks.measure.phase_events import PhaseEvents
from prenet_callbacks.session.guard import PreNeTWarning

_COMPUTE_PHASES = ("forward_s", "backward_s", "optimizer_s", "other_s")


class LayerTableLike(Protocol):
    """What the session reads from a profile (`prenet_callbacks.measure.profiling.table.LayerTable`)."""

    overhead_s: float

    def to_dict(self) -> dict[str, Any]: ...

    def coverage(self, step_s: float | None) -> dict[str, Any]: ...

    def eval_forward_share(self) -> float | None: ...

    def op_samples(self) -> dict[str, Any] | None: ...


class WindowProfiler(Protocol):
    """A per-module profiler (`prenet_callbacks.measure.profiling.ModuleProfiler`) as the session drives it."""

    @property
    def limitations(self) -> list[str]: ...

    def start(self) -> None: ...

    def suspend(self) -> None: ...

    def resume(self) -> None: ...

    def begin_phase(self, phase: str) -> None: ...

    def end_step(self) -> None: ...

    def stop(self) -> LayerTableLike: ...


class ProfilingWindow:
    """The profiler's calls and the profiled steps' measurements. See the module docstring.

    Args:
        on_drop: given the limitation to state when a failing profiler is dropped (the report's).
    """

    def __init__(self, on_drop: Callable[[str], None], now: Callable[[], float] = time.perf_counter,
                 on_model_call: Callable[[float], None] | None = None) -> None:
        self.on_drop = on_drop
        self.now = now
        self.on_model_call = on_model_call   # each clean training batch's model call (host-timed runs)
        self.profiler: WindowProfiler | None = None
        # the model's forward, timed again as validation runs it when the window closes (`eval_probe`)
        self.eval_probe: EvalForwardProbe | None = None
        # per-device sizes of parameters, gradients and optimizer state (`memory_account.state_sizes`)
        self.memory_account: dict[str, Any] | None = None
        self.clock: DeviceClock | None = None
        self.active = False            # the profiler has started and not stopped
        self.done = False              # the window is over (or the profiler gone): no second one
        self.gpu_phases: PhaseEvents | None = None
        self.phases: list[dict[str, float]] = []   # each profiled step's phases
        self.table: LayerTableLike | None = None
        self.compute_s: float | None = None        # a profiled step's compute time on the profile's clock

    def new_fit(self, clock: DeviceClock | None) -> None:
        """A fit starts: no window yet (its memory peak is read from ``clock``)."""
        self.clock = clock
        self.active = self.done = False
        self.gpu_phases = None
        self.phases = []
        self.table = None
        self.compute_s = None

    def time_on_device(self, clock: DeviceClock) -> None:
        """Time the window's phases with marks on the device's timeline (a GPU), read once at its end."""
        self.gpu_phases = PhaseEvents(clock=clock)

    # -- the profiler --------------------------------------------------------------------------------
    def build(self, make_profiler: Callable[[], WindowProfiler]) -> None:
        """Build the profiler; one that cannot be built is a stated limitation, not a failure."""
        try:
            self.profiler = make_profiler()
        except Exception as error:  # noqa: BLE001 - profile what can be profiled, say what cannot
            self.drop(error)

    def drop(self, error: BaseException) -> None:
        """The profiler failed: remove it (and its hooks); predictions go on from step timing."""
        self.release()
        self.done = True
        self.on_drop(f"per-module profile unavailable ({type(error).__name__}: {error}); "
                     "predictions use step timing only")
        warnings.warn(f"PreNeT could not profile layers ({type(error).__name__}: {error}); "
                      "it goes on predicting from step timing. Training is unchanged.", PreNeTWarning, stacklevel=4)

    def probe_eval_forward(self, module: Any) -> None:
        """Time ``module``'s forward in eval mode without autograd when the window closes (`eval_probe`)."""
        if self.eval_probe is not None:
            self.eval_probe.remove()
        host_timed = self.clock is None or self.clock.kind != "cuda"
        self.eval_probe = EvalForwardProbe(module, now=self.now, on_call=self.on_model_call if host_timed else None)

    def time_eval_forward(self) -> tuple[float | None, str | None]:
        """The probe's eval-mode forward in seconds, or None and why not (no probe, declined, failed)."""
        probe = self.eval_probe
        if probe is None:
            return None, None
        try:
            seconds = probe.measure()
        except Exception as error:  # noqa: BLE001 - a forward that fails outside training is a note, not a fault
            return None, f"the eval-mode forward failed ({type(error).__name__}: {error})"
        return seconds, probe.declined

    def release(self) -> None:
        """Stop and forget the profiler, whatever state it is in (cleanup: errors are ignored)."""
        if self.eval_probe is not None:
            self.eval_probe.remove()
            self.eval_probe = None
        profiler, self.profiler = self.profiler, None
        self.active = False
        if profiler is not None:
            try:
                profiler.stop()
            except Exception:  # noqa: BLE001 - cleanup must go on
                pass

    def _call(self, method: Callable[..., Any], *args: Any) -> None:
        try:
            method(*args)
        except Exception as error:  # noqa: BLE001
            self.drop(error)

    def open_batch(self, in_window: bool) -> None:
        """A batch starts; in the window, the first one starts the profiler (and the memory peak)."""
        self.mark("forward", in_window)
        if in_window and self.eval_probe is not None:
            self.eval_probe.arm()
            self.eval_probe.new_batch()
        if not in_window or self.profiler is None:
            return
        if self.active:
            self._call(self.profiler.resume)
            return
        self.active = True
        if self.clock is not None:
            self.clock.reset_peak_memory()  # the window's memory peak is its own
        self._call(self.profiler.start)

    def begin_phase(self, phase: str, in_window: bool) -> None:
        """The batch's backward or optimizer phase begins."""
        self.mark(phase, in_window)
        if self.active and self.profiler is not None:
            self._call(self.profiler.begin_phase, phase)

    def suspend(self) -> None:
        if self.active and self.profiler is not None:
            self._call(self.profiler.suspend)

    def end_step(self, phases: dict[str, float] | None) -> None:
        """An optimizer step ended; ``phases`` are its host-timed phases if it was profiled."""
        if phases is not None:
            self.phases.append(phases)
            if self.gpu_phases is not None:
                self.gpu_phases.end_step()
        if self.active and self.profiler is not None:
            self._call(self.profiler.end_step)

    def mark(self, name: str, in_window: bool) -> None:
        """A phase boundary of a profiled batch on the device's timeline (GPU only)."""
        if self.gpu_phases is not None and in_window:
            self.gpu_phases.mark(name)

    def stop(self) -> tuple[LayerTableLike | None, list[str]]:
        """Close the window: the profiler's table (None if stopping failed) and its limitations."""
        profiler, self.profiler = self.profiler, None
        self.active = False
        self.done = True
        if profiler is None:
            return None, []
        try:
            table = profiler.stop()
        except Exception as error:  # noqa: BLE001 - a failing stop is a dropped profiler, like a failing start
            self.drop(error)
            return None, []
        return table, list(profiler.limitations or [])

    # -- the window's measurements ---------------------------------------------------------------------
    def resolve_gpu_phases(self) -> list[float] | None:
        """On a GPU, replace the window's host-timed compute phases by their CUDA-event times.

        Returns each profiled step's device forward per batch (None off a GPU).
        """
        if self.gpu_phases is None:
            return None
        gpu, self.gpu_phases = self.gpu_phases.resolve(), None
        forwards = []
        for phases, device_phases in zip(self.phases, gpu):
            phases.update(device_phases)
            phases["other_s"] = max(phases["other_s"], phases["total_s"] - sum(
                phases[k] for k in ("data_s", "forward_s", "backward_s", "optimizer_s")))
            forwards.append(phases["forward_s"] / max(1, int(phases.get("batches") or 1)))
        return forwards

    def keep_table(self, table: LayerTableLike, *, device_phases: bool) -> None:
        """Keep the profile, and what its per-module times should add up to (`coverage`)."""
        self.table = table
        self.compute_s = self._compute_s(table, device_phases)

    def _compute_s(self, table: LayerTableLike, device_phases: bool) -> float | None:
        """A profiled step's compute time on the profile's clock.

        Data loading is not module time; on a CPU the dispatch mode's own cost is left out too.
        """
        if not self.phases:
            return None
        n = len(self.phases)
        if device_phases:
            return sum(sum(p[k] for k in _COMPUTE_PHASES) for p in self.phases) / n
        host = sum(p["total_s"] - p["data_s"] for p in self.phases) / n
        return max(0.0, host - float(table.overhead_s or 0.0))

    def coverage(self, batch_mean: float | None) -> dict[str, Any] | None:
        """The profile's per-module sum against a clean step (``batch_mean`` x batches per step: the
        profiled window's own steps run slower under the profiler); the window's step until clean
        steps are measured."""
        if self.table is None:
            return None
        clean = None
        if batch_mean is not None and self.phases:
            batches = sum(p.get("batches", 1) for p in self.phases) / len(self.phases)
            clean = batch_mean * batches
        coverage = self.table.coverage(clean if clean is not None else self.compute_s)
        coverage["step_source"] = "clean steps" if clean is not None else "profiled window"
        coverage["window_step_s"] = self.compute_s
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in coverage.items()}

    def memory(self, fallback_device: Any) -> dict[str, Any] | None:
        """One account of the window's device memory: what the projection checks targets against."""
        clock = self.clock
        peak = clock.peak_memory_bytes() if clock is not None else None
        if self.memory_account is None:
            return {"device": clock.device, "peak_allocated_bytes": peak} if clock is not None and peak is not None else None
        device = clock.device if clock is not None else fallback_device
        return memory_summary(peak, self.memory_account, device=str(device))
