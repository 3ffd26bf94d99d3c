"""The engine behind every integration: a small state machine fed with training events.

Adapters (Lightning callback, DeepSpeed attach, Hugging Face callback, the loop tracker) translate
their framework's hooks into calls on a `PredictionSession`; the session times steps, runs the
per-module profiler for a short window, predicts the whole run, refines the prediction, logs and
writes the report, and records how the run ended.

The session must never break a run. Every public method is guarded: an exception inside it
becomes one warning, all hooks are removed and the session goes quiet for the rest of the run.

Timeline, in optimizer steps since the run (or attach) started::

    | warm-up | per-module profiling | clean timing | first prediction, then refinements ...
"""
from __future__ import annotations

import functools
import json
import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

from prenet_callbacks.eta import Prediction, RunMeasurements, Spent, predict_fit, predicted_for_work
from prenet_callbacks.lifecycle import actual_block, check_reason, check_start, end_line
from prenet_callbacks.memory_account import memory_summary
from prenet_callbacks.phase_events import PhaseEvents
from prenet_callbacks.plan import RunLimits, RunPlan
from prenet_callbacks.report import Report, now_iso
from prenet_callbacks.compile_clock import CompileClock
from prenet_callbacks.sanity import SanityTimer, minor_faults, seconds_per_fault
from prenet_callbacks.step_timer import StepTimer
from prenet_callbacks.units import plural

F = TypeVar("F", bound=Callable[..., Any])

# Fewest clean steps a first prediction rests on, and the share of the run it may wait for.
_MIN_TIMING_STEPS = 3
# Clean forwards timed on the device per fit (two CUDA events each; their median is steady by then).
_FORWARD_SAMPLES = 16
_FIRST_PREDICTION_BY = 0.04
# Reports are rewritten at most this often during the run (and always at the end).
_REPORT_WRITE_INTERVAL_S = 30.0


class PreNeTWarning(UserWarning):
    """Something went wrong inside PreNeT; training goes on without it."""


@dataclass
class SessionConfig:
    """What the user chose. Validated by the integrations' constructors."""

    warmup_steps: int = 3
    profile_steps: int = 3
    timing_steps: int = 20
    log_every_n_steps: int = 50
    report_path: Path | None = None
    targets: list[str] | None = None
    print_report: bool = True
    profile_layers: bool = True
    predictor: Any = None        # a loaded `Predictor` for the projection; None: the shipped one
    html: bool | None = None     # write the HTML page beside the report (None: when the extra is installed)
    batch_convention: str = "per_device"  # multi-GPU targets keep the per-device batch, or the global one


def guarded(method: F) -> F:
    """Run a session method; on any error warn once, clean up and disable the session."""

    @functools.wraps(method)
    def wrapper(self: "PredictionSession", *args: Any, **kwargs: Any) -> Any:
        if self.disabled:
            return None
        try:
            return method(self, *args, **kwargs)
        except Exception as error:  # noqa: BLE001 - by design: never let monitoring break training
            self.fail(error, where=method.__name__)
            return None

    return wrapper  # type: ignore[return-value]


@dataclass
class _StepClock:
    """Timestamps of the current batch's phases (host seconds)."""

    batch_start: float | None = None
    before_backward: float | None = None
    after_backward: float | None = None
    before_optimizer: float | None = None
    phases: dict[str, float] = field(default_factory=lambda: {
        "data_s": 0.0, "forward_s": 0.0, "backward_s": 0.0, "optimizer_s": 0.0, "other_s": 0.0})
    batches: int = 0
    step_start: float | None = None  # the step's first batch start, less its data wait
    in_window: bool = False  # decided when the step's first batch starts


class PredictionSession:
    """Times a training run and predicts its total wall time. See the module docstring.

    Args:
        config: the user's choices.
        is_rank_zero: only rank zero prints, logs and writes.
        clock: a `DeviceClock` of the device the model trains on (`prenet_callbacks.clocks`), or a
            plain ``() -> seconds`` callable (a fake host clock in tests). Default: host time.
    """

    def __init__(self, config: SessionConfig, *, is_rank_zero: bool = True, clock: Any = None) -> None:
        self.config = config
        self.is_rank_zero = is_rank_zero
        self.device_clock: Any = None
        self.now: Callable[[], float] = time.perf_counter
        if hasattr(clock, "mark"):
            self.use_clock(clock)
        elif callable(clock):
            self.now = clock
        # the process's page faults, to time the sanity check warm (a fake clock has none to match)
        self.count_faults: Callable[[], int | None] | None = minor_faults if self.now is time.perf_counter else None
        self.fault_cost: Callable[[], float | None] = seconds_per_fault
        self.disabled = False
        self.failure: str | None = None
        self.report = Report()
        self.measurements = RunMeasurements()
        self.plan: RunPlan | None = None
        self.profiler: Any = None
        self.logger_sinks: list[Callable[[dict[str, float], int], None]] = []
        self.printer: Callable[[Report], None] | None = None
        self.line_printer: Callable[[str], None] = print
        self.publishers: list[Callable[[Report, str], None]] = []
        self._cleanups: list[Callable[[], None]] = []
        self.compile_clock = CompileClock()   # torch.compile's compilations: one-off time, never a rate
        self._reset_fit_state()

    def _reset_fit_state(self) -> None:
        self.fit_start_time: float | None = None
        self.train_start_elapsed: float | None = None  # where a time limit starts counting
        self.done_batches = 0          # global batches finished in this run (plus the resume point)
        self.done_steps = 0            # optimizer steps (trainer.global_step)
        self.steps_seen = 0            # optimizer steps seen in this fit call
        self.first_batch_start: float | None = None
        self.last_batch_end: float | None = None
        self.accounted_s = 0.0         # validation/checkpoint time inside the current interval
        self.validation_in_interval = 0.0
        self.spent = Spent()
        self.epoch_start_time: float | None = None
        self.epoch_first_batch = True
        self.val_start: float | None = None
        self.val_compile_start = 0.0   # compile seconds when the current validation run began
        self.compile_at_batch_end = 0.0   # compile seconds at the previous batch end
        self.compile_at_fit_start = 0.0
        self.sanity = SanityTimer()
        self.ckpt_start: float | None = None
        self.step_clock = _StepClock()
        self.window_phases: list[dict[str, float]] = []
        self.first_prediction_made = False
        self.first_entry: dict[str, Any] | None = None  # this fit's first prediction (history may thin it)
        self.last_logged_step = -1
        self.last_report_write = -math.inf
        self.profiling = False
        self.profile_done = False
        self.gpu_phases: PhaseEvents | None = None
        self.step_timer: StepTimer | None = None
        # on a GPU, warm forward passes of clean steps timed on the device (the profiled window's
        # forwards run several times slower under the profiler): what a validation batch costs
        self.forward_timer: StepTimer | None = None
        self._device_forwards = 0
        self._profiled_table: Any = None
        self._window_step_s: float | None = None
        self.ended = False

    # ------------------------------------------------------------------------------------------
    # Failure handling
    # ------------------------------------------------------------------------------------------
    def fail(self, error: BaseException, where: str = "") -> None:
        """Step aside: one warning, every hook removed, nothing more from this session."""
        if self.disabled:
            return
        self.disabled = True
        self.failure = f"{type(error).__name__}: {error}"
        self._run_cleanups()
        try:
            warnings.warn(
                f"PreNeT stepped aside after an internal error{f' in {where}' if where else ''} ({self.failure}). "
                "Training continues unchanged, without PreNeT's predictions.",
                PreNeTWarning,
                stacklevel=3,
            )
        except Exception:  # noqa: BLE001 - warnings turned into errors (-W error) must not stop training
            pass

    def add_cleanup(self, cleanup: Callable[[], None]) -> None:
        """Register an undo action (remove a hook, restore a wrapped method); run once at the end."""
        self._cleanups.append(cleanup)

    def _run_cleanups(self) -> None:
        profiler, self.profiler = self.profiler, None
        if profiler is not None:
            try:
                profiler.stop()
            except Exception:  # noqa: BLE001 - cleanup must go on
                pass
        self.profiling = False
        while self._cleanups:
            cleanup = self._cleanups.pop()
            try:
                cleanup()
            except Exception:  # noqa: BLE001
                pass

    def close(self) -> None:
        """Remove every hook and wrapper (idempotent; also after a failure)."""
        self._run_cleanups()

    # ------------------------------------------------------------------------------------------
    # Run lifecycle
    # ------------------------------------------------------------------------------------------
    @guarded
    def fit_start(self, current: dict[str, Any] | None = None, *, framework: str | None = None,
                  start: str = "fresh", limits: RunLimits | None = None, startup_s: float | None = None) -> None:
        """A fit (or an attach) begins now; ``startup_s`` seconds of it already passed before this call
        (process start-up under DDP), and count in the run's wall time."""
        check_start(start)
        self._reset_fit_state()
        self.fit_start_time = self.now() - (startup_s or 0.0)
        if current:
            self.report.current.update(current)
        framework = framework or self.report.current.get("framework") or "lightning"
        self.report.current.setdefault("framework", framework)
        run = self.report.run
        if run.get("fits"):
            # a resumed run: the earlier fits' wall time belongs to the whole run every target row describes
            latest = self.report.latest_prediction or {}
            earlier = (self.report.actual or {}).get("fit_s") or latest.get("elapsed_s")
            if earlier is not None:
                run["earlier_s"] = round(float(run.get("earlier_s") or 0.0) + float(earlier), 4)
        run.update({"framework": framework, "start": start, "fits": int(run.get("fits") or 0) + 1,
                    "limits": (limits or RunLimits()).to_dict(), "startup_s": startup_s, "ended": None})
        self._add_page_publisher()
        if self.compile_clock.install():
            self.add_cleanup(self.compile_clock.remove)
        self.compile_at_batch_end = self.compile_at_fit_start = self.compile_clock.seconds()
        if self._on_cuda():
            # device time: phases of the profiled window and clean steps, read without blocking
            self.gpu_phases = PhaseEvents(clock=self.device_clock)
            self.step_timer = StepTimer(self.device_clock)
            self.forward_timer = StepTimer(self.device_clock, max_pending=_FORWARD_SAMPLES)
            self._device_forwards = 0
        self.report.actual = None

    def _add_page_publisher(self) -> None:
        """The HTML page beside the JSON report (rank 0; once per session, also across resumes)."""
        from prenet_callbacks.html import PagePublisher, plotting_available

        wanted = self.config.html if self.config.html is not None else plotting_available()
        path = self.config.report_path
        if (wanted and self.is_rank_zero and path is not None
                and not any(isinstance(p, PagePublisher) for p in self.publishers)):
            self.publishers.append(PagePublisher(Path(path).with_suffix(".html")))

    def use_clock(self, clock: Any) -> None:
        """The `DeviceClock` of the device the model trains on (chosen by the integration)."""
        self.device_clock = clock

    def _on_cuda(self) -> bool:
        return getattr(self.device_clock, "kind", "cpu") == "cuda"

    @guarded
    def set_plan(self, plan: RunPlan) -> None:
        self.plan = plan
        self.done_batches = plan.start_batch
        self.done_steps = plan.start_step
        self.train_start_elapsed = self._elapsed()
        self.report.plan = plan.to_dict()
        self.report.run["start_step"] = plan.start_step
        if plan.known_length:
            # Keep the first prediction early in short runs: shrink the clean timing window.
            steps_left = plan.total_steps - plan.start_step
            budget = int(steps_left * _FIRST_PREDICTION_BY) - self.config.warmup_steps - self.config.profile_steps
            self._timing_steps = max(_MIN_TIMING_STEPS, min(self.config.timing_steps, budget))
        else:
            self._timing_steps = self.config.timing_steps

    @guarded
    def attach_profiler(self, profiler: Any) -> None:
        """Give the session a module profiler (``start/suspend/resume/begin_phase/end_step/stop``)."""
        self.profiler = profiler

    @guarded
    def profile_model(self, make_profiler: Callable[[], Any]) -> None:
        """Build and attach the per-module profiler, unless ``profile_layers`` is off.

        A model the profiler cannot take still gets step timing and predictions: the failure
        becomes one warning and a stated limitation (see `_drop_profiler`).
        """
        if not self.config.profile_layers:
            return
        try:
            self.profiler = make_profiler()
        except Exception as error:  # noqa: BLE001 - profile what can be profiled, say what cannot
            self._drop_profiler(error)

    def _drop_profiler(self, error: BaseException) -> None:
        """The profiler failed: remove it (and its hooks); predictions go on from step timing."""
        profiler, self.profiler = self.profiler, None
        self.profiling = False
        self.profile_done = True
        if profiler is not None:
            try:
                profiler.stop()
            except Exception:  # noqa: BLE001 - cleanup must go on
                pass
        self.report.limitations.append(f"per-module profile unavailable ({type(error).__name__}: {error}); "
                                       "predictions use step timing only")
        warnings.warn(f"PreNeT could not profile layers ({type(error).__name__}: {error}); "
                      "it goes on predicting from step timing. Training is unchanged.", PreNeTWarning, stacklevel=3)

    def _profiler_call(self, method: str, *args: Any) -> None:
        try:
            getattr(self.profiler, method)(*args)
        except Exception as error:  # noqa: BLE001
            self._drop_profiler(error)

    @guarded
    def set_state_bytes(self, state_bytes: float) -> None:
        self.measurements.state_bytes = float(state_bytes)

    @guarded
    def set_memory_account(self, account: dict[str, Any]) -> None:
        """Per-device sizes of parameters, gradients and optimizer state (`memory_account.state_sizes`)."""
        self.memory_account = dict(account)
        # what a checkpoint holds: parameters and optimizer state
        self.measurements.state_bytes = float(account.get("params_bytes") or 0) + float(
            account.get("optimizer_bytes") or 0)

    @guarded
    def note_run_facts(self, **facts: Any) -> None:
        """Facts the projection needs that the adapter learns late (batch size, optimizer...)."""
        self.report.current.update({k: v for k, v in facts.items() if v is not None})
        if facts.get("batch_size"):
            self.measurements.train_batch_size = int(facts["batch_size"])

    @guarded
    def note_optimizer(self, optimizer: Any) -> None:
        """The run's optimizer: its kind and implementation (foreach/fused), which the projection carries over."""
        from prenet_callbacks.projection import optimizer_settings

        if optimizer is not None:
            self.note_run_facts(**optimizer_settings(optimizer))

    @guarded
    def note_validation_batch_size(self, size: int | None) -> None:
        """The validation batch size, for estimating a validation run before one is measured."""
        if size:
            self.measurements.val_batch_size = int(size)

    # -- sanity check and validation --------------------------------------------------------------
    @guarded
    def validation_start(self, sanity: bool = False) -> None:
        self.val_start = self.now()
        self.val_compile_start = self.compile_clock.seconds()
        if sanity:
            # on a GPU the host's page faults overlap device work: nothing to take off there
            self.sanity = SanityTimer(faults=None if self._on_cuda() else self.count_faults, fault_cost=self.fault_cost)
            self.sanity.start(self.val_start)

    @guarded
    def validation_batch_end(self, sanity: bool = False) -> None:
        if sanity:
            self.sanity.batch_end(self.now())

    @guarded
    def validation_end(self, sanity: bool = False) -> None:
        if self.val_start is None:
            return
        end = self.now()
        duration = end - self.val_start
        self.val_start = None
        # a compilation inside (eval mode's graph, a recompile) happens once: not part of a run's rate
        compiled = min(duration, max(0.0, self.compile_clock.seconds() - self.val_compile_start))
        if sanity:
            warm = self.sanity.result(end)
            if warm is not None:
                m = self.measurements
                per_batch, fixed, faults = warm
                m.sanity_val_per_batch, m.sanity_val_fixed, m.sanity_page_faults_s = per_batch, max(0.0, fixed - compiled), faults
                m.sanity_val_raw_per_batch, m.sanity_val_batches = self.sanity.raw_per_batch(end), self.sanity.batches
            return
        self.accounted_s += duration
        self.validation_in_interval += duration - compiled
        self.spent.validation_s += duration

    @guarded
    def checkpoint_start(self) -> None:
        self.ckpt_start = self.now()

    @guarded
    def checkpoint_end(self) -> None:
        if self.ckpt_start is None:
            return
        duration = self.now() - self.ckpt_start
        self.ckpt_start = None
        self.measurements.checkpoint_file.add(duration)
        self.accounted_s += duration
        self.spent.checkpoints_s += duration

    # -- training batches ---------------------------------------------------------------------------
    @guarded
    def train_epoch_start(self) -> None:
        self.epoch_start_time = self.now()
        self.epoch_first_batch = True

    @guarded
    def batch_start(self) -> None:
        now = self.now()
        clock = self.step_clock
        if self.first_batch_start is None:
            self.first_batch_start = now
            if self.fit_start_time is not None:
                self.measurements.setup_s = now - self.fit_start_time
                # sanity check and set-up: whatever ran before the first batch that is not validation
                self.spent.setup_s = max(0.0, self.measurements.setup_s - self.spent.validation_s
                                         - self.spent.checkpoints_s)
            if self.epoch_start_time is not None:
                self.measurements.first_epoch_start_s = now - self.epoch_start_time
        wait = self._data_wait(now)
        if clock.step_start is None:
            clock.step_start = now - wait
        clock.batch_start = now
        clock.before_backward = clock.after_backward = clock.before_optimizer = None
        clock.in_window = self._in_profile_window
        self._gpu_mark("forward")
        if self._timing_forward:
            self.forward_timer.open()
        if self._in_profile_window and self.profiler is not None:
            if not self.profiling:
                self.profiling = True
                self._start_memory_window()
                self._profiler_call("start")
            else:
                self._profiler_call("resume")

    def _data_wait(self, now: float) -> float:
        """Host time waiting for this batch since the previous one ended (0 when not comparable)."""
        if self.last_batch_end is None or self.epoch_first_batch or self.accounted_s:
            return 0.0  # first batch, epoch start or an event in between: not a plain data wait
        wait = now - self.last_batch_end
        self.step_clock.phases["data_s"] += wait
        if self._in_timing_phase:
            self.measurements.data_per_batch.add(wait)
        return wait

    @guarded
    def before_backward(self) -> None:
        clock = self.step_clock
        clock.before_backward = self.now()
        if clock.batch_start is not None:
            forward = clock.before_backward - clock.batch_start
            clock.phases["forward_s"] += forward
            if self._in_timing_phase and self.step_timer is None:  # on a GPU the host only launched it
                self.measurements.forward_per_batch.add(forward)
        if self.forward_timer is not None:
            self.forward_timer.close()
        self._gpu_mark("backward")
        if self.profiling:
            self._profiler_call("begin_phase", "backward")

    @guarded
    def after_backward(self) -> None:
        clock = self.step_clock
        clock.after_backward = self.now()
        if clock.before_backward is not None:
            clock.phases["backward_s"] += clock.after_backward - clock.before_backward
        self._gpu_mark("after_backward")

    @guarded
    def before_optimizer_step(self) -> None:
        self.step_clock.before_optimizer = self.now()
        self._gpu_mark("optimizer")
        if self.profiling:
            self._profiler_call("begin_phase", "optimizer")

    @guarded
    def batch_end(self, *, stepped: bool, global_step: int | None = None) -> None:
        """One training batch finished; ``stepped`` if it ended with an optimizer step."""
        now = self.now()
        clock = self.step_clock
        if clock.before_optimizer is not None:
            clock.phases["optimizer_s"] += now - clock.before_optimizer
        clock.batches += 1
        self._gpu_mark("end")
        self._record_interval(now)
        self.done_batches += 1
        if self.profiling:
            self._profiler_call("suspend")
        if not stepped:
            return
        self.steps_seen += 1
        self.done_steps = global_step if global_step is not None else self.done_steps + 1
        self._close_step_phases(now)
        if self.profiling:
            self._profiler_call("end_step")
            if self.profiling and not self._in_profile_window:
                self._finish_profile_window()
        if not self.first_prediction_made:
            if self._ready_for_first_prediction():
                self._predict(first=True)
        elif self.done_steps - self.last_logged_step >= self.config.log_every_n_steps:
            self._predict(first=False)

    def _record_interval(self, now: float) -> None:
        """Classify the time since the previous batch ended: a clean step, or an event's cost."""
        previous, self.last_batch_end = self.last_batch_end, now
        accounted, self.accounted_s = self.accounted_s, 0.0
        validation, self.validation_in_interval = self.validation_in_interval, 0.0
        first_in_epoch, self.epoch_first_batch = self.epoch_first_batch, False
        compile_now = self.compile_clock.seconds()
        compiled, self.compile_at_batch_end = compile_now - self.compile_at_batch_end, compile_now
        if previous is None:
            self._time_device_step(clean=False)
            return
        raw = now - previous
        # the clipped mean sorts its window: only compute it for the rare intervals that need it
        batch_mean = self.measurements.batch.mean if (first_in_epoch or validation) else None
        if first_in_epoch:
            if batch_mean is not None:
                boundary = max(0.0, raw - accounted - batch_mean)
                self.measurements.epoch_boundary.add(boundary)
                self.spent.epoch_boundaries_s += boundary
            if validation:
                self.measurements.validation_run.add(validation)
        elif validation:
            # validation inside an epoch: what it costs beyond its hooks (loader start-up) is its own
            extra = max(0.0, raw - accounted - (batch_mean or 0.0))
            self.measurements.validation_run.add(validation + extra)
            self.spent.validation_s += extra
        elif accounted:
            pass  # a step-triggered checkpoint: already timed on its own
        elif compiled > 0:
            pass  # a step that (re)compiled: one-off time (in the elapsed time), not a step's rate
        elif self._in_timing_phase and self.step_timer is None:
            self.measurements.batch.add(raw)
        self._time_device_step(clean=not (first_in_epoch or validation or accounted or compiled > 0)
                               and self._in_timing_phase)

    def _time_device_step(self, *, clean: bool) -> None:
        """On a GPU, clean steps are intervals between batch-end marks on the device's timeline."""
        timer = self.step_timer
        if timer is None:
            return
        timer.batch_end(clean=clean)
        for seconds in timer.ready():
            self.measurements.batch.add(seconds)
        if self.forward_timer is not None:
            for seconds in self.forward_timer.ready():
                self._add_device_forward(seconds)

    @property
    def _timing_forward(self) -> bool:
        """Whether this batch's forward is timed on the device (a few clean steps after the window)."""
        return (self.forward_timer is not None and self._in_timing_phase and not self.epoch_first_batch
                and self.forward_timer.pending + self._device_forwards < _FORWARD_SAMPLES)

    def _add_device_forward(self, seconds: float) -> None:
        if self._device_forwards == 0:
            # the profiled window's forwards were a stand-in until a clean one was measured
            self.measurements.forward_per_batch.clear()
        self._device_forwards += 1
        self.measurements.forward_per_batch.add(seconds)

    def _close_step_phases(self, now: float) -> None:
        clock = self.step_clock
        if clock.step_start is not None and clock.in_window:
            phases = dict(clock.phases)
            measured = sum(phases.values())
            total = now - clock.step_start
            phases["other_s"] = max(0.0, total - measured)
            phases["total_s"] = total
            phases["batches"] = clock.batches
            self.window_phases.append(phases)
            if self.gpu_phases is not None:
                self.gpu_phases.end_step()
        self.step_clock = _StepClock()

    # -- windows ------------------------------------------------------------------------------------
    @property
    def _in_profile_window(self) -> bool:
        return (self.config.profile_layers and not self.profile_done
                and self.config.warmup_steps <= self.steps_seen < self.config.warmup_steps + self.config.profile_steps)

    @property
    def _timing_start_step(self) -> int:
        # Clean timing starts after warm-up and the profiling window (profiled steps run slower).
        return self.config.warmup_steps + (self.config.profile_steps if self.config.profile_layers else 0)

    @property
    def _in_timing_phase(self) -> bool:
        return self.steps_seen >= self._timing_start_step

    @property
    def _first_prediction_step(self) -> int:
        return self._timing_start_step + getattr(self, "_timing_steps", self.config.timing_steps)

    def _ready_for_first_prediction(self) -> bool:
        if self.steps_seen < self._first_prediction_step:
            return False
        # device intervals arrive a few steps late: wait for as many as a short run's timing window
        return self.step_timer is None or self.measurements.batch.count >= _MIN_TIMING_STEPS

    def _start_memory_window(self) -> None:
        """The window's memory peak is its own: reset the device's peak counter as it opens."""
        if self.device_clock is not None:
            self.device_clock.reset_peak_memory()

    def _finish_profile_window(self) -> None:
        profiler, self.profiler = self.profiler, None
        self.profiling = False
        self.profile_done = True
        table = profiler.stop()
        self._resolve_gpu_phases()
        self._record_memory()
        measured = self.report.measured
        measured["layers"] = table.to_dict() if hasattr(table, "to_dict") else table
        if not self._on_cuda() and self.config.targets != []:
            # eager PyTorch's per-op host cost on this CPU (~0.1 s, once): what a GPU target keeps paying
            from prenet_callbacks.projection.host import measure_host_costs

            measured["host"] = measure_host_costs()
        if hasattr(table, "coverage"):
            self._profiled_table, self._window_step_s = table, self._window_compute_s(table)
            self.measurements.eval_forward_share = table.eval_forward_share()
            measured["coverage"] = self._coverage()
            samples = table.op_samples()
            if samples is not None:
                measured["op_samples"] = samples
        for limitation in getattr(profiler, "limitations", []) or []:
            if limitation not in self.report.limitations:
                self.report.limitations.append(limitation)
        # stopping the profiler (and reading its trace) is not a training step
        self.last_batch_end = self.now()
        if self.step_timer is not None:
            self.step_timer.break_run()

    def _coverage(self) -> dict[str, Any] | None:
        """The profile's per-module sum against a clean step (the profiled window's own steps run
        slower under the profiler); the window's step until clean steps are measured."""
        table = self._profiled_table
        if table is None:
            return None
        window = self._window_step_s
        clean = None
        if self.measurements.batch.mean is not None and self.window_phases:
            batches = sum(p.get("batches", 1) for p in self.window_phases) / len(self.window_phases)
            clean = self.measurements.batch.mean * batches
        coverage = table.coverage(clean if clean is not None else window)
        coverage["step_source"] = "clean steps" if clean is not None else "profiled window"
        coverage["window_step_s"] = window
        return _rounded_dict(coverage)

    def _window_compute_s(self, table: Any) -> float | None:
        """A profiled step's compute time on the profile's clock: what per-module times should add up to.

        Data loading is not module time; on a CPU the dispatch mode's own cost is left out too.
        """
        if not self.window_phases:
            return None
        n = len(self.window_phases)
        if self.step_timer is not None:  # device phases
            keys = ("forward_s", "backward_s", "optimizer_s", "other_s")
            return sum(sum(p[k] for k in keys) for p in self.window_phases) / n
        host = sum(p["total_s"] - p["data_s"] for p in self.window_phases) / n
        return max(0.0, host - float(getattr(table, "overhead_s", 0.0) or 0.0))

    def _record_memory(self) -> None:
        """One account of the window's device memory: what the projection checks targets against."""
        account = getattr(self, "memory_account", None)
        peak = self.device_clock.peak_memory_bytes() if self.device_clock is not None else None
        if account is None:
            if peak is not None:
                self.report.measured["memory"] = {"device": self.device_clock.device, "peak_allocated_bytes": peak}
            return
        device = self.device_clock.device if self.device_clock is not None else self.report.current.get("name")
        self.report.measured["memory"] = memory_summary(peak, account, device=str(device))

    def _gpu_mark(self, name: str) -> None:
        if self.gpu_phases is not None and self.step_clock.in_window:
            self.gpu_phases.mark(name)

    def _resolve_gpu_phases(self) -> None:
        """On a GPU, replace the window's host-timed compute phases by their CUDA-event times."""
        if self.gpu_phases is None:
            return
        gpu, self.gpu_phases = self.gpu_phases.resolve(), None
        for phases, device_phases in zip(self.window_phases, gpu):
            phases.update(device_phases)
            phases["other_s"] = max(phases["other_s"], phases["total_s"] - sum(
                phases[k] for k in ("data_s", "forward_s", "backward_s", "optimizer_s")))
            # the warm forward on the device: what a validation batch will cost before one is measured
            batches = max(1, int(phases.get("batches") or 1))
            if self._device_forwards == 0:  # a stand-in (slowed by the profiler) until clean ones arrive
                self.measurements.forward_per_batch.add(phases["forward_s"] / batches)
        self.report.measured["phase_timing"] = "cuda_events"

    # -- predictions -----------------------------------------------------------------------------
    def _elapsed(self) -> float:
        return self.now() - (self.fit_start_time if self.fit_start_time is not None else self.now())

    def _predict(self, *, first: bool, fit_done: bool = False) -> Prediction | None:
        prediction = self._prediction(fit_done)
        if prediction is None:
            return None
        self.report.add_prediction(self._entry(prediction))
        self.last_logged_step = self.done_steps
        self._update_measured()
        if first:
            self.first_prediction_made = True
            if self.config.targets != []:  # None: the documented default set; []: no projection
                self._project_targets()
                # projecting took time inside this run: predict again so that it counts, and
                # project again so that the table and the headline rest on the same prediction
                prediction = self._prediction(fit_done) or prediction
                self.report.predictions[-1] = self._entry(prediction)
                self._project_targets()
            self.first_entry = self.report.predictions[-1]
        self._log_metrics(prediction)
        # the report first: a location that cannot be written is one failure, not one per output
        self._maybe_write_report(force=first)
        if first:
            self._publish("first")
            # predicting, projecting and printing are not a training step
            self.last_batch_end = self.now()
            if self.step_timer is not None:
                self.step_timer.break_run()
        return prediction

    def _prediction(self, fit_done: bool) -> Prediction | None:
        if self.plan is None:
            return None
        self.measurements.host_timed = not self._on_cuda()  # a shared host's pace drifts; a GPU's steps less so
        prediction = predict_fit(self.plan, self.measurements, done_batches=self.done_batches,
                                 done_steps=self.done_steps, elapsed_s=self._elapsed(), spent=self.spent,
                                 fit_done=fit_done, time_limit_start_s=self.train_start_elapsed)
        return prediction if prediction.step_s is not None else None

    def _entry(self, prediction: Prediction) -> dict[str, Any]:
        entry = prediction.to_dict()
        entry["fit"] = self.report.fit_number or 1
        return entry

    def _project_targets(self) -> None:
        """Cross-hardware projection of the measured run onto the configured targets."""
        from prenet_callbacks import projection

        projection.project_report(self.report, self.config.targets, predictor=self.config.predictor,
                                  batch_convention=self.config.batch_convention)
        self.report.projection["at_step"] = self.done_steps

    def _publish(self, stage: str) -> None:
        """Print the panel and hand the report to every publisher (HTML page, TensorBoard), rank 0 only."""
        if not self.is_rank_zero:
            return
        if stage == "first" and self.config.print_report and self.printer is not None:
            self.printer(self.report)
        for publish in self.publishers:
            try:
                publish(self.report, stage)
            except Exception as error:  # noqa: BLE001 - an output that fails must not silence the others
                self._note_output_failure(error)

    def _note_output_failure(self, error: BaseException) -> None:
        note = f"an output could not be written ({type(error).__name__}: {error})"
        if note not in self.report.limitations:
            self.report.limitations.append(note)
            warnings.warn(f"PreNeT: {note}; training is unchanged.", PreNeTWarning, stacklevel=3)

    def _update_measured(self) -> None:
        m, measured = self.measurements, self.report.measured
        measured["warmup_steps"] = self.config.warmup_steps
        measured["profiled_steps"] = len(self.window_phases)
        if self.window_phases:
            keys = ("data_s", "forward_s", "backward_s", "optimizer_s", "other_s", "total_s")
            n = len(self.window_phases)
            measured["step_phases"] = {k: round(sum(p[k] for p in self.window_phases) / n, 6) for k in keys}
        measured["batch_s"] = m.batch.mean
        measured["clean_batches"] = m.batch.count
        # the whole run's mean clean batch (``batch_s`` is the recent window's, what predictions use)
        measured["batch_run_mean_s"] = m.batch.total / m.batch.count if m.batch.count else None
        if self._profiled_table is not None:
            measured["coverage"] = self._coverage()
        measured["data_wait_s"] = m.data_per_batch.mean
        if self.compile_clock.installed:
            # torch.compile's compilations in this fit: kept out of every step's and validation run's rate
            measured["compile_s"] = round(self.compile_clock.seconds() - self.compile_at_fit_start, 4)
        measured["validation"] = {"runs": m.validation_run.count, "mean_s": m.validation_run.mean,
                                  "sanity_per_batch_s": m.sanity_val_per_batch,
                                  "sanity_page_faults_s": m.sanity_page_faults_s,
                                  "sanity_batches": m.sanity_val_batches,
                                  "sanity_raw_per_batch_s": m.sanity_val_raw_per_batch,
                                  "eval_forward_share": m.eval_forward_share}
        measured["checkpoint"] = {"files": m.checkpoint_file.count, "mean_s": m.checkpoint_file.mean}
        measured["epoch_boundary"] = {"count": m.epoch_boundary.count, "mean_s": m.epoch_boundary.mean,
                                      "first_epoch_start_s": m.first_epoch_start_s}
        measured["setup_s"] = m.setup_s
        measured["timing"] = {"clock": "cuda" if self._on_cuda() else "cpu",
                              "op_timing": (measured.get("layers") or {}).get("op_timing"),
                              "step_timing": ("device marks between batch ends" if self.step_timer is not None
                                              else "host intervals between batch ends")}

    def _log_metrics(self, prediction: Prediction) -> None:
        if not self.is_rank_zero or not self.logger_sinks:
            return
        metrics = {"prenet/step_s": prediction.step_s}
        if prediction.predicted_total_s is not None:
            metrics["prenet/eta_s"] = prediction.eta_s
            metrics["prenet/predicted_total_s"] = prediction.predicted_total_s
        for sink in self.logger_sinks:
            sink({k: float(v) for k, v in metrics.items() if v is not None}, self.done_steps)

    def _maybe_write_report(self, force: bool = False) -> None:
        path = self.config.report_path
        if not self.is_rank_zero or path is None:
            return
        if not force and self.now() - self.last_report_write < _REPORT_WRITE_INTERVAL_S:
            return
        self.last_report_write = self.now()
        self.report.save(path)

    @guarded
    def epoch_end(self) -> None:
        if self.first_prediction_made:
            self._maybe_write_report()

    @guarded
    def fit_end(self, reason: str = "completed", detail: str | None = None) -> None:
        """The run is over: record how it ended and its actual time, write the report, remove hooks.

        ``completed`` is checked against the plan: a run that stopped before the plan's last batch
        without a stated reason ended early.
        """
        check_reason(reason)
        if self.fit_start_time is None or self.ended:
            return
        self.ended = True
        elapsed = self._elapsed()
        if self.profiling:
            self._finish_profile_window()
        if self.step_timer is not None:
            for seconds in self.step_timer.flush():
                self.measurements.batch.add(seconds)
        plan = self.plan
        if (reason == "completed" and plan is not None and plan.known_length
                and self.done_batches < plan.total_batches):
            reason = "stopped_early"
            detail = detail or f"ended after {self.done_steps:,} of {int(plan.total_steps):,} planned steps"
        first = self.first_entry
        done_work = None
        if first is not None and plan is not None and reason != "completed":
            done_work = predicted_for_work(first, plan, self.done_batches)
        self.report.actual = actual_block(fit_s=elapsed, steps=self.done_steps, batches=self.done_batches,
                                          reason=reason, first=first, predicted_for_done_s=done_work)
        self.report.actual["breakdown"] = self._spent_breakdown(elapsed)
        self.report.run["ended"] = {"reason": reason, "detail": detail, "at": now_iso(),
                                    "at_step": self.done_steps, "elapsed_s": round(elapsed, 4)}
        if not self.first_prediction_made:
            note = (f"the run ended after {plural(self.steps_seen, 'optimizer step')}, before the first prediction "
                    f"(it comes after {self._first_prediction_step}: warm-up, profiling and timed steps)")
            self.report.limitations.append(note)
        self._update_measured()
        if self.first_prediction_made and self.config.targets != [] and self.report.targets:
            self._project_targets()  # the final table rests on the final measurements
        if self.is_rank_zero:
            line = end_line(self.report, unit=self._run_word())
            if line and self.config.print_report:
                self.line_printer(line)
        self._maybe_write_report(force=True)
        self._publish("end")
        self._run_cleanups()

    def _spent_breakdown(self, elapsed: float) -> dict[str, float]:
        """Where this run's time went, measured: the parts add up to ``elapsed``."""
        spent = self.spent
        data = (self.measurements.data_per_batch.mean or 0.0) * max(0, self.done_batches - (
            self.plan.start_batch if self.plan is not None else 0))
        train = max(0.0, elapsed - spent.outside_train_s)
        return {"setup_s": round(spent.setup_s, 3), "train_s": round(train, 3),
                "validation_s": round(spent.validation_s, 3), "checkpoints_s": round(spent.checkpoints_s, 3),
                "epoch_boundaries_s": round(spent.epoch_boundaries_s, 3),
                "data_loading_s": round(min(train, data), 3)}

    def _run_word(self) -> str:
        return "fit" if self.report.run.get("framework") == "lightning" else "run"

    # -- resume ----------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Plain JSON data only: checkpoints are loaded with ``torch.load(weights_only=True)``."""
        return {"report": json.loads(self.report.to_json(indent=None)), "measurements": self.measurements.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a checkpointed report and measurements, unless this session already has newer ones.

        ``trainer.validate/test/predict(ckpt_path=...)`` after a fit restore callbacks too: the
        report in memory, with its actual time, is newer than any checkpoint of the same run.
        """
        if self.report.run.get("fits"):
            return
        try:
            self.report = Report.from_dict(state["report"])
            self.measurements.load_state_dict(state.get("measurements", {}))
        except Exception as error:  # noqa: BLE001 - an old or foreign state must not stop a resume
            self.fail(error, where="load_state_dict")


def _rounded_dict(values: dict[str, Any]) -> dict[str, Any]:
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in values.items()}
