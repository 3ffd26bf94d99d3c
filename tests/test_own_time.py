"""PreNeT's own time in the run it watches (`prenet_callbacks.session.own_time`): counted once per outermost call,
its parts inside the total, written to the report and the end line, and what a real loop's report says."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import torch
from torch import nn

from integrations.loop import Tracker
from prenet_callbacks.session.lifecycle import end_line
from prenet_callbacks.session.own_time import OwnTime
from prenet_callbacks.session.guard import Containment, guarded

SCHEMA = json.loads((Path(__file__).parents[1] / "prenet_callbacks" / "schemas" / "prenet-report-2.schema.json").read_text())


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class LoudGuard(Containment):
    def fail(self, error: BaseException, where: str = "") -> None:
        raise AssertionError(f"unexpected failure in {where}: {error}")


class Owner:
    """A guarded object like the session: its events advance a fake clock."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.own_time = OwnTime(clock)
        self.guard = LoudGuard(release=lambda: None, own_time=self.own_time)

    @guarded
    def inner(self) -> None:
        self.clock.now += 1.0

    @guarded
    def outer(self) -> None:
        self.clock.now += 2.0
        self.inner()              # nested: already inside outer's time
        with self.own_time.part("predictions"):
            self.clock.now += 4.0


def test_nested_events_count_once_and_parts_lie_inside_the_total():
    clock = FakeClock()
    owner = Owner(clock)
    owner.outer()
    owner.inner()
    own = owner.own_time
    assert own.total_s == 8.0 and own.calls == 2
    summary = own.summary(fit_s=80.0, batches=4)
    assert summary["share"] == 0.1 and summary["predictions_s"] == 4.0
    assert summary["per_batch_us"] == (8.0 - 4.0) / 4 * 1e6


def test_the_summary_counts_the_event_in_progress_and_a_new_fit_starts_afresh():
    clock = FakeClock()
    own = OwnTime(clock)
    start = own.enter()
    clock.now += 3.0
    assert own.summary(fit_s=30.0, batches=0)["total_s"] == 3.0   # e.g. fit_end asking before it returns
    own.leave(start)
    own.new_fit()
    assert own.summary(fit_s=None, batches=0) == {"total_s": 0.0, "share": None, "per_batch_us": None,
                                                    "profiling_s": 0.0, "predictions_s": 0.0, "end_s": 0.0}


def test_a_tracker_loop_reports_its_own_time_and_the_end_line_says_it(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    tracker = Tracker(total_steps=40, model=model, optimizer=optimizer, report_path=tmp_path / "r.json",
                      print_report=False, warmup_steps=1, profile_steps=2, timing_steps=3, metrics_every_n_steps=5)
    for _ in range(40):
        model(torch.randn(8, 16)).pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        tracker.step()
    report = tracker.close()
    own = report.actual["own_time"]
    assert 0 < own["total_s"] < report.actual["fit_s"]
    assert own["profiling_s"] > 0 and own["predictions_s"] > 0    # the window closed and predictions were made
    assert own["profiling_s"] + own["predictions_s"] + own["end_s"] <= own["total_s"]
    assert own["share"] == pytest.approx(own["total_s"] / report.actual["fit_s"], rel=1e-2) and own["per_batch_us"] > 0
    jsonschema.validate(json.loads(Path(tmp_path / "r.json").read_text()), SCHEMA)
    assert "PreNeT's own time" in end_line(report) and f"({own['share']:.1%})" in end_line(report)
