"""The engine behind every integration: a small state machine fed with training events.

Adapters (Lightning callback, DeepSpeed attach, Hugging Face callback, the loop tracker) translate
their framework's hooks into calls on a `PredictionSession`; the session times steps, runs the
per-module profiler for a short window, predicts the whole run, refines the prediction, logs and
writes the report, and records how the run ended. It keeps the events that need more than one part
(fit start, the batch's phases and end, validation start, epoch and fit end) and decides, step by step
(`schedule`), when to profile, time and predict. Its parts are plain objects, reached directly:

- ``steps``, `measure.step_account.StepAccount`: what each interval between batch ends was (a clean step,
  an event's cost), the batch's phases, validation runs, the sanity check and saves (adapters call its
  ``validation_batch_end``, ``validation_end``, ``checkpoint_start`` and ``checkpoint_end``);
- ``window``, `measure.profiling_window.ProfilingWindow`: the module profiler's calls, the window's GPU
  phases and memory, the eval probe (``probe_eval_forward``);
- ``facts``, `session.facts.RunFacts`: what the adapter learns late (``note_run_facts``,
  ``note_validation_batch_size``, ``set_memory_account``, ``set_state_bytes``);
- ``predictions``, `session.predictions.Predictions`: the prediction history, the first one projected onto
  other hardware;
- ``outputs``, `outputs.session_outputs.SessionOutputs`: logger metrics, printer, publishers, the report on disk;
- ``guard``, `session.guard.Containment`: whether the session stepped aside, and the undo actions;
- `measure.measured`: the report's ``measured`` block; `session.run_record`: its ``plan``, ``run`` and
  ``actual`` blocks;
- `measure.subnormals.SubnormalWatch`: on a CPU, optimizer-state entries decaying towards subnormal floats;
- `measure.heap_faults.HeapWatch`: on a CPU, the timed steps' page faults (a heap trim only if
  ``allocator_probe``);
- `measure.phase_sampling.PhaseSampler`: after the first prediction, the steps whose phases are timed.

The session must never break a run (`session.guard`): every event method is guarded, and an exception
inside it becomes one warning, all hooks are removed and the session goes quiet. An adapter calls a part
from inside its own guarded hook, or through ``session.guard.call``.
"""
from __future__ import annotations

import math

import json
import time
from typing import Any, Callable

from prenet_callbacks.measure.clocks import DeviceClock
from prenet_callbacks.measure.compile_clock import CompileClock
from prenet_callbacks.measure.contention import CpuWait, note_contention
from prenet_callbacks.forecast.eta import Prediction, RunMeasurements, predict_fit
from prenet_callbacks.measure.heap_faults import HeapWatch, glibc_trim
from prenet_callbacks.session.lifecycle import check_reason, check_start
from prenet_callbacks.measure.measured import close_window, update_measured
from prenet_callbacks.session.own_time import OwnTime
from prenet_callbacks.measure.phase_sampling import PhaseSampler, estimators_fed
from prenet_callbacks.forecast.plan import RunLimits, RunPlan
from prenet_callbacks.measure.profiling_window import ProfilingWindow, WindowProfiler
from prenet_callbacks.report import Report
from prenet_callbacks.outputs.report_view import run_word
from prenet_callbacks.session.run_record import record_fit_end, record_fit_start, record_plan
from prenet_callbacks.measure.sanity import minor_faults, seconds_per_fault
from prenet_callbacks.session.config import SessionConfig
from prenet_callbacks.session.facts import RunFacts
from prenet_callbacks.session.guard import Containment, PreNeTWarning, guarded
from prenet_callbacks.outputs.session_outputs import SessionOutputs
from prenet_callbacks.session.predictions import Predictions
from prenet_callbacks.session.schedule import Schedule
from prenet_callbacks.measure.step_account import StepAccount
from prenet_callbacks.measure.subnormals import SubnormalWatch, flushes_subnormals
from prenet_callbacks.session.quiet_steps import QuietSteps, quiet_steps_ahead
from prenet_callbacks.units import format_duration

__all__ = ["PreNeTWarning", "PredictionSession", "SessionConfig", "guarded"]


class PredictionSession:
    """Times a training run and predicts its total wall time. See the module docstring.

    Args:
        config: the user's choices.
        is_rank_zero: only rank zero prints, logs and writes.
        clock: a `DeviceClock` of the device the model trains on (`prenet_callbacks.measure.clocks`), or a
            plain ``() -> seconds`` callable (a fake host clock in tests). Default: host time.
    """

    def __init__(self, config: SessionConfig, *, is_rank_zero: bool = True,
                 clock: DeviceClock | Callable[[], float] | None = None) -> None:
        self.config = config
        self.device_clock: DeviceClock | None = clock if isinstance(clock, DeviceClock) else None
        self.now: Callable[[], float] = clock if callable(clock) and self.device_clock is None else time.perf_counter
        # the process's page faults, to time the sanity check warm (a fake clock has none to match)
        self.count_faults: Callable[[], int | None] | None = minor_faults if self.now is time.perf_counter else None
        self.fault_cost: Callable[[], float | None] = seconds_per_fault
        self.report = Report()
        self.measurements = RunMeasurements()
        self.plan: RunPlan | None = None
        self.schedule = Schedule.for_run(config)   # the plan's length may shorten it (`set_plan`)
        self.outputs = SessionOutputs(config, is_rank_zero=is_rank_zero, now=lambda: self.now())
        self.window = ProfilingWindow(on_drop=lambda limitation: self.report.limitations.append(limitation),
                                      now=lambda: self.now(), on_model_call=self.measurements.model_call.add)
        self.own_time = OwnTime()   # what PreNeT's own calls cost this fit (the guard counts them)
        self.guard = Containment(release=self.window.release, own_time=self.own_time)
        self.compile_clock = CompileClock()   # torch.compile's compilations: one-off time, never a rate
        # an integration's steps between events: their end times kept, replayed before any other event (`quiet_steps`)
        self.guard.quiet = self.quiet = QuietSteps(lambda: self.now(), self.compile_clock.seconds,
                                                   self._replay_batch_end, self.own_time.add)
        self.predictions = Predictions(config, self.outputs)
        self.facts = RunFacts(lambda: self.report, self.measurements, self.window)
        self.subnormal_watch: SubnormalWatch | None = None
        self.heap_trim: Callable[[], object] | None = glibc_trim()  # resolved, called only by an opted-in probe
        self._reset_fit_state()

    def _reset_fit_state(self) -> None:
        self.fit_start_time: float | None = None
        self.train_start_elapsed: float | None = None  # where a time limit starts counting
        self.done_batches = 0          # global batches finished in this run (plus the resume point)
        self.done_steps = 0            # optimizer steps (trainer.global_step)
        self.steps_seen = 0            # optimizer steps seen in this fit call
        self.epoch_start_batch: int | None = None  # done_batches when this fit's current epoch began
        self.limits = RunLimits()      # what may end the run (`fit_start`)
        self.steps = StepAccount(lambda: self.now(), self.measurements, self.compile_clock)
        self.quiet.device_mark = None   # a host-timed fit's kept steps need no device mark (`fit_start`)
        self.phase_sampler = PhaseSampler()
        # the step about to run has its phases timed (`measure.phase_sampling`): integrations read it every batch
        self.phase_marks = True
        self.window.new_fit(self.device_clock)
        self.outputs.new_fit()
        self.predictions.new_fit()
        self.heap_watch: HeapWatch | None = None  # a host-timed fit's (`fit_start`)
        self.cpu_wait = CpuWait()   # the threads' wait for a CPU, read at the window's close and each prediction
        self.window_wait: float | None = None   # its share up to the profiling window's close (`contention`)
        self.ended = False
        self.own_time.new_fit()

    # -- failure containment (`session.guard`) -----------------------------------------------------
    def fail(self, error: BaseException, where: str = "") -> None:
        """Step aside: one warning, every hook removed, nothing more from this session."""
        self.guard.fail(error, where)

    def add_cleanup(self, cleanup: Callable[[], None]) -> None:
        """Register an undo action (remove a hook, restore a wrapped method); run once at the end."""
        self.guard.cleanups.append(cleanup)

    def close(self) -> None:
        """Remove every hook and wrapper (idempotent; also after a failure)."""
        self.guard.run_cleanups()

    # -- the run and what the adapter learns about it -----------------------------------------------
    @guarded
    def fit_start(self, current: dict[str, Any] | None = None, *, framework: str | None = None,
                  start: str = "fresh", limits: RunLimits | None = None, startup_s: float | None = None) -> None:
        """A fit (or an attach) begins; the ``startup_s`` before this call (DDP start-up) count in its time."""
        check_start(start)
        self._reset_fit_state()
        self.fit_start_time = self.now() - (startup_s or 0.0)
        self.limits = limits or RunLimits()
        record_fit_start(self.report, current, framework=framework, start=start, limits=limits, startup_s=startup_s)
        self.outputs.add_page_publisher()
        if self.compile_clock.install():
            self.add_cleanup(self.compile_clock.remove)
        if self.device_clock is not None and self._on_cuda():
            # device time: phases of the profiled window and clean steps, read without blocking
            self.window.time_on_device(self.device_clock)
            self.steps.time_on_device(self.device_clock)
            self.quiet.device_mark = self.device_clock.mark   # a kept step's batch-end mark, as the full path's
        elif self.count_faults is not None and self.heap_trim is not None:
            # counting faults changes nothing; trimming the heap changes the process: only when asked
            self.heap_watch = HeapWatch(self.count_faults, self.fault_cost,
                                        self.heap_trim if self.config.allocator_probe else None, clock=self.now)

    def use_clock(self, clock: DeviceClock) -> None:
        """The `DeviceClock` of the device the model trains on (chosen by the integration)."""
        self.device_clock = clock

    def _on_cuda(self) -> bool:
        return self.device_clock is not None and self.device_clock.kind == "cuda"

    @guarded
    def set_plan(self, plan: RunPlan) -> None:
        """The run plan (from the trainer): its resume point, and the schedule's clean timing in a short run."""
        self.plan = plan
        self.done_batches, self.done_steps = plan.start_batch, plan.start_step
        self.train_start_elapsed = self._elapsed()
        record_plan(self.report, plan)
        self.schedule = Schedule.for_run(self.config, plan)

    @guarded
    def note_optimizer(self, optimizer: Any) -> None:
        """The run's optimizer: its settings for the projection and, on a CPU that keeps subnormal floats,
        its moment buffers to watch (`subnormals`)."""
        self.facts.note_optimizer(optimizer)
        if optimizer is not None and not self._on_cuda() and not flushes_subnormals():
            self.subnormal_watch = SubnormalWatch(optimizer)

    @guarded
    def attach_profiler(self, profiler: WindowProfiler) -> None:
        """Give the session a module profiler (`profiling_window.WindowProfiler`)."""
        self.window.profiler = profiler

    @guarded
    def profile_model(self, make_profiler: Callable[[], WindowProfiler]) -> None:
        """Build and attach the per-module profiler, unless ``profile_layers`` is off (`ProfilingWindow.build`)."""
        if self.config.profile_layers:
            self.window.build(make_profiler)

    # -- sanity check, validation and saves (timed by `StepAccount`) --------------------------------
    @guarded
    def validation_start(self, sanity: bool = False) -> None:
        # on a GPU the host's page faults overlap device work: nothing to take off there
        self.steps.validation_start(sanity=sanity, faults=None if self._on_cuda() else self.count_faults,
                                    fault_cost=self.fault_cost)

    # -- training batches ---------------------------------------------------------------------------
    @guarded
    def train_epoch_start(self) -> None:
        self.epoch_start_batch = self.done_batches
        self.steps.epoch_start()

    @guarded
    def batch_start(self) -> None:
        if not self.phase_marks:
            return  # a step between phase samples: only its end is timed
        in_window = not self.window.done and self.schedule.profiles(self.steps_seen)
        if (self.heap_watch is not None and self.heap_watch.probes  # by default no probe: no per-batch look-up
                and self.steps_seen == self.schedule.heap_probe_step
                and self.steps.step_clock.batches == 0):
            self.heap_watch.start_probe()  # an untimed step: trimming the heap (if opted in) costs it its faults
        self.steps.batch_start(self.fit_start_time, timing=self.schedule.times(self.steps_seen), in_window=in_window)
        self.window.open_batch(in_window)

    @guarded
    def before_backward(self) -> None:
        if not self.phase_marks:
            return
        self.steps.forward_end(timing=self.schedule.times(self.steps_seen))
        self.window.begin_phase("backward", self.steps.in_window)

    @guarded
    def after_backward(self) -> None:
        if not self.steps.in_window:
            return  # the backward and optimizer split is the profiling window's alone
        self.steps.backward_end()
        self.window.mark("after_backward", self.steps.in_window)

    @guarded
    def before_optimizer_step(self) -> None:
        if not self.steps.in_window:
            return
        self.steps.optimizer_start()
        self.window.begin_phase("optimizer", self.steps.in_window)

    @guarded
    def batch_end(self, *, stepped: bool, global_step: int | None = None, at: float | None = None,
                  mark: Any = None) -> None:
        """One training batch finished (``at``: when, for a kept quiet step; default now; ``mark``: its device mark,
        taken then); ``stepped`` if it ended with an optimizer step."""
        now = self.now() if at is None else at
        timing = self.schedule.times(self.steps_seen)
        window = self.window
        if not window.done:
            window.mark("end", self.steps.in_window)
        self.steps.batch_end(now, timing=timing, mark=mark)
        heap = self.heap_watch
        if heap is not None:
            # the page-fault count: every batch until the first prediction, then within its reads' budget
            if not self.predictions.first_made or heap.read_due(now):
                heap.batch_end(timing=timing)
            else:
                heap.skip_batch()
        self.done_batches += 1
        if window.active:
            window.suspend()
        if not stepped:
            return
        self.steps_seen += 1
        self.done_steps = global_step if global_step is not None else self.done_steps + 1
        phases = self.steps.close_step(now)
        if not window.done:
            window.end_step(phases)
            if not self.schedule.profiles(self.steps_seen):
                if window.active:
                    self._finish_profile_window()
                elif window.profiler is None:
                    # no profiler (profile_layers=False, a DeepSpeed pipeline): nothing to stop, but the window is
                    # over all the same, and the quiet steps may begin
                    window.done = True
        if not self.predictions.first_made:
            if self.schedule.first_prediction_due(self.steps_seen, device_timed=self.steps.device_timed,
                                                  clean_steps=self.measurements.batch.count):
                self._predict(first=True)
        elif self._refinement_due(self.done_steps, now):
            self._refine()
        every = self.config.metrics_every_n_steps
        if every is not None and self.done_steps % every == 0:
            self.log_metrics(self.done_steps)
        self._watch_subnormals()
        self._sample_phases()
        if self.quiet.enabled and at is None:   # a replayed step's stretch is decided by the event that replays it
            self.quiet.allow(*self._quiet_ahead())

    def _replay_batch_end(self, at: float, global_step: int, mark: Any = None) -> None:
        self.batch_end(stepped=True, global_step=global_step, at=at, mark=mark)

    def _quiet_ahead(self) -> tuple[int, float]:
        """How many of the coming steps' batch ends can be kept for later (`quiet_steps`), and until when: none
        while phases are marked on every step, or a window or the subnormal watch may need a batch end; once a
        refinement is due by its step count, only until its cost allows it."""
        if (self.phase_marks or not self.phase_sampler.sampling or not self.window.done or self.ended
                or (self.subnormal_watch is not None and not self.subnormal_watch.done)):
            return 0, math.inf
        refine_from = self.predictions.last_step + self.config.refine_every_n_steps
        steps = quiet_steps_ahead(steps_seen=self.steps_seen, done_steps=self.done_steps,
                                  every=self.phase_sampler.every, refine_from_step=refine_from,
                                  metrics_every=self.config.metrics_every_n_steps)
        waiting = refine_from <= self.done_steps + 1   # due by its step count: its cost decides when
        return steps, self.predictions.refinement_allowed_at() if waiting else math.inf

    def _sample_phases(self) -> None:
        """Whether the next step's phases are timed: every step until the first prediction is made and the
        phase estimators are fed, then one in `phase_sampling.EVERY`, or fewer on short steps (`PhaseSampler`)."""
        sampler = self.phase_sampler
        if not sampler.sampling and self.predictions.first_made:
            m = self.measurements
            latest = self.predictions.latest
            sampler.start_when(estimators_fed(m.data_per_batch.count, m.forward_per_batch.count),
                               step_s=latest.step_s if latest is not None else None)
        self.phase_marks = sampler.marks(self.steps_seen)

    def _watch_subnormals(self) -> None:
        """Sample the moment buffers one step before a prediction may come, to find the dead entries then."""
        if self.subnormal_watch is None or self.subnormal_watch.done:
            return
        if self.predictions.first_made:
            due = self._refinement_due(self.done_steps + 1)
        else:
            due = self.steps_seen + 1 >= self.schedule.first_prediction_step
        if due:
            self.subnormal_watch.snapshot(self.done_steps)
            self._break_run()  # sampling is not part of the next step

    def _refinement_due(self, step: int, now: float | None = None) -> bool:
        """Whether a refinement is due at optimizer ``step`` (ending at ``now``, default now): one every
        ``refine_every_n_steps``, while refinements cost at most `session.predictions.REFINEMENT_SHARE` of the run."""
        return (step - self.predictions.last_step >= self.config.refine_every_n_steps
                and self.predictions.allows_refinement(self.now() if now is None else now))

    @guarded
    def log_metrics(self, step: int | None = None) -> None:
        """``prenet/*`` metrics of the latest prediction to the logger sinks, now (at optimizer ``step``, default
        the run's): every ``metrics_every_n_steps`` by the session itself, else by the integration whenever its
        Trainer logs. Nothing before the first prediction."""
        if self.predictions.latest is not None:
            self.outputs.log(self.predictions.latest, self.done_steps if step is None else step, self._elapsed())

    def _finish_profile_window(self) -> None:
        with self.own_time.part("profiling"):
            self._close_window()

    def _close_window(self) -> None:
        self.window_wait = self.cpu_wait.share()   # warm-up and window; the first prediction's share: timed steps
        forwards = close_window(self.report, self.measurements, self.window, device_phases=self.steps.device_timed,
                                measure_host=not self._on_cuda() and self.config.projects)
        self.steps.stand_in_forwards(forwards or [])
        self._break_run()  # stopping the profiler (and reading its trace) is not a training step

    def _break_run(self) -> None:
        """What ran since the last batch end is not a training step: neither its time nor its faults."""
        self.steps.break_run()
        if self.heap_watch is not None:
            self.heap_watch.skip_interval()

    # -- predictions --------------------------------------------------------------------------------
    def _elapsed(self) -> float:
        return self.now() - (self.fit_start_time if self.fit_start_time is not None else self.now())

    def _refine(self) -> None:
        """A refinement after the first prediction; its cost sets when the next may come."""
        started = self.now()
        self._predict(first=False)
        self.predictions.refined(started, self.now())

    def _predict(self, *, first: bool, fit_done: bool = False) -> Prediction | None:
        with self.own_time.part("predictions"):
            return self._add_prediction(first=first, fit_done=fit_done)

    def _add_prediction(self, *, first: bool, fit_done: bool) -> Prediction | None:
        prediction = self.predictions.add(self.report, lambda: self._prediction(fit_done), at_step=self.done_steps,
                                          first=first, update_measured=self._update_measured)
        if prediction is not None and first:
            self._break_run()  # predicting, projecting and printing are not a training step
        return prediction

    def _prediction(self, fit_done: bool) -> Prediction | None:
        if self.plan is None:
            return None
        self.measurements.host_timed = not self._on_cuda()  # a shared host's pace drifts; a GPU's steps less so
        risk = self.subnormal_watch.note(self.done_steps) if self.subnormal_watch and not fit_done else None
        allocator = self.heap_watch.risk() if self.heap_watch is not None and not fit_done else None
        prediction = predict_fit(self.plan, self.measurements, done_batches=self.done_batches,
                                 done_steps=self.done_steps, elapsed_s=self._elapsed(), spent=self.steps.spent,
                                 fit_done=fit_done, time_limit_start_s=self.train_start_elapsed,
                                 later_risk=risk, allocator=allocator)
        return prediction if prediction.step_s is not None else None

    def _update_measured(self) -> None:
        update_measured(self.report.measured, self.measurements, self.window, warmup_steps=self.config.warmup_steps,
                        compile_s=self.steps.compile_s(), on_cuda=self._on_cuda(), device_timed=self.steps.device_timed,
                        cpu_wait=self.cpu_wait.share(), window_wait=self.window_wait)
        note_contention(self.report.limitations, self.report.measured.get("contention"))

    # -- the end of an epoch and of the run ---------------------------------------------------------
    @guarded
    def epoch_end(self, *, whole: bool = True) -> None:
        """A training epoch ended (``whole``: its loader ran out, rather than a stop cutting it short); the first
        whole one of a loader without a length gives the run its length."""
        if whole and self.plan is not None and self.epoch_start_batch is not None:
            self._learn_epoch_length(self.done_batches - self.epoch_start_batch)
        if self.predictions.first_made:
            self.outputs.write_report(self.report)

    def _learn_epoch_length(self, batches: int) -> None:
        shift = self.plan.learn_epoch_length(batches, self.limits.max_epochs)
        if shift is None:
            return
        self.done_batches += shift
        record_plan(self.report, self.plan)
        self.report.limitations.append(f"the training dataloader has no length: an epoch is taken as long as the "
                                       f"first one seen ({batches:,} batches)")
        if not self.predictions.first_made:
            return
        prediction = self._predict(first=False)   # the first total, now that the run has a length
        if prediction is not None and prediction.predicted_total_s is not None:
            self.outputs.print_line(
                f"PreNeT: the first epoch ran {batches:,} batches: predicted {run_word(self.report)} time "
                f"{format_duration(prediction.predicted_total_s)} (band {format_duration(prediction.low_s)} – "
                f"{format_duration(prediction.high_s)}), {format_duration(prediction.eta_s)} to go")

    @guarded
    def fit_end(self, reason: str = "completed", detail: str | None = None) -> None:
        """The run is over: how it ended (`run_record.record_fit_end`), the final report, hooks removed."""
        check_reason(reason)
        if self.fit_start_time is None or self.ended:
            return
        self.ended = True
        elapsed = self._elapsed()
        if self.window.active:
            self._finish_profile_window()
        self.steps.flush()
        train_batches = self.done_batches - (self.plan.start_batch if self.plan is not None else 0)
        record_fit_end(self.report, self.plan, elapsed=elapsed, reason=reason, detail=detail, steps_seen=self.steps_seen,
                       done_steps=self.done_steps, done_batches=self.done_batches, first=self.predictions.first_entry,
                       breakdown=self.steps.spent_breakdown(elapsed, train_batches),
                       first_prediction_step=None if self.predictions.first_made else self.schedule.first_prediction_step)
        with self.own_time.part("end"):
            self._update_measured()
            if self.predictions.first_made and self.config.projects and self.report.targets:
                self.predictions.project(self.report, self.done_steps)  # the final table rests on the final measurements
        self.report.actual["own_time"] = self.own_time.summary(elapsed, train_batches)
        self.outputs.end(self.report, unit=run_word(self.report))
        self.subnormal_watch = None   # it holds the optimizer, the user's; a next fit notes its own
        self.guard.run_cleanups()

    # -- resume -------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Plain JSON data only: checkpoints are loaded with ``torch.load(weights_only=True)``."""
        return {"report": json.loads(self.report.to_json(indent=None)), "measurements": self.measurements.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a checkpointed report and measurements, unless this session already has newer ones
        (``trainer.validate(ckpt_path=...)`` after a fit restores callbacks too: the report in memory is newer)."""
        if self.report.run.get("fits"):
            return
        try:
            self.report = Report.from_dict(state["report"])
            self.measurements.load_state_dict(state.get("measurements", {}))
        except Exception as error:  # noqa: BLE001 - an old or foreign state must not stop a resume
            self.fail(error, where="load_state_dict")
