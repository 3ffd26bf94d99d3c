"""What keeps PreNeT's own cost small (issue 39), driven by fake clocks and counters: phases timed on one step in
eight after the first prediction (still feeding the estimators), page faults read on those steps only,
refinements within their share of the run, and a report that did not change is not written again."""
from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from integrations.loop import Tracker
from prenet_callbacks import report as report_module
from prenet_callbacks.measure.heap_faults import READ_SHARE, HeapWatch
from prenet_callbacks.measure.phase_sampling import EVERY, MAX_EVERY, MIN_SAMPLES, PERIOD_S, PhaseSampler
from prenet_callbacks.forecast.plan import RunPlan
from prenet_callbacks.report import Report
from prenet_callbacks.session.machine import PredictionSession, SessionConfig
from prenet_callbacks.session.predictions import REFINEMENT_SHARE
from tests.test_session import FakeClock

FORWARD_S, BACKWARD_S, OPTIMIZER_S, DATA_S = 0.04, 0.03, 0.01, 0.02
BATCH_S = FORWARD_S + BACKWARD_S + OPTIMIZER_S + DATA_S


def start(config: SessionConfig | None = None, total: int = 400) -> tuple[PredictionSession, FakeClock]:
    clock = FakeClock()
    session = PredictionSession(config or SessionConfig(warmup_steps=2, profile_steps=2, timing_steps=5,
                                                        metrics_every_n_steps=10, refine_every_n_steps=10, profile_layers=False), clock=clock)
    session.fit_start({"device": "cpu"})
    session.set_plan(RunPlan(total_batches=total, batches_per_epoch=total, max_epochs=1))
    return session, clock


def train_step(session: PredictionSession, clock: FakeClock, *, follow_marks: bool) -> bool:
    """One optimizer step whose phases have fixed costs; ``follow_marks``: skip the phase events between
    samples as the integrations do (else call them all, as a framework that calls every hook). Returns
    whether the step's phases were marked."""
    marked = session.phase_marks
    call = marked or not follow_marks
    clock.advance(DATA_S)
    if call:
        session.batch_start()
    clock.advance(FORWARD_S)
    if call:
        session.before_backward()
    clock.advance(BACKWARD_S)
    if call:
        session.after_backward()
        session.before_optimizer_step()
    clock.advance(OPTIMIZER_S)
    session.batch_end(stepped=True)
    return marked


def test_the_sampler_marks_every_step_then_one_in_every():
    sampler = PhaseSampler(every=4)
    assert all(sampler.marks(step) for step in range(10))
    sampler.start_when(False)
    assert sampler.marks(3)
    sampler.start_when(True)
    assert [step for step in range(12) if sampler.marks(step)] == [0, 4, 8]
    sampler.start_when(False)          # it never stops once started
    assert not sampler.marks(5)
    with pytest.raises(ValueError, match="every=0"):
        PhaseSampler(every=0)


@pytest.mark.parametrize("step_s, every", [(0.1, 4), (PERIOD_S / 4, 4), (PERIOD_S / 20, 20), (PERIOD_S / 19.5, 20),
                                           (1e-5, MAX_EVERY), (None, 4), (0.0, 4)])
def test_on_short_steps_marked_steps_come_at_most_once_per_period(step_s, every):
    sampler = PhaseSampler(every=4)
    sampler.start_when(False, step_s=1e-5)   # not started: nothing set yet
    assert sampler.every == 4
    sampler.start_when(True, step_s=step_s)
    assert sampler.every == every
    assert [step for step in range(3 * every) if sampler.marks(step)] == [0, every, 2 * every]
    sampler.start_when(True, step_s=1e-5)    # set once, when sampling starts
    assert sampler.every == every
    always = PhaseSampler(every=1, period_s=None)
    always.start_when(True, step_s=1e-5)
    assert all(always.marks(step) for step in range(10))


@pytest.mark.parametrize("follow_marks", [True, False])
def test_after_the_first_prediction_phases_are_sampled_and_still_feed_the_estimators(follow_marks):
    session, clock = start()
    m = session.measurements
    marked = [train_step(session, clock, follow_marks=follow_marks) for _ in range(300)]
    assert session.predictions.first_made and session.phase_sampler.sampling
    # every step is marked until the first prediction is made and both estimators hold MIN_SAMPLES samples
    first_unmarked = marked.index(False)
    assert all(marked[:first_unmarked])
    assert m.data_per_batch.count >= MIN_SAMPLES and m.forward_per_batch.count >= MIN_SAMPLES
    # then one step in EVERY, whatever the integration calls on the others
    assert marked[first_unmarked:] == [step % EVERY == 0 for step in range(first_unmarked, 300)]
    sampled = sum(marked[2:])                                 # timed from the end of the two warm-up steps
    assert m.forward_per_batch.count == sampled == m.data_per_batch.count < 300 // 4
    assert m.forward_per_batch.mean == pytest.approx(FORWARD_S) and m.data_per_batch.mean == pytest.approx(DATA_S)
    # what the ETA rests on is still timed on every batch
    assert m.batch.count == 300 - 2 and m.batch.mean == pytest.approx(BATCH_S)


def test_a_sampled_run_still_predicts_a_constant_run_exactly():
    session, clock = start()
    for _ in range(400):
        train_step(session, clock, follow_marks=True)
    session.fit_end()
    last = session.report.predictions[-1]
    assert last["predicted_total_s"] == pytest.approx(clock.t, rel=1e-6)
    assert session.report.first_prediction["predicted_total_s"] == pytest.approx(clock.t, rel=1e-6)


def test_refinements_keep_within_their_share_of_the_run_and_metrics_keep_their_rhythm():
    session, clock = start(total=2000)
    logged: list[tuple[int, dict[str, float]]] = []
    session.outputs.logger_sinks.append(lambda metrics, step: logged.append((step, metrics)))
    cost = 0.0105   # each refinement takes 10.5 ms of the run (the first prediction is not a refinement)
    add = session.predictions.add

    def costly_add(*args, **kwargs):
        if session.predictions.first_made:
            clock.advance(cost)
        return add(*args, **kwargs)

    session.predictions.add = costly_add
    for _ in range(2000):
        train_step(session, clock, follow_marks=True)
    entries = session.report.predictions
    first_step = entries[0]["at_step"]
    # metrics: at every 10th step from the first prediction on (metrics_every_n_steps), refinement or not
    assert [step for step, _ in logged] == [s for s in range(first_step, 2001) if s % 10 == 0]
    # refinements: each waits until the previous one's cost is within REFINEMENT_SHARE of the time since it
    refinements = entries[1:]
    assert 2 <= len(refinements) < len(logged) // 2
    ends = [r["elapsed_s"] for r in refinements]
    for previous, current in zip(ends, ends[1:]):
        # a refinement's elapsed_s is read inside it, after its cost: the previous ended `cost` after its own
        assert cost <= REFINEMENT_SHARE * (current - cost - previous) + 1e-9
        assert cost > REFINEMENT_SHARE * (current - cost - previous - 10 * BATCH_S)   # not later than needed
    # between refinements the latest prediction's ETA counts down
    by_step = dict(logged)
    refined_steps = {r["at_step"] for r in refinements}
    between = [step for step, _ in logged if step not in refined_steps and step > first_step]
    latest = {r["at_step"]: r for r in entries}
    step = between[0]
    source = latest[max(s for s in latest if s < step)]
    assert by_step[step]["prenet/predicted_total_s"] == pytest.approx(source["predicted_total_s"], abs=1e-3)
    assert by_step[step]["prenet/eta_s"] < source["eta_s"]


def test_a_free_refinement_comes_at_every_logging_step():
    session, clock = start()
    for _ in range(200):
        train_step(session, clock, follow_marks=True)
    steps = [p["at_step"] for p in session.report.predictions]
    assert steps == list(range(steps[0], 201, 10))


def test_after_the_first_prediction_page_faults_are_read_within_their_budget():
    session, clock = start()
    read_s = 0.002                      # each read of the count takes 2 ms of the run
    reads = []

    def faults() -> int:
        reads.append(session.done_batches)
        clock.advance(read_s)
        return 40 * session.done_batches   # every batch faults 40 pages

    session.heap_watch = HeapWatch(faults, lambda: 1e-6, clock=clock)
    for _ in range(1000):
        train_step(session, clock, follow_marks=True)
    first = session.report.first_prediction["at_step"]
    early = [b for b in reads if b < first]
    assert early == list(range(len(early))) and len(early) >= first - 1   # every batch until the first prediction
    later = [b for b in reads if b > first + 1]
    gaps = [b - a for a, b in zip(later, later[1:])]
    # 2 ms within READ_SHARE of the run: 2 ms / READ_SHARE between reads, steps of 0.1 s (plus the reads' own time)
    steps_between = 0.002 / READ_SHARE / BATCH_S
    assert gaps and all(steps_between - 1 <= g <= steps_between + 1 for g in gaps)
    assert session.heap_watch.risk().current_faults == pytest.approx(40.0)   # per batch, though read 1 in ~40


def test_a_watch_spreads_a_read_over_the_batches_it_skipped():
    count = [0]
    watch = HeapWatch(lambda: count[0], lambda: 1e-6)
    watch.batch_end(timing=True)
    for faults in (80, 80, 80, 4000):     # three windows of eight batches, then one that held an evaluation
        for _ in range(7):
            watch.skip_batch()
        count[0] += faults
        watch.batch_end(timing=True)
    assert sorted(watch._recent) == [10.0, 10.0, 10.0, 500.0]
    assert watch.risk().current_faults == 10.0


def test_an_unchanged_report_is_not_written_again(tmp_path, monkeypatch):
    writes = []
    real_write = report_module.write_atomic
    monkeypatch.setattr(report_module, "write_atomic", lambda path, text, what="file": (writes.append(text),
                                                                                        real_write(path, text, what=what)))
    report = Report(current={"device": "cpu"})
    path = tmp_path / "r.json"
    first = report.save_if_changed(path)
    assert report.save_if_changed(path, first) == first and len(writes) == 1
    report.limitations.append("a new note")
    second = report.save_if_changed(path, first)
    assert second != first and len(writes) == 2
    saved = json.loads(path.read_text())
    assert saved["limitations"] == ["a new note"] and saved["updated"] == report.updated
    assert Report.load(path).to_dict() == report.to_dict()


def test_the_session_skips_a_report_that_did_not_change(tmp_path, monkeypatch):
    writes = []
    real_write = report_module.write_atomic
    monkeypatch.setattr(report_module, "write_atomic", lambda path, text, what="file": (writes.append(path),
                                                                                        real_write(path, text, what=what)))
    session, clock = start(SessionConfig(warmup_steps=2, profile_steps=2, timing_steps=5, metrics_every_n_steps=10, refine_every_n_steps=10,
                                         profile_layers=False, report_path=tmp_path / "r.json", html=False))
    for _ in range(20):
        train_step(session, clock, follow_marks=True)
    assert len(writes) == 1                    # the first prediction's (a refinement came within the interval)
    clock.advance(60.0)
    session.epoch_end()                        # the interval has passed: the refinement is written
    assert len(writes) == 2
    clock.advance(60.0)
    session.epoch_end()                        # the interval has passed again, nothing changed: not written
    assert len(writes) == 2
    session.report.limitations.append("changed")
    clock.advance(60.0)
    session.epoch_end()
    assert len(writes) == 3


def test_a_tracker_takes_its_hooks_off_between_samples_and_notes_the_first_evaluation(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    tracker = Tracker(total_steps=200, model=model, optimizer=optimizer, eval_every=100, warmup_steps=1,
                      profile_steps=1, timing_steps=3, print_report=False, targets=[], html=False,
                      report_path=tmp_path / "r.json")
    session = tracker.run.session
    hooks_on = []
    for step in range(1, 201):
        hooks_on.append(bool(model._forward_pre_hooks) and bool(model._forward_hooks))
        assert hooks_on[-1] == session.phase_marks
        # the optimizer's hook marks the window's split: not needed once phases are sampled
        assert bool(optimizer._optimizer_step_pre_hooks) == (session.phase_marks and not session.phase_sampler.sampling)
        model(torch.randn(4, 8)).pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        tracker.step()
        if step == 100:                       # step index 100 is not a sampled one: its hooks are off
            assert not session.phase_sampler.marks(100) and not model._forward_pre_hooks
            with tracker.validation(), torch.no_grad():
                model(torch.randn(6, 8))
            assert not model._forward_pre_hooks   # on for the evaluation's batch size, off again
    tracker.close()
    # steps of well under a millisecond: one marked step per PERIOD_S would be one in hundreds, so one in MAX_EVERY
    assert session.phase_sampler.sampling and session.phase_sampler.every == MAX_EVERY
    assert 1 <= sum(hooks_on[50:]) <= 150 // MAX_EVERY + 1
    assert session.measurements.val_batch_size == 6
    assert not model._forward_pre_hooks and not model._forward_hooks and not optimizer._optimizer_step_pre_hooks
    assert session.measurements.forward_per_batch.count < 100 and session.measurements.batch.count > 150


def test_lightning_phase_hooks_do_nothing_between_samples():
    from prenet_callbacks import PreNeTCallback

    callback = PreNeTCallback(print_report=False, targets=[])
    calls = []
    for name in ("batch_start", "before_backward", "after_backward", "before_optimizer_step"):
        setattr(callback.session, name, lambda name=name: calls.append(name))
    for marks in (False, True):
        callback.session.phase_marks = marks
        callback.on_train_batch_start(None, None, torch.zeros(2, 3), 0)
        callback.on_before_backward(None, None, torch.zeros(()))
        callback.on_after_backward(None, None)
        callback.on_before_optimizer_step(None, None, None)
    assert calls == ["batch_start", "before_backward", "after_backward", "before_optimizer_step"]
