"""A busy machine (`prenet_callbacks.contention`): named in one line from what was measured (clean-step
spread, load beyond the run's threads), and kept out of the host time carried to other hardware."""
from __future__ import annotations

import math

import pytest

from prenet_callbacks.contention import LINE_START, busy_line, contention, note_contention
from prenet_callbacks.estimators import RobustDuration
from prenet_callbacks.projection import project_report
from tests.projection_fixtures import ScaledBound, make_report


def _batches(values) -> RobustDuration:
    batch = RobustDuration()
    for v in values:
        batch.add(v)
    return batch


def test_a_quiet_machine_is_not_busy_and_says_nothing():
    found = contention(_batches([0.010 + 0.0002 * (i % 5) for i in range(40)]), threads=2, cores=2, load=1.9)
    assert not found["busy"] and found["spread"] < 1.1 and found["p20_s"] == pytest.approx(0.0102, rel=0.02)
    assert busy_line(found) is None
    assert contention(_batches([0.01] * 7), threads=1, cores=2, load=0.5) is None   # too few clean batches


def test_steps_at_two_paces_or_a_loaded_host_are_named_with_the_figures():
    flipping = [0.002 if i % 3 else 0.170 for i in range(60)]
    found = contention(_batches(flipping), threads=1, cores=2, load=1.2)
    assert found["busy"] and found["spread"] == pytest.approx(85, rel=0.01)
    line = busy_line(found)
    assert line.startswith(LINE_START) and "2.0 ms to 170.0 ms" in line and "load average 1.2 on 2 cores" in line
    loaded = contention(_batches([0.01] * 20), threads=1, cores=2, load=3.4)
    assert loaded["busy"] and "beside this run's 1 thread" in busy_line(loaded)


def test_the_report_keeps_one_current_busy_line():
    limitations = ["something else"]
    busy = contention(_batches([0.01] * 20), threads=1, cores=2, load=3.0)
    note_contention(limitations, busy)
    note_contention(limitations, contention(_batches([0.01] * 20), threads=1, cores=2, load=4.0))
    assert limitations[0] == "something else" and len(limitations) == 2 and "4.0" in limitations[1]
    note_contention(limitations, contention(_batches([0.01] * 20), threads=1, cores=2, load=0.2))
    assert limitations == ["something else"]


def _cpu_report(step_s: float, p20_s: float | None):
    report = make_report(device="cpu")
    report.measured["step_phases"]["other_s"] = 0.0
    report.predictions[-1]["step_s"] = step_s
    if p20_s is not None:
        report.measured["contention"] = {"p10_s": p20_s, "p20_s": p20_s, "p50_s": step_s, "p90_s": step_s * 2,
                                         "spread": 2.0, "load_1min": 3.0, "cores": 2, "threads": 1, "busy": True}
    return report


def test_gpu_rows_come_from_the_fast_steps_not_the_slowed_mean():
    quiet = project_report(_cpu_report(0.5, None), ["H100"], predictor=ScaledBound())[1]
    # the same run on a busy host: a third of its steps slowed 4x raise the mean to 1.0 s; its fast steps stay 0.5 s
    report = _cpu_report(1.0, 0.5)
    busy = project_report(report, ["H100"], predictor=ScaledBound())[1]
    assert busy["step_s"] == pytest.approx(quiet["step_s"], rel=0.02)
    assert busy["assumed"]["host"] == ("this run's own Python time (its faster steps: the machine was busy) "
                                       "+ dispatch and launch")
    assert any("host time from the run's faster steps (500.0 ms" in n for n in report.projection["notes"])
    # without the quantiles (an older report) the mean is all there is
    slowed = project_report(_cpu_report(1.0, None), ["H100"], predictor=ScaledBound())[1]
    assert slowed["step_s"] > 1.5 * quiet["step_s"]
    # a fast quantile close to the mean is a quiet run's scatter: the mean is kept, no note
    near_report = _cpu_report(0.5, 0.47)
    near = project_report(near_report, ["H100"], predictor=ScaledBound())[1]
    assert near["step_s"] == pytest.approx(quiet["step_s"], rel=1e-6)
    assert not any("faster steps" in n for n in near_report.projection["notes"])
    assert near["assumed"]["host"] == "this run's own Python time + dispatch and launch"


def test_quantiles_and_the_fast_standard_error():
    batch = _batches([1.0, 2.0, 3.0, 4.0, 5.0])
    assert batch.quantile(0.0) == 1.0 and batch.quantile(0.5) == 3.0 and batch.quantile(1.0) == 5.0
    assert RobustDuration().quantile(0.5) is None
    assert batch.relative_stderr == pytest.approx(math.sqrt(2.5) / 3.0 / math.sqrt(5))
