"""The session's schedule, in optimizer steps since the fit (or attach) started::

    | warm-up | per-module profiling | clean timing | first prediction, then refinements ...

`Schedule` holds the step numbers; the session counts steps and asks it which stretch a step is in.
"""
from __future__ import annotations

from dataclasses import dataclass

from prenet_callbacks.forecast.plan import RunPlan
from prenet_callbacks.session.config import SessionConfig

# Fewest clean steps a first prediction rests on, and the share of the run it may wait for.
MIN_TIMING_STEPS = 3
FIRST_PREDICTION_BY = 0.04


@dataclass(frozen=True)
class Schedule:
    """Where warm-up, the profiling window and clean timing begin and end (optimizer steps)."""

    warmup_steps: int
    profile_steps: int       # 0 when layers are not profiled
    timing_steps: int        # clean steps timed before the first prediction

    @classmethod
    def for_run(cls, config: SessionConfig, plan: RunPlan | None = None) -> Schedule:
        """The user's schedule; in a short run the clean timing shrinks so that the first prediction
        comes within `FIRST_PREDICTION_BY` of it (never on fewer than `MIN_TIMING_STEPS` steps)."""
        timing = config.timing_steps
        if plan is not None and plan.known_length:
            steps_left = plan.total_steps - plan.start_step
            budget = int(steps_left * FIRST_PREDICTION_BY) - config.warmup_steps - config.profile_steps
            timing = max(MIN_TIMING_STEPS, min(config.timing_steps, budget))
        return cls(config.warmup_steps, config.profile_steps if config.profile_layers else 0, timing)

    def profiles(self, steps_seen: int) -> bool:
        """Whether the next step (``steps_seen`` done) falls in the profiling window."""
        return self.warmup_steps <= steps_seen < self.warmup_steps + self.profile_steps

    def times(self, steps_seen: int) -> bool:
        """Whether the next step is clean-timed: after warm-up and the profiling window (profiled steps run slower)."""
        return steps_seen >= self.warmup_steps + self.profile_steps

    @property
    def heap_probe_step(self) -> int | None:
        """The untimed step whose first batch probes the allocator (`heap_faults`): the last warm-up step, else
        the last profiled one; never the first step (it faults everything in for the first time)."""
        if self.warmup_steps >= 2:
            return self.warmup_steps - 1
        untimed = self.warmup_steps + self.profile_steps
        return untimed - 1 if untimed >= 2 else None

    @property
    def first_prediction_step(self) -> int:
        return self.warmup_steps + self.profile_steps + self.timing_steps

    def first_prediction_due(self, steps_seen: int, *, device_timed: bool, clean_steps: int) -> bool:
        """Whether the first prediction is due after ``steps_seen`` steps, ``clean_steps`` of them measured."""
        if steps_seen < self.first_prediction_step:
            return False
        # device intervals arrive a few steps late: wait for as many as a short run's timing window
        return not device_timed or clean_steps >= MIN_TIMING_STEPS
