"""A `Tracker`'s quiet steps (`prenet_callbacks.session.quiet_steps`): kept between the session's events and replayed,
the session records exactly what it records step by step."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from integrations.loop import Tracker
from prenet_callbacks.session.quiet_steps import QuietSteps, quiet_steps_ahead

FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=20, targets=[], print_report=False,
            html=False)


class StepClock:
    """The session's clock: it moves only when the loop says (so both runs read the same times)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(tmp_path, *, quiet: bool, steps: int = 263) -> tuple[Tracker, list[int]]:
    """A loop with evaluations and a save, its steps of uneven length (a pattern, no randomness)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    tracker = Tracker(steps, model=model, optimizer=optimizer, eval_every=90, checkpoint_every=150,
                      report_path=tmp_path / f"r{int(quiet)}.json", **FAST)
    clock = StepClock()
    session = tracker.run.session
    session.now = clock
    session.fit_start_time = clock.now    # the run began on this clock too
    tracker._quiet.enabled = quiet
    kept = []
    for step in range(1, steps + 1):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        clock.now += 0.010 + 0.001 * (step % 7) + (0.02 if step % 53 == 0 else 0.0)
        kept.append(int(bool(tracker._quiet.left)))
        tracker.step()
        if step % 90 == 0:
            with tracker.validation():
                clock.now += 0.05
        if step % 150 == 0:
            with tracker.checkpoint():
                clock.now += 0.2
    return tracker, kept


def state(tracker: Tracker) -> dict:
    session = tracker.run.session
    m = session.measurements
    return {"batch": (m.batch.recent, m.batch.count, m.batch.total),
            "validation": (m.validation_run.recent, m.validation_run.count),
            "counters": (session.done_batches, session.done_steps, session.steps_seen, tracker.steps),
            "predicted_at": [p["at_step"] for p in tracker.report.predictions],
            "phase_marks": session.phase_marks}


def test_kept_steps_replay_to_the_same_measurements(tmp_path):
    full, kept_full = run(tmp_path, quiet=False)
    quiet, kept = run(tmp_path, quiet=True)
    assert sum(kept_full) == 0
    assert sum(kept) > 150                  # most steps after the first prediction were kept, not all
    assert quiet._quiet.ends                # the last steps are kept, not yet seen by the session
    assert state(quiet)["counters"][:3] == (260, 260, 260) and quiet.steps == 263
    quiet.run.session.guard.call(lambda: None)   # any session event replays them first
    assert not quiet._quiet.ends and state(quiet) == state(full)
    full.close()
    quiet.close()
    assert not quiet._quiet.ends and not quiet._quiet.left and not quiet._quiet.enabled
    assert state(quiet) == state(full)
    assert quiet.report.actual == {**full.report.actual, "own_time": quiet.report.actual["own_time"]}
    assert quiet.report.actual["own_time"]["total_s"] > 0


def test_steps_ahead_stop_before_a_marked_step_a_refinement_and_the_metrics():
    # the step about to run has index 17: steps 17..22 may end quietly, 23's end registers the hooks for 24
    assert quiet_steps_ahead(steps_seen=17, done_steps=17, every=8, refine_from_step=1000, metrics_every=None) == 6
    # a refinement may come at optimizer step 20: the batch ends of steps 18 and 19 only
    assert quiet_steps_ahead(steps_seen=17, done_steps=17, every=8, refine_from_step=20, metrics_every=None) == 2
    # already due by its count: the stretch is the phases' (the session adds a time limit)
    assert quiet_steps_ahead(steps_seen=17, done_steps=17, every=8, refine_from_step=10, metrics_every=None) == 6
    # metrics every 20 optimizer steps: 18 and 19 only; a resumed run counts its optimizer steps from its start
    assert quiet_steps_ahead(steps_seen=17, done_steps=17, every=8, refine_from_step=1000, metrics_every=20) == 2
    assert quiet_steps_ahead(steps_seen=7, done_steps=107, every=8, refine_from_step=1000, metrics_every=None) == 0


def test_a_stretch_ends_at_its_time_limit_and_at_a_compilation():
    clock, compiled, replayed, own = [0.0], [0.0], [], []
    quiet = QuietSteps(lambda: clock[0], lambda: compiled[0], lambda at, step: replayed.append((at, step)),
                       lambda seconds, calls: own.append(calls))
    quiet.allow(5, until=3.0)
    clock[0] = 1.0
    assert quiet.take(1) and quiet.left == 4
    clock[0] = 3.0
    assert not quiet.take(2) and quiet.left == 0      # the refinement it waited for may come now: full path
    quiet.allow(5)
    assert quiet.take(2)
    compiled[0] = 1.5                                  # torch.compile compiled inside this step
    assert not quiet.take(3) and quiet.left == 0
    quiet.replay()
    assert replayed == [(1.0, 1), (3.0, 2)] and own == [2] and not quiet.ends
    assert quiet.until == math.inf


@pytest.mark.parametrize("with_model", [True, False])
def test_only_a_tracker_with_a_model_keeps_steps(tmp_path, with_model):
    tracker = Tracker(10, model=nn.Linear(4, 1) if with_model else None, report_path=tmp_path / "r.json", **FAST)
    assert tracker._quiet.enabled is with_model
    tracker.close()
    assert not tracker._quiet.enabled
