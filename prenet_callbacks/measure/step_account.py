"""Step accounting: what each stretch of a fit's wall time was, and the measurements it feeds.

The time between two training batch ends is a clean step, or it holds an event's cost: an epoch
boundary, a validation run, a checkpoint save, a (re)compilation. `StepAccount` classifies every
such interval, times the batch's phases (data, forward, backward, optimizer) on the host, times
validation runs, the sanity check and saves, and keeps `Spent`, the time spent outside training
batches. On a GPU, clean steps and a few warm forwards are timed on the device (`StepTimer`), since
the host only launches the kernels.

One account lives for one fit call; every time comes from the session's clock (``now``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from prenet_callbacks.measure.clocks import DeviceClock
from prenet_callbacks.measure.compile_clock import CompileClock
from prenet_callbacks.forecast.eta import RunMeasurements, Spent
from prenet_callbacks.measure.sanity import SanityTimer
from prenet_callbacks.measure.step_timer import StepTimer

# Clean forwards timed on the device per fit (two CUDA events each; their median is steady by then).
FORWARD_SAMPLES = 16


def _no_phases() -> dict[str, float]:
    return {"data_s": 0.0, "forward_s": 0.0, "backward_s": 0.0, "optimizer_s": 0.0, "other_s": 0.0}


@dataclass
class StepClock:
    """Timestamps of the current batch's phases (host seconds)."""

    batch_start: float | None = None
    before_backward: float | None = None
    after_backward: float | None = None
    before_optimizer: float | None = None
    phases: dict[str, float] = field(default_factory=_no_phases)
    batches: int = 0
    step_start: float | None = None  # the step's first batch start, less its data wait
    in_window: bool = False  # decided when the step's first batch starts


class StepAccount:
    """One fit's step and event timing. See the module docstring.

    Args:
        now: the session's clock, ``() -> seconds``.
        measurements: where clean steps, phases and event costs are added.
        compile_clock: torch.compile's compilations (one-off time, never a rate).
    """

    def __init__(self, now: Callable[[], float], measurements: RunMeasurements, compile_clock: CompileClock) -> None:
        self.now = now
        self.measurements = measurements
        self.compile_clock = compile_clock
        self.spent = Spent()
        self.first_batch_start: float | None = None
        self.last_batch_end: float | None = None
        self.accounted_s = 0.0         # validation/checkpoint time inside the current interval
        self.validation_in_interval = 0.0
        self.epoch_start_time: float | None = None
        self.epoch_first_batch = True
        self.val_start: float | None = None
        self.val_compile_start = 0.0   # compile seconds when the current validation run began
        self.compile_at_fit_start = self.compile_at_batch_end = compile_clock.seconds()
        self.sanity = SanityTimer()
        self.ckpt_start: float | None = None
        self.step_clock = StepClock()
        self.step_timer: StepTimer | None = None
        # on a GPU, warm forward passes of clean steps timed on the device (the profiled window's
        # forwards run several times slower under the profiler): what a validation batch costs
        self.forward_timer: StepTimer | None = None
        self.device_forwards = 0

    def time_on_device(self, clock: DeviceClock) -> None:
        """Time clean steps and warm forwards with marks on the device's timeline (a GPU)."""
        self.step_timer = StepTimer(clock)
        self.forward_timer = StepTimer(clock, max_pending=FORWARD_SAMPLES)
        self.device_forwards = 0

    @property
    def device_timed(self) -> bool:
        """Whether clean steps come from device marks (a GPU) rather than host intervals."""
        return self.step_timer is not None

    # -- training batches --------------------------------------------------------------------------
    def epoch_start(self) -> None:
        """A training epoch begins (its first batch waits on the loader's start-up)."""
        self.epoch_start_time = self.now()
        self.epoch_first_batch = True

    def batch_start(self, fit_start_time: float | None, *, timing: bool, in_window: bool) -> None:
        """A training batch starts: the run's set-up time (first batch), the data wait, the phase clock."""
        now = self.now()
        clock = self.step_clock
        if self.first_batch_start is None:
            self.first_batch_start = now
            if fit_start_time is not None:
                self.measurements.setup_s = now - fit_start_time
                # sanity check and set-up: whatever ran before the first batch that is not validation
                self.spent.setup_s = max(0.0, self.measurements.setup_s - self.spent.validation_s
                                         - self.spent.checkpoints_s)
            if self.epoch_start_time is not None:
                self.measurements.first_epoch_start_s = now - self.epoch_start_time
        wait = self._data_wait(now, timing)
        if clock.step_start is None:
            clock.step_start = now - wait
        clock.batch_start = now
        clock.before_backward = clock.after_backward = clock.before_optimizer = None
        clock.in_window = in_window
        self._open_forward(timing)

    @property
    def in_window(self) -> bool:
        """Whether the current step is profiled (decided when its first batch started)."""
        return self.step_clock.in_window

    def _open_forward(self, timing: bool) -> None:
        """Time this batch's forward on the device: a few clean steps after the profiling window."""
        timer = self.forward_timer
        if (timer is not None and timing and not self.epoch_first_batch
                and timer.pending + self.device_forwards < FORWARD_SAMPLES):
            timer.open()

    def _data_wait(self, now: float, timing: bool) -> float:
        """Host time waiting for this batch since the previous one ended (0 when not comparable)."""
        if self.last_batch_end is None or self.epoch_first_batch or self.accounted_s:
            return 0.0  # first batch, epoch start or an event in between: not a plain data wait
        wait = now - self.last_batch_end
        self.step_clock.phases["data_s"] += wait
        if timing:
            self.measurements.data_per_batch.add(wait)
        return wait

    def forward_end(self, *, timing: bool) -> None:
        clock = self.step_clock
        clock.before_backward = self.now()
        if clock.batch_start is not None:
            forward = clock.before_backward - clock.batch_start
            clock.phases["forward_s"] += forward
            if timing and not self.device_timed:  # on a GPU the host only launched it
                self.measurements.forward_per_batch.add(forward)
        if self.forward_timer is not None:
            self.forward_timer.close()

    def backward_end(self) -> None:
        clock = self.step_clock
        clock.after_backward = self.now()
        if clock.before_backward is not None:
            clock.phases["backward_s"] += clock.after_backward - clock.before_backward

    def optimizer_start(self) -> None:
        self.step_clock.before_optimizer = self.now()

    def batch_end(self, now: float, *, timing: bool, mark: Any = None) -> None:
        """A training batch ended at ``now`` (``mark``: its device mark when taken then, a kept quiet step's): close
        its optimizer phase and classify the interval."""
        clock = self.step_clock
        if clock.before_optimizer is not None:
            clock.phases["optimizer_s"] += now - clock.before_optimizer
        clock.batches += 1
        self._record_interval(now, timing, mark)

    def _record_interval(self, now: float, timing: bool, mark: Any = None) -> None:
        """Classify the time since the previous batch ended: a clean step, or an event's cost."""
        previous, self.last_batch_end = self.last_batch_end, now
        accounted, self.accounted_s = self.accounted_s, 0.0
        validation, self.validation_in_interval = self.validation_in_interval, 0.0
        first_in_epoch, self.epoch_first_batch = self.epoch_first_batch, False
        compile_now = self.compile_clock.seconds()
        compiled, self.compile_at_batch_end = compile_now - self.compile_at_batch_end, compile_now
        m = self.measurements
        if previous is None:
            self._time_device_step(clean=False, mark=mark)
            return
        raw = now - previous
        # the clipped mean sorts its window: only compute it for the rare intervals that need it
        batch_mean = m.batch.mean if (first_in_epoch or validation) else None
        if first_in_epoch:
            if batch_mean is not None:
                boundary = max(0.0, raw - accounted - batch_mean)
                m.epoch_boundary.add(boundary)
                self.spent.epoch_boundaries_s += boundary
            if validation:
                m.validation_run.add(validation)
        elif validation:
            # validation inside an epoch: what it costs beyond its hooks (loader start-up) is its own
            extra = max(0.0, raw - accounted - (batch_mean or 0.0))
            m.validation_run.add(validation + extra)
            self.spent.validation_s += extra
        elif accounted:
            pass  # a step-triggered checkpoint: already timed on its own
        elif compiled > 0:
            pass  # a step that (re)compiled: one-off time (in the elapsed time), not a step's rate
        elif timing and not self.device_timed:
            m.batch.add(raw)
        self._time_device_step(clean=not (first_in_epoch or validation or accounted or compiled > 0) and timing,
                               mark=mark)

    def _time_device_step(self, *, clean: bool, mark: Any = None) -> None:
        """On a GPU, clean steps are intervals between batch-end marks on the device's timeline."""
        timer = self.step_timer
        if timer is None:
            return
        timer.batch_end(clean=clean, mark=mark)
        for seconds in timer.ready():
            self.measurements.batch.add(seconds)
        if self.forward_timer is not None:
            for seconds in self.forward_timer.ready():
                self._add_device_forward(seconds)

    def _add_device_forward(self, seconds: float) -> None:
        if self.device_forwards == 0:
            # the profiled window's forwards were a stand-in until a clean one was measured
            self.measurements.forward_per_batch.clear()
        self.device_forwards += 1
        self.measurements.forward_per_batch.add(seconds)

    def stand_in_forwards(self, seconds_per_batch: list[float]) -> None:
        """The profiled window's device forwards (slowed by the profiler): the warm forward until clean ones arrive."""
        if self.device_forwards == 0:
            for seconds in seconds_per_batch:
                self.measurements.forward_per_batch.add(seconds)

    def close_step(self, now: float) -> dict[str, float] | None:
        """An optimizer step ended at ``now``: its phases if it was profiled (else None); a fresh phase clock."""
        clock = self.step_clock
        if clock.step_start is None and clock.before_backward is None and not clock.in_window:
            clock.batches = 0   # a step between phase samples (`phase_sampling`): nothing else was recorded
            return None
        self.step_clock = StepClock()
        if clock.step_start is None or not clock.in_window:
            return None
        phases = dict(clock.phases)
        total = now - clock.step_start
        phases["other_s"] = max(0.0, total - sum(phases.values()))
        phases["total_s"] = total
        phases["batches"] = clock.batches
        return phases

    def break_run(self) -> None:
        """What ran since the last batch end (predicting, printing, stopping the profiler) is not a step."""
        self.last_batch_end = self.now()
        if self.step_timer is not None:
            self.step_timer.break_run()

    def flush(self) -> None:
        """The run is over: the device intervals still in flight are measured steps too."""
        if self.step_timer is not None:
            for seconds in self.step_timer.flush():
                self.measurements.batch.add(seconds)

    # -- validation, the sanity check and saves ----------------------------------------------------
    def validation_start(self, *, sanity: bool, faults: Callable[[], int | None] | None,
                         fault_cost: Callable[[], float | None]) -> None:
        self.val_start = self.now()
        self.val_compile_start = self.compile_clock.seconds()
        if sanity:
            self.sanity = SanityTimer(faults=faults, fault_cost=fault_cost)
            self.sanity.start(self.val_start)

    def validation_batch_end(self, *, sanity: bool = False) -> None:
        """One validation batch finished (the sanity check's are timed one by one)."""
        if sanity:
            self.sanity.batch_end(self.now())

    def validation_end(self, *, sanity: bool = False) -> None:
        """A validation run (or the sanity check) ended: its time, less any compilation inside it."""
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

    def checkpoint_start(self) -> None:
        """A checkpoint save begins."""
        self.ckpt_start = self.now()

    def checkpoint_end(self) -> None:
        """A checkpoint save ended: one file's cost."""
        if self.ckpt_start is None:
            return
        duration = self.now() - self.ckpt_start
        self.ckpt_start = None
        self.measurements.checkpoint_file.add(duration)
        self.accounted_s += duration
        self.spent.checkpoints_s += duration

    def compile_s(self) -> float | None:
        """torch.compile's time in this fit (None: not listening to Dynamo)."""
        if not self.compile_clock.installed:
            return None
        return self.compile_clock.seconds() - self.compile_at_fit_start

    def spent_breakdown(self, elapsed: float, train_batches: int) -> dict[str, float]:
        """Where this run's time went, measured: the parts add up to ``elapsed``.

        ``train_batches`` is the number of training batches run in this fit (data loading is timed per batch).
        """
        spent = self.spent
        data = (self.measurements.data_per_batch.mean or 0.0) * max(0, train_batches)
        train = max(0.0, elapsed - spent.outside_train_s)
        return {"setup_s": round(spent.setup_s, 3), "train_s": round(train, 3),
                "validation_s": round(spent.validation_s, 3), "checkpoints_s": round(spent.checkpoints_s, 3),
                "epoch_boundaries_s": round(spent.epoch_boundaries_s, 3),
                "data_loading_s": round(min(train, data), 3)}
