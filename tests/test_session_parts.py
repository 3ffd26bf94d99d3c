"""The session's parts on their own: a profiler that fails to stop, and the config without the session."""
from __future__ import annotations

import subprocess
import sys
import warnings

from test_session import FakeClock, _train, plan

from prenet_callbacks.measure.profiling.table import LayerTable
from prenet_callbacks.session.machine import PredictionSession, PreNeTWarning, SessionConfig


class StopFails:
    """A profiler whose `stop()` raises (reading its trace failed, say)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.limitations: list[str] = []

    def start(self) -> None: self.calls.append("start")
    def suspend(self) -> None: self.calls.append("suspend")
    def resume(self) -> None: self.calls.append("resume")
    def begin_phase(self, phase: str) -> None: self.calls.append(phase)
    def end_step(self) -> None: self.calls.append("end_step")

    def stop(self) -> LayerTable:
        self.calls.append("stop")
        raise RuntimeError("trace unreadable")


def test_a_profiler_that_fails_to_stop_is_dropped_with_one_warning_and_predictions_go_on():
    clock = FakeClock()
    session = PredictionSession(SessionConfig(warmup_steps=1, profile_steps=2, timing_steps=3, targets=[]), clock=clock)
    profiler = StopFails()
    session.fit_start({"device": "cpu"})
    session.set_plan(plan(checkpoints=[]))
    session.attach_profiler(profiler)
    session.train_epoch_start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _train(session, clock, steps=12, forward_s=lambda profiled: 0.2)
    ours = [w for w in caught if issubclass(w.category, PreNeTWarning)]
    assert len(ours) == 1 and "could not profile layers" in str(ours[0].message)
    assert not session.guard.disabled and session.window.profiler is None and not session.window.active
    assert profiler.calls.count("stop") == 1 and profiler.calls.count("start") == 1
    assert any("per-module profile unavailable" in x and "trace unreadable" in x for x in session.report.limitations)
    measured = session.report.measured
    assert "layers" not in measured and measured["profiled_steps"] == 2
    assert session.report.first_prediction is not None


def test_the_config_module_does_not_import_the_session():
    code = ("import sys, prenet_callbacks.session.arguments; "
            "assert 'prenet_callbacks.session.machine' not in sys.modules, 'config imports the session'")
    subprocess.run([sys.executable, "-c", code], check=True)
