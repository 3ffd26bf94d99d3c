"""The engine under `Tracker` and DeepSpeed's `attach`: one prediction session for a loop no framework drives.

A hand-written loop must declare what a framework would otherwise tell us: how many optimizer
steps the run makes (or nothing: then only a rate is given), and how often it evaluates and saves
(``eval_every``, ``checkpoint_every``). `LoopRun` checks that declaration, turns it into a
`RunPlan`, starts the `PredictionSession`, times ``validation()`` and ``checkpoint()`` blocks, and
ends the run: "completed" once the planned steps are done, "stopped_early" when it ends before.
"""
from __future__ import annotations

import contextlib
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import torch

from integrations.plumbing import default_report_path, note_once
from prenet_callbacks.measure.clocks import clock_for
from prenet_callbacks.session.arguments import validate_session_config
from prenet_callbacks.measure.memory_account import state_sizes
from prenet_callbacks.forecast.plan import RunLimits, RunPlan, plan_for_steps
from prenet_callbacks.outputs.render import print_report as render_report
from prenet_callbacks.report import Report
from prenet_callbacks.session.machine import PredictionSession, SessionConfig

Sink = Callable[[dict[str, float], int], None]


def _optional_positive(name: str, value: Any, example: str, unit: str = "optimizer steps") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ValueError(f"{name} must be a positive integer ({unit}) or None, got {value!r} "
                         f"({type(value).__name__}); pass e.g. {name}={example}")
    return int(value)


@dataclass(frozen=True)
class LoopSchedule:
    """What a loop declared: its length and when it evaluates and saves (all in optimizer steps)."""

    total_steps: int | None
    eval_every: int | None = None
    eval_batches: int | None = None
    checkpoint_every: int | None = None

    def plan(self, *, accumulate: int = 1, start_step: int = 0, unknown_reason: str | None = None) -> RunPlan:
        return plan_for_steps(self.total_steps, accumulate=accumulate, start_step=start_step,
                              eval_every=self.eval_every, eval_batches=self.eval_batches,
                              checkpoint_every=self.checkpoint_every, unknown_reason=unknown_reason)

    def events_after(self, step: int) -> tuple[bool, bool]:
        """(an evaluation, a checkpoint save) are due after optimizer step ``step``."""
        return (bool(self.eval_every) and step % self.eval_every == 0,
                bool(self.checkpoint_every) and step % self.checkpoint_every == 0)


def check_schedule(total_steps: Any, *, start_step: int, eval_every: Any = None, eval_batches: Any = None,
                   checkpoint_every: Any = None, step_name: str = "start_step") -> LoopSchedule:
    """Validate a declared schedule; `ValueError` naming the argument, the value and the fix."""
    if total_steps is not None:
        if isinstance(total_steps, bool) or not isinstance(total_steps, numbers.Integral):
            raise ValueError(f"total_steps must be a positive integer (optimizer steps in the whole run) or None for "
                             f"a rate only, got {total_steps!r} ({type(total_steps).__name__}); pass e.g. total_steps=1000")
        total_steps = int(total_steps)
        if total_steps < 1:
            raise ValueError(f"total_steps must be a positive integer, got {total_steps}; pass e.g. total_steps=1000")
        if total_steps <= start_step:
            raise ValueError(f"total_steps={total_steps} is not beyond {step_name}={start_step}: count total_steps "
                             f"from the start of the run, like {step_name}")
    return LoopSchedule(
        total_steps=total_steps,
        eval_every=_optional_positive("eval_every", eval_every, "500"),
        eval_batches=_optional_positive("eval_batches", eval_batches, "50", "batches per evaluation"),
        checkpoint_every=_optional_positive("checkpoint_every", checkpoint_every, "1000"),
    )


def loop_config(**options: Any) -> SessionConfig:
    """`validate_session_config` for a loop: the report goes to ``./prenet_report.json`` unless told otherwise."""
    config = validate_session_config(**options)
    if config.report_path is None:
        config.report_path = default_report_path(None)
    return config


def memory_account(model: Any, optimizers: Sequence[Any] = (), *, world: int = 1) -> dict[str, Any]:
    """Parameters, gradients and optimizer state per device (`state_sizes`: metadata only, no gather).

    Call after the first optimizer step (optimizers create their state lazily).
    """
    return state_sizes(model, [o for o in optimizers if o is not None], world=max(1, int(world or 1)))


def module_profiler(model: torch.nn.Module, *, clock: Any, device: Any, precision: str) -> Any:
    """The per-module profiler on the session's clock, with the device's catalog entry (for CT)."""
    from prenet_callbacks.hardware import current_device
    from prenet_callbacks.measure.profiling import ModuleProfiler

    return ModuleProfiler(model, clock=clock, accelerator=current_device(device=device).accelerator,
                          precision=precision)


def exception_reason(error: BaseException) -> tuple[str, str | None]:
    """How a run that raised ended: ``interrupted`` (Ctrl+C) or ``failed`` with the error."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted", None
    return "failed", f"{type(error).__name__}: {error}"[:200]


def torch_optimizer(optimizer: Any) -> Any:
    """The torch optimizer itself (accelerate's ``AcceleratedOptimizer`` keeps it as ``.optimizer``)."""
    inner = getattr(optimizer, "optimizer", None)
    return inner if isinstance(inner, torch.optim.Optimizer) else optimizer


class LoopRun:
    """One run of a hand-written loop: the session, its plan, the blocks the loop marks, and its end.

    Args:
        config: the validated options (`validate_session_config`).
        schedule: the declared length and evaluation / checkpoint cadence.
        is_rank_zero: this process prints and writes.
        start_step: optimizer steps already done when the run is attached (a resumed run).
    """

    def __init__(self, config: SessionConfig, schedule: LoopSchedule, *, is_rank_zero: bool,
                 start_step: int = 0) -> None:
        self.session = PredictionSession(config, is_rank_zero=is_rank_zero)
        self.schedule = schedule
        self.start_step = start_step
        self.steps = start_step           # optimizer steps done (counted like the loop's own counter)
        self.in_block = 0                 # depth of validation() / checkpoint() blocks now open
        self.validating = False           # inside a validation() block
        self.started = False
        self.ended = False

    @property
    def report(self) -> Report:
        return self.session.report

    def start(self, current: dict[str, Any], *, framework: str, device: Any, accumulate: int = 1,
              sinks: Sequence[Sink] = (), make_profiler: Callable[[], Any] | None = None,
              unknown_reason: str | None = None) -> None:
        """Start the session: the device's clock, what runs where, the plan, the profiler (guarded by the session).

        A run attached after steps already ran (``start_step`` > 0) starts "attached_late".
        """
        session = self.session
        session.outputs.printer = render_report  # the session prints on rank 0 only
        session.outputs.logger_sinks = list(sinks)
        session.use_clock(clock_for(device))
        session.fit_start(current=current, framework=framework,
                          start="attached_late" if self.start_step else "fresh",
                          limits=RunLimits(max_steps=self.schedule.total_steps))
        session.set_plan(self.schedule.plan(accumulate=accumulate, start_step=self.start_step,
                                            unknown_reason=unknown_reason))
        if self.schedule.eval_every and not self.schedule.eval_batches:
            note_once(
                session, "evaluation cost is estimated from one training forward until the first evaluation is measured "
                "(pass eval_batches= for a better first estimate)")
        if make_profiler is not None:
            session.profile_model(make_profiler)
        self.started = not session.guard.disabled

    @property
    def active(self) -> bool:
        return self.started and not self.ended and not self.session.guard.disabled

    @contextlib.contextmanager
    def validation(self) -> Iterator[None]:
        """Time an evaluation run (it is not a training step); exceptions pass through unchanged."""
        self.validating = True
        try:
            with self._block(self.session.validation_start, self.session.steps.validation_end):
                yield
        finally:
            self.validating = False

    @contextlib.contextmanager
    def checkpoint(self) -> Iterator[None]:
        """Time a checkpoint save; exceptions pass through unchanged."""
        with self._block(self.session.steps.checkpoint_start, self.session.steps.checkpoint_end):
            yield

    @contextlib.contextmanager
    def _block(self, begin: Callable[[], None], end: Callable[[], None]) -> Iterator[None]:
        live = self.active
        if live:
            self.session.guard.call(begin)  # a PreNeT error becomes one warning, never the user's problem
        self.in_block += 1
        try:
            yield
        finally:
            self.in_block -= 1
            if live and self.active:
                self.session.guard.call(end)

    def reached_end(self) -> bool:
        """The planned steps are done."""
        return self.schedule.total_steps is not None and self.steps >= self.schedule.total_steps

    def end(self, reason: str | None = None, detail: str | None = None) -> Report:
        """Finish the run now: how it ended, the actual time, the report written; every hook removed.

        ``reason`` None: "completed" once the planned steps are done (or when none were declared),
        else "stopped_early".
        """
        if self.active:
            self.ended = True
            if reason is None:
                reason = self.end_reason
                if reason == "stopped_early":
                    detail = detail or (f"finished after {self.steps:,} of {self.schedule.total_steps:,} "
                                        "declared steps")
            self.session.fit_end(reason, detail)
        self.ended = True
        self.session.close()
        return self.report

    def end_with(self, error: BaseException) -> Report:
        """The loop raised: end the run as interrupted (Ctrl+C) or failed, and remove every hook."""
        return self.end(*exception_reason(error))

    @property
    def end_reason(self) -> str:
        """How the run ended (or would end now): "completed" or "stopped_early"."""
        return "completed" if self.schedule.total_steps is None or self.reached_end() else "stopped_early"
