"""Quiet steps of the `Tracker`, `PreNeTCallback` and `PreNeTTrainerCallback` (`prenet_callbacks.session.quiet_steps`):
kept between the session's events and replayed, the session records exactly what it records step by step."""
from __future__ import annotations

import contextlib
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


def run(tmp_path, *, quiet: bool, steps: int = 263, blocks: bool = False,
        profile_layers: bool = True) -> tuple[Tracker, list[int]]:
    """A loop with evaluations and a save, its steps of uneven length (a pattern, no randomness); ``blocks``: each
    step inside ``with tracker.train_step():``, which calls ``step()`` at its end."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    tracker = Tracker(steps, model=model, optimizer=optimizer, eval_every=90, checkpoint_every=150,
                      report_path=tmp_path / f"r{int(quiet)}.json", profile_layers=profile_layers, **FAST)
    clock = StepClock()
    session = tracker.run.session
    session.now = clock
    session.fit_start_time = clock.now    # the run began on this clock too
    tracker._quiet.enabled = quiet
    kept = []
    for step in range(1, steps + 1):
        kept.append(int(bool(tracker._quiet.left)))
        with tracker.train_step() if blocks else contextlib.nullcontext():
            loss = model(torch.randn(4, 8)).pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            clock.now += 0.010 + 0.001 * (step % 7) + (0.02 if step % 53 == 0 else 0.0)
        if not blocks:
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


@pytest.mark.parametrize("blocks,profile_layers", [(False, True), (True, True), (False, False)])
def test_kept_steps_replay_to_the_same_measurements(tmp_path, blocks, profile_layers):
    # profile_layers=False: no profiler, yet the window ends after its steps and the quiet steps begin
    full, kept_full = run(tmp_path, quiet=False, blocks=blocks, profile_layers=profile_layers)
    quiet, kept = run(tmp_path, quiet=True, blocks=blocks, profile_layers=profile_layers)
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
    quiet = QuietSteps(lambda: clock[0], lambda: compiled[0], lambda at, step, mark: replayed.append((at, step)),
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


class DeviceOnClock:
    """A GPU's clock for the test: a mark is the session clock's time when it is taken, and reached at once. A mark
    taken at a replay rather than at its batch's end would carry the replay's time."""

    kind, device = "cuda", "cuda:0"

    def __init__(self, clock: StepClock) -> None:
        self.clock = clock

    def mark(self) -> float:
        return self.clock()

    def elapsed_s(self, start: float, end: float) -> float:
        return end - start

    def wait(self, mark: float) -> None:
        pass

    def reset_peak_memory(self) -> None:
        pass

    def peak_memory_bytes(self) -> int:
        return 0


def device_timed_run(*, quiet: bool, steps: int = 300):
    """A session timing its steps on a device's marks, driven as an integration drives it (a kept step's events
    skipped), its steps of uneven length and a validation every 100 steps, on one clock."""
    from prenet_callbacks.session.config import SessionConfig
    from prenet_callbacks.session.machine import PredictionSession
    from tests.test_session import FakeProfiler, plan

    clock = StepClock()
    session = PredictionSession(SessionConfig(warmup_steps=1, profile_steps=2, timing_steps=3,
                                              refine_every_n_steps=40, metrics_every_n_steps=None), clock=clock)
    session.use_clock(DeviceOnClock(clock))
    session.fit_start({"device": "cuda"})
    session.set_plan(plan(total_batches=steps, batches_per_epoch=steps, max_epochs=1, val_check_batch=100,
                          checkpoints=[]))
    session.attach_profiler(FakeProfiler())
    session.quiet.enabled = quiet
    replayed = []
    replay_one = session.quiet.replay_one
    session.quiet.replay_one = lambda at, step, mark: (replayed.append(mark), replay_one(at, step, mark))
    session.train_epoch_start()
    for step in range(1, steps + 1):
        marked = session.phase_marks
        if not session.quiet.left:
            session.batch_start()
        clock.now += 0.004 + 0.001 * (step % 5)
        if marked and not session.quiet.left:
            session.before_backward()
            clock.now += 0.006
            session.after_backward()
            session.before_optimizer_step()
        else:
            clock.now += 0.006
        if not (session.quiet.left and session.quiet.keep(lambda: step)):
            session.batch_end(stepped=True, global_step=step)
        if step % 100 == 0:
            session.validation_start(sanity=False)
            clock.now += 0.05
            session.steps.validation_end(sanity=False)
    session.fit_end()
    return session, replayed


def test_on_a_device_timeline_kept_steps_hand_their_batch_end_marks_to_the_step_timer():
    full, none_replayed = device_timed_run(quiet=False)
    quiet, replayed = device_timed_run(quiet=True)
    assert not none_replayed and len(replayed) > 150
    assert all(isinstance(mark, float) for mark in replayed)          # taken at the batch's end, handed on
    assert quiet.steps.device_timed and quiet.measurements.batch.count > 150
    assert (quiet.measurements.batch.recent, quiet.measurements.batch.count, quiet.measurements.batch.total) == \
        (full.measurements.batch.recent, full.measurements.batch.count, full.measurements.batch.total)
    assert [p["at_step"] for p in quiet.report.predictions] == [p["at_step"] for p in full.report.predictions]
    assert [p["predicted_total_s"] for p in quiet.report.predictions] == \
        [p["predicted_total_s"] for p in full.report.predictions]


@pytest.mark.parametrize("with_model", [True, False])
def test_only_a_tracker_with_a_model_keeps_steps(tmp_path, with_model):
    tracker = Tracker(10, model=nn.Linear(4, 1) if with_model else None, report_path=tmp_path / "r.json", **FAST)
    assert tracker._quiet.enabled is with_model
    tracker.close()
    assert not tracker._quiet.enabled


def lightning_run(tmp_path, *, quiet: bool, device_timed: bool = False) -> "object":
    """A Lightning fit of 2 epochs x 130 batches, validation every 90 batches, Lightning logging every 20 steps;
    ``device_timed``: its steps timed on a device's marks (`DeviceOnClock`), as on a GPU."""
    import lightning.pytorch as pl

    from prenet_callbacks import PreNeTCallback
    from tests.lightning_helpers import TinyModule, loaders

    clock = StepClock()

    class Timed(TinyModule):
        def training_step(self, batch, batch_idx):
            clock.now += 0.010 + 0.001 * (batch_idx % 7) + (0.02 if batch_idx % 53 == 0 else 0.0)
            return super().training_step(batch, batch_idx)

        def validation_step(self, batch, batch_idx):
            clock.now += 0.01
            return super().validation_step(batch, batch_idx)

    class OnClock(PreNeTCallback):
        def on_fit_start(self, trainer, pl_module):
            if device_timed:   # the session's device clock, in place of the CPU's `clock_for` gives
                session = self.session
                session.use_clock = lambda _cpu: type(session).use_clock(session, DeviceOnClock(clock))
            super().on_fit_start(trainer, pl_module)
            self.session.now = clock
            self.session.fit_start_time = clock.now

        def on_train_start(self, trainer, pl_module):
            super().on_train_start(trainer, pl_module)
            self.session.quiet.enabled = quiet
            replay_one, self.replayed = self.session.quiet.replay_one, []
            self.session.quiet.replay_one = lambda at, step, mark: (self.replayed.append(step),
                                                                    replay_one(at, step, mark))

    torch.manual_seed(0)
    callback = OnClock(report_path=tmp_path / f"l{int(quiet)}.json", **{k: v for k, v in FAST.items()
                                                                        if k != "metrics_every_n_steps"})
    trainer = pl.Trainer(max_epochs=2, callbacks=[callback], logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, val_check_interval=90,
                         limit_val_batches=3, log_every_n_steps=20, num_sanity_val_steps=0, accelerator="cpu")
    train, val = loaders(train_batches=130)
    trainer.fit(Timed(), train, val)
    return callback


# device-timed on this CPU torch, the module profiler cannot record CUDA kernels and steps aside (a warning): the fit
# goes on from step timing, without a profiler
@pytest.mark.filterwarnings("ignore:PreNeT could not profile layers")
@pytest.mark.parametrize("device_timed", [False, True])
def test_a_lightning_fit_replays_its_quiet_batches_to_the_same_measurements(tmp_path, device_timed):
    full = lightning_run(tmp_path, quiet=False, device_timed=device_timed)
    quiet = lightning_run(tmp_path, quiet=True, device_timed=device_timed)
    assert full.session.steps.device_timed is device_timed and quiet.session.steps.device_timed is device_timed
    assert_replayed_alike(full, quiet, steps=260, kept_at_least=120)


def assert_replayed_alike(full, quiet, *, steps: int, kept_at_least: int) -> None:
    """A callback's run both ways on one clock: most steps after the first prediction kept and replayed, and the same
    batch estimator, validation, predictions and actual block (PreNeT's own time aside)."""
    assert not full.replayed and len(quiet.replayed) > kept_at_least
    for callback in (full, quiet):
        assert callback.session.done_steps == steps
    m_full, m_quiet = full.session.measurements, quiet.session.measurements
    assert (m_quiet.batch.recent, m_quiet.batch.count, m_quiet.batch.total) == \
        (m_full.batch.recent, m_full.batch.count, m_full.batch.total)
    assert m_quiet.validation_run.recent == m_full.validation_run.recent
    assert [p["at_step"] for p in quiet.report.predictions] == [p["at_step"] for p in full.report.predictions]
    assert quiet.report.actual == {**full.report.actual, "own_time": quiet.report.actual["own_time"]}
    assert not quiet.session.quiet.ends and not quiet.session.quiet.enabled


def test_a_failure_on_the_quiet_path_falls_back_to_the_full_one(tmp_path):
    """Whatever breaks while a step keeps its time, the step goes through the guarded full path: nothing reaches the
    loop, and no step is counted twice."""
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    tracker = Tracker(200, model=model, optimizer=optimizer, report_path=tmp_path / "r.json", **FAST)
    broken = False
    for _ in range(200):
        model(torch.randn(4, 8)).pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        if tracker._quiet.left and not broken:
            tracker._quiet.clock, broken = (lambda: 1 / 0), True
        tracker.step()
    assert broken
    report = tracker.close()
    assert report.actual["steps"] == 200 and tracker.run.session.done_steps == 200


def hf_run(tmp_path, *, quiet: bool, break_clock: bool = False) -> "object":
    """A Trainer run of 3 epochs x 100 steps, evaluation every 70 steps, logging every 25, a save each epoch
    (``break_clock``: the quiet path's clock raises from the first quiet step on)."""
    pytest.importorskip("transformers", reason="the transformers extra is not installed")
    from prenet_callbacks import PreNeTTrainerCallback
    from tests.hf_helpers import Samples, TinyRegressor, trainer

    clock = StepClock()

    class Timed(TinyRegressor):
        calls = 0

        def forward(self, x, labels=None):
            if self.training:
                Timed.calls += 1
                clock.now += 0.010 + 0.001 * (Timed.calls % 7) + (0.02 if Timed.calls % 53 == 0 else 0.0)
            else:
                clock.now += 0.004
            return super().forward(x, labels)

    class OnClock(PreNeTTrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            super().on_train_begin(args, state, control, **kwargs)
            self.session.now = clock
            self.session.fit_start_time = clock.now
            self.session.quiet.enabled = self.session.quiet.enabled and quiet
            replay_one, self.replayed = self.session.quiet.replay_one, []
            self.session.quiet.replay_one = lambda at, step, mark: (self.replayed.append(step),
                                                                    replay_one(at, step, mark))

        def on_step_end(self, args, state, control, **kwargs):
            if break_clock and self.session.quiet.left:
                self.broken = self.session.quiet.clock = lambda: 1 / 0
            super().on_step_end(args, state, control, **kwargs)

    callback = OnClock(report_path=tmp_path / f"h{int(quiet)}.json", **{k: v for k, v in FAST.items()
                                                                         if k not in ("metrics_every_n_steps", "html")})
    trainer(tmp_path / f"out{int(quiet)}", [callback], train=Samples(400), eval_dataset=Samples(12), model=Timed(),
            num_train_epochs=3, eval_strategy="steps", eval_steps=70, logging_steps=25, save_strategy="epoch").train()
    return callback


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_a_trainer_run_replays_its_quiet_steps_to_the_same_measurements(tmp_path):
    assert_replayed_alike(hf_run(tmp_path, quiet=False), hf_run(tmp_path, quiet=True), steps=300, kept_at_least=150)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_a_trainer_with_accumulation_takes_the_full_path(tmp_path):
    pytest.importorskip("transformers", reason="the transformers extra is not installed")
    from prenet_callbacks import PreNeTTrainerCallback
    from tests.hf_helpers import trainer

    seen = []

    class Watch(PreNeTTrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            seen.append(self.session.quiet.enabled)
            super().on_step_end(args, state, control, **kwargs)

    callback = Watch(report_path=tmp_path / "r.json", **{k: v for k, v in FAST.items() if k != "html"})
    trainer(tmp_path / "out", [callback], gradient_accumulation_steps=2).train()
    assert seen and not any(seen)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_a_failure_on_a_trainer_quiet_step_falls_back_to_the_full_path(tmp_path):
    callback = hf_run(tmp_path, quiet=True, break_clock=True)
    assert callback.broken and not callback.replayed          # every step after the break went the full way
    assert callback.session.done_steps == 300 and callback.report.actual["steps"] == 300
    assert not callback.session.guard.disabled
