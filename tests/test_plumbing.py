"""The adapters' shared plumbing: the guarded hook, exact-restore wrapping, notes once, report naming."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from integrations.plumbing import REPORT_FILENAME, default_report_path, guarded_hook, note_once, wrap_method
from prenet_callbacks.session.machine import PredictionSession, PreNeTWarning, SessionConfig


class Adapter:
    def __init__(self) -> None:
        self.session = PredictionSession(SessionConfig(profile_layers=False))
        self.calls = 0

    @guarded_hook
    def on_event(self, value: int) -> int:
        self.calls += 1
        if value < 0:
            raise ValueError("bad value")
        return value * 2


def test_a_guarded_hook_returns_its_value_and_steps_aside_once_on_an_error():
    adapter = Adapter()
    cleaned: list[int] = []
    adapter.session.add_cleanup(lambda: cleaned.append(1))
    assert adapter.on_event(3) == 6
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert adapter.on_event(-1) is None
        assert adapter.on_event(5) is None  # the session stepped aside: the body no longer runs
    ours = [w for w in caught if issubclass(w.category, PreNeTWarning)]
    assert len(ours) == 1 and "Adapter.on_event" in str(ours[0].message)
    assert adapter.calls == 2 and cleaned == [1] and adapter.session.guard.disabled
    assert Adapter.on_event.__name__ == "on_event"


class Engine:
    def step(self) -> str:
        return "class"


def tagging(original):
    def wrapper(*args, **kwargs):
        return "ours+" + original(*args, **kwargs)

    return wrapper


def test_wrap_method_restores_the_class_method_when_the_instance_had_none():
    engine = Engine()
    restore = wrap_method(engine, "step", tagging)
    assert engine.step() == "ours+class"
    restore()
    assert "step" not in engine.__dict__ and engine.step() == "class"


def test_wrap_method_puts_back_the_instances_own_patch():
    engine = Engine()
    users = engine.__dict__["step"] = lambda: "user"
    restore = wrap_method(engine, "step", tagging)
    assert engine.step() == "ours+user"
    restore()
    assert engine.__dict__["step"] is users


def test_wrap_method_leaves_a_later_wrapper_alone():
    engine = Engine()
    restore = wrap_method(engine, "step", tagging)
    later = engine.__dict__["step"] = lambda: "later"
    restore()
    assert engine.__dict__["step"] is later


def test_note_once_adds_a_limitation_once():
    session = PredictionSession(SessionConfig(profile_layers=False))
    before = len(session.report.limitations)
    note_once(session, "something unknown")
    note_once(session, "something unknown")
    assert session.report.limitations[before:] == ["something unknown"]


@pytest.mark.parametrize("directory", ["runs/a", Path("runs/b")])
def test_the_default_report_path_is_in_the_directory(directory):
    assert default_report_path(directory) == Path(directory) / REPORT_FILENAME == Path(directory) / "prenet_report.json"


def test_without_a_directory_the_report_goes_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert default_report_path(None) == tmp_path / "prenet_report.json"
