"""What the end of a run says agrees with what the panel said (issue 25, item 5)."""
from __future__ import annotations

import pytest

from prenet_callbacks.session.lifecycle import actual_block, end_line
from prenet_callbacks.outputs.render import render_text
from prenet_callbacks.report import Report
from tests.projection_fixtures import make_report


def _time_limited_report() -> Report:
    report = make_report()
    report.run["framework"] = "lightning"
    report.plan.update(total_steps=1_000, validation_runs=1_000, checkpoint_saves=10, max_time_s=8.0)
    report.predictions[-1].update(time_limited=True, predicted_total_s=8.1, steps=400)
    return report


def test_a_time_limited_run_is_judged_on_the_prediction_the_panel_showed():
    report = _time_limited_report()
    first = report.predictions[-1]
    report.actual = actual_block(fit_s=8.3, steps=410, batches=410, reason="time_limit", first=first,
                                 predicted_for_done_s=14.0)   # a recomputation for the steps done: not shown
    report.run["ended"] = {"reason": "time_limit"}
    line = end_line(report)
    assert "predicted 8.1 s and 400 steps" in line and f"{8.1 / 8.3 - 1:+.1%}" in line
    assert "14 s" not in line
    assert report.actual["first_prediction_error"] == pytest.approx(8.1 / 8.3 - 1, abs=1e-4)


def test_the_plan_line_of_a_time_limited_run_counts_what_fits():
    text = render_text(_time_limited_report(), width=160)
    plan = next(line for line in text.splitlines() if "Plan:" in line)
    assert "400 of 1,000 optimizer steps fit in the time limit" in plan
    assert "about 400 validation runs" in plan and "1,000 validation runs" not in plan
    assert "about 4 checkpoint files" in plan


def test_a_resumed_fit_does_not_call_its_own_part_the_whole_run():
    report = make_report()
    report.run.update(framework="transformers", start="resumed", start_step=4_000)
    text = render_text(report, width=160)
    assert "Where the time goes (from step 4,000)" in text
    report.run.update(start="fresh", start_step=0)
    assert "Where the time goes (whole run)" in render_text(report, width=160)


def test_the_report_reads_like_its_json():
    report = make_report()
    data = report.to_dict()
    assert report["run"] is report.run and report["targets"] == data["targets"]
    assert "predictions" in report and set(report.keys()) == set(data)
    assert report.get("nothing", 3) == 3
    with pytest.raises(KeyError, match="not a report key"):
        report["nothing"]
