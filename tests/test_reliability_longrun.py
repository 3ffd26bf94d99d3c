"""Issue 7: over a very long run (100k optimizer steps) the callback's memory stays bounded.

The session is driven directly with a fake clock (as in tests/test_session.py), with validation,
checkpoints, epoch boundaries, refinements every 50 steps and the report rewritten on its timer.
History is summarised (thinned), estimators keep a fixed window, the report file stays small,
and traced Python allocations do not grow between 20k and 100k steps.
"""
from __future__ import annotations

import gc
import json
import sys
import tracemalloc

import pytest

from prenet_callbacks.estimators import RobustDuration
from prenet_callbacks.plan import CheckpointRule, RunPlan
from prenet_callbacks.report import MAX_HISTORY
from prenet_callbacks.session import PredictionSession, SessionConfig

STEPS = 100_000
BATCHES_PER_EPOCH = 5_000
VAL_EVERY = 2_500


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class FakeProfiler:
    """The profiler interface the session drives; returns a small table at stop()."""

    limitations = ["fake profiler"]

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str):
        if name in ("start", "suspend", "resume", "begin_phase", "end_step"):
            return lambda *args: self.calls.append(name)
        raise AttributeError(name)

    def stop(self) -> dict:
        self.calls.append("stop")
        return {"layers": [{"name": "fc", "forward_s": 0.01}]}


def _deep_size(obj, seen=None) -> int:
    """Approximate bytes of a nested structure of dicts, lists, tuples, deques, strings and numbers."""
    seen = seen if seen is not None else set()
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset)) or type(obj).__name__ == "deque":
        size += sum(_deep_size(x, seen) for x in obj)
    elif isinstance(obj, RobustDuration):
        size += _deep_size(obj.__dict__, seen)
    return size


def _session_size(session: PredictionSession) -> int:
    parts = [session.report.to_dict(), session.measurements.state_dict(), session.window_phases,
             session.sanity_batch_ends, session._cleanups, session.logger_sinks]
    return sum(_deep_size(p) for p in parts)


class LongRun:
    """A 100k-step fit with 20 epochs, validation every 2500 batches and a save each validation."""

    def __init__(self, report_path=None) -> None:
        self.clock = FakeClock()
        self.plan = RunPlan(total_batches=STEPS, batches_per_epoch=BATCHES_PER_EPOCH, max_epochs=STEPS // BATCHES_PER_EPOCH,
                            val_batches=10, val_check_batch=VAL_EVERY,
                            checkpoints=[CheckpointRule("validation_end")])
        config = SessionConfig(warmup_steps=2, profile_steps=3, timing_steps=5, log_every_n_steps=50,
                               report_path=report_path, print_report=True, profile_layers=True)
        self.session = PredictionSession(config, clock=self.clock)
        self.logged = 0
        self.printed = 0
        self.session.logger_sinks.append(self._log)
        self.session.printer = self._print
        self.profiler = FakeProfiler()
        self.session.fit_start({"device": "cpu"})
        self.clock.t += 2.0
        self.session.set_plan(self.plan)
        self.session.attach_profiler(self.profiler)
        self.batch = 0

    def _log(self, metrics, step) -> None:
        self.logged += 1

    def _print(self, report) -> None:
        self.printed += 1

    def run_to(self, batches: int) -> None:
        s, clock = self.session, self.clock
        while self.batch < batches:
            g = self.batch + 1
            if (g - 1) % BATCHES_PER_EPOCH == 0:
                clock.t += 0.3
                s.train_epoch_start()
            s.batch_start()
            clock.t += 0.004 + 0.002 * ((g * 7919) % 13) / 13  # a little jitter
            s.before_backward()
            clock.t += 0.004
            s.after_backward()
            s.before_optimizer_step()
            clock.t += 0.002
            s.batch_end(stepped=True, global_step=g)
            if g % VAL_EVERY == 0:
                s.validation_start()
                clock.t += 1.5
                s.validation_end()
                s.checkpoint_start()
                clock.t += 0.4
                s.checkpoint_end()
            if g % BATCHES_PER_EPOCH == 0:
                s.epoch_end()
            self.batch = g

    def finish(self) -> float:
        self.clock.t += 0.3
        self.session.fit_end()
        return self.clock.t


@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    """One 100k-step run, measured along the way (shared by the tests below)."""
    path = tmp_path_factory.mktemp("longrun") / "report.json"
    run = LongRun(report_path=path)
    run.run_to(20_000)
    gc.collect()
    size_20k, objects_20k = _session_size(run.session), len(gc.get_objects())
    run.run_to(30_000)
    # tracemalloc slows Python down several times: trace two 10k-step stretches, not the whole run
    tracemalloc.start()
    run.run_to(40_000)
    gc.collect()
    traced_40k = tracemalloc.get_traced_memory()[0]
    history_40k = _deep_size(run.session.report.predictions)
    run.run_to(50_000)
    gc.collect()
    traced_50k, peak = tracemalloc.get_traced_memory()
    history_50k = _deep_size(run.session.report.predictions)
    tracemalloc.stop()
    run.run_to(STEPS)
    gc.collect()
    size_100k, objects_100k = _session_size(run.session), len(gc.get_objects())
    total = run.finish()
    return dict(run=run, path=path, size_20k=size_20k, size_100k=size_100k, traced_40k=traced_40k,
                traced_50k=traced_50k, peak=peak, history_growth=history_50k - history_40k, total=total, objects_20k=objects_20k,
                objects_100k=objects_100k)


def test_the_run_completes_and_stays_healthy(long_run):
    run = long_run["run"]
    session = run.session
    assert not session.disabled, session.failure
    assert session.report.actual["steps"] == STEPS
    assert run.printed == 1  # the table is printed once, after the first prediction
    assert run.profiler.calls.count("start") == 1 and run.profiler.calls.count("stop") == 1
    assert STEPS // 50 - 5 <= run.logged <= STEPS // 50 + 5  # one refinement every 50 steps, each logged


def test_history_is_summarised_not_grown(long_run):
    predictions = long_run["run"].session.report.predictions
    assert len(predictions) <= MAX_HISTORY
    steps = [p["at_step"] for p in predictions]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert steps[0] == 2 + 3 + 5          # the first prediction is kept
    assert steps[-1] >= STEPS - 50        # and the latest
    # the thinned middle still covers the whole run, not only its start or its end
    middle = steps[20:-1]
    assert middle and middle[0] < STEPS * 0.2 and middle[-1] > STEPS * 0.8


def test_estimators_keep_a_fixed_window(long_run):
    m = long_run["run"].session.measurements
    for name, estimator in vars(m).items():
        if isinstance(estimator, RobustDuration):
            assert len(estimator._recent) <= estimator.window, name
    assert m.batch.count > 90_000 and m.validation_run.count >= STEPS // VAL_EVERY - 1


def test_session_state_does_not_grow_with_steps(long_run):
    # The history saw-tooths between ~MAX_HISTORY/2 and MAX_HISTORY entries (about 1 KB each) and
    # the estimators' windows fill up; nothing else may grow.
    assert long_run["size_20k"] < 400_000 and long_run["size_100k"] < 400_000, (long_run["size_20k"],
                                                                                long_run["size_100k"])


def test_traced_allocations_do_not_grow(long_run):
    # anything beyond the (bounded, saw-toothing) prediction history
    growth = long_run["traced_50k"] - long_run["traced_40k"] - long_run["history_growth"]
    assert growth < 32 * 1024, f"{growth / 1024:.0f} KiB retained over 10k steps"
    assert long_run["peak"] < 4 * 1024 * 1024


def test_no_objects_accumulate(long_run):
    growth = long_run["objects_100k"] - long_run["objects_20k"]
    assert growth < 2_000, f"{growth} more live Python objects after 80k more steps"


def test_report_file_stays_small_and_valid(long_run):
    text = long_run["path"].read_text()
    assert len(text) < 200_000
    data = json.loads(text)
    assert data["actual"]["steps"] == STEPS
    last = data["predictions"][-1]
    assert last["predicted_total_s"] == pytest.approx(long_run["total"], rel=0.02)


def test_state_dict_for_checkpoints_is_bounded(long_run):
    state = long_run["run"].session.state_dict()
    assert len(json.dumps(state)) < 200_000
