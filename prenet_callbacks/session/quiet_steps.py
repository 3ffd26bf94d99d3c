"""Batch ends that only need their time read: an integration's steps between the session's events, kept and replayed.

After the first prediction, most optimizer steps of a run ask nothing of the session but the time their batch
ended: no phase is marked (`measure.phase_sampling`), no refinement, metrics or window is due. Yet a step's full
path (`PredictionSession.batch_end`, its guard and own-time account, the integration's checks) costs ~50 us right
after a real forward and backward, when the CPU's caches are cold for PreNeT's code: ~0.5% of a 10-ms CPU step.
Reading the clock and keeping the time costs ~5 us.

So after each full batch end the session says how many of the coming steps can only be such steps
(`quiet_steps_ahead`), and the integration keeps those steps' end times (`QuietSteps.keep`). The session replays
them through its own `batch_end`, each with its own time, before anything else reaches it (every session event
passes through `Containment.call`, which calls `QuietSteps.replay` first): what the session records is what it
would have recorded step by step, only later. Any other event (a validation, a checkpoint, an epoch's start, a
failure, the end) ends the quiet stretch: the next step takes the full path. A host-timed run's only difference:
the page-fault count, where one is due inside a stretch, is read at the replay instead of at that batch end (a count
of the same faults, read a few steps later).

A `Tracker` with a model and no ``accelerator``, `PreNeTCallback`, and `PreNeTTrainerCallback` and `attach()`
without gradient accumulation (or on a DeepSpeed pipeline engine) use it (`enabled`). On a GPU, where clean steps are
timed between marks on the device's timeline, a quiet step also takes its batch-end mark (a CUDA event on the current
stream, as the full path would at that moment) and the replay hands it to the step timer: the same device intervals.
The `Trainer` calls three events a step (its start, its optimizer step, its end): on a quiet step the first two return
at once and the end keeps its time. A step in which torch.compile compiled takes the full path.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional


class QuietSteps:
    """End times of quiet steps not yet seen by the session.

    Args:
        clock: the session's clock (the times the full path would have read).
        compiled: torch.compile's seconds so far (`CompileClock.seconds`): a step that compiled takes the full
            path, which takes its compile time off its interval.
        replay_one: the session's full batch end for one kept step, ``(time, global_step, device mark)``.
        add_own: adds seconds to PreNeT's own time (`OwnTime.add`).
    Attributes:
        device_mark: where a fit's steps are timed on the device's timeline (a GPU), its clock's ``mark`` (a CUDA
            event, taken at the batch end as the full path would); None on a host-timed fit (the session sets it).
    """

    __slots__ = ("clock", "compiled", "replay_one", "add_own", "device_mark", "enabled", "left", "until",
                 "compiled_s", "ends", "own_s")

    def __init__(self, clock: Callable[[], float], compiled: Callable[[], float],
                 replay_one: Callable[[float, int, Any], None], add_own: Callable[[float, int], None]) -> None:
        self.clock = clock
        self.compiled = compiled
        self.replay_one = replay_one
        self.add_own = add_own
        self.device_mark: Optional[Callable[[], Any]] = None
        self.enabled = False                    # set by the integration that calls `take`; the guard's clean-up clears it
        self.left = 0                           # quiet steps still allowed before the next full one
        self.until = math.inf                   # and the time they must end before (a refinement's)
        self.compiled_s = 0.0                   # compile seconds when the stretch began
        self.ends: list[tuple[float, int, Any]] = []  # (end time, global step, device mark) of the kept steps
        self.own_s = 0.0

    def allow(self, steps: int, until: float = math.inf) -> None:
        """The next ``steps`` batch ends may be quiet if they end before ``until`` (the session's full batch end
        says so)."""
        self.left, self.until = steps, until
        self.compiled_s = self.compiled()

    def take(self, global_step: int) -> bool:
        """A step ended now: keep its time and True, or False (nothing kept, the stretch over) when it is past
        ``until`` or compiled. The caller checked ``left``."""
        start = self.clock()
        if start >= self.until or self.compiled() != self.compiled_s:
            self.left = 0
            return False
        self.left -= 1
        mark = None if self.device_mark is None else self.device_mark()
        self.own_s += self.clock() - start
        self.ends.append((start, global_step, mark))   # last: a step is kept only once all of it went through
        return True

    def keep(self, step_if_quiet: Callable[[], Optional[int]]) -> bool:
        """An integration's quiet path for a step that ended now: ``step_if_quiet()`` is its global step, or None when
        the step is not quiet (the integration's own conditions). True when its time is kept. Nothing raises out of
        here: whatever fails ends the stretch and returns False, and the integration's guarded full path takes the
        step (never the user's problem, never counted twice: `take` keeps a step last). The caller checked
        ``left``."""
        try:
            step = step_if_quiet()
            return step is not None and self.take(step)
        except Exception:  # noqa: BLE001 - the full path takes the step
            self.stop()
            return False

    def replay(self) -> None:
        """Hand the kept steps to the session in order, and their own time to its account."""
        ends, self.ends = self.ends, []
        own, self.own_s = self.own_s, 0.0
        self.add_own(own, len(ends))
        for at, step, mark in ends:
            self.replay_one(at, step, mark)

    def stop(self) -> None:
        """No more quiet steps until the session allows them again (the next full batch end)."""
        self.left = 0


def quiet_steps_ahead(*, steps_seen: int, done_steps: int, every: int, refine_from_step: int,
                      metrics_every: int | None) -> int:
    """How many of the coming optimizer steps' batch ends can be quiet, phases sampled one step in ``every``:

    - a batch end after which the next step is marked must register the phase hooks (steps ``steps_seen``,
      ``steps_seen + 1``, ... are the next ones; step ``j`` is marked when ``j % every == 0``);
    - one at which the ``prenet/*`` metrics are due (every ``metrics_every`` optimizer steps) does more than time
      its interval, and so does the first at which a refinement may come by its step count (``refine_from_step``;
      once there, its cost decides when it comes: the session gives the stretch a time limit instead).
    """
    marked = (steps_seen // every + 1) * every     # the next marked step index after the one about to run
    ahead = marked - 1 - steps_seen
    if refine_from_step > done_steps + 1:
        ahead = min(ahead, refine_from_step - 1 - done_steps)
    if metrics_every:
        ahead = min(ahead, (done_steps // metrics_every + 1) * metrics_every - 1 - done_steps)
    return max(0, ahead)
