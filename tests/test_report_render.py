"""Rendering and units: what people read."""
from __future__ import annotations

import pytest

from prenet_callbacks.report import Report, ReportError
from prenet_callbacks.outputs.render import render_text
from prenet_callbacks.session.run_info import _plain_name, batch_size_of
from prenet_callbacks.units import format_duration, format_step_time, format_usd


@pytest.mark.parametrize("seconds, text", [(0.42, "0.4 s"), (12.4, "12 s"), (185, "3m 05s"), (4980, "1h 23m"),
                                           (200000, "2d 7h"), (None, "—"), (float("inf"), "—")])
def test_durations_are_rounded_with_units(seconds, text):
    assert format_duration(seconds) == text


def test_step_times_and_money():
    assert format_step_time(0.00085) == "850 µs" and format_step_time(0.0421) == "42.1 ms"
    assert format_usd(0.001) == "<$0.01" and format_usd(3.456) == "$3.46" and format_usd(1234) == "$1,234"


def test_cpu_names_lose_trademarks_and_batches_their_size():
    assert _plain_name("Intel(R) Xeon(R) CPU @ 2.20GHz") == "Intel Xeon CPU @ 2.20GHz"
    import torch

    assert batch_size_of({"x": [torch.zeros(7, 3)], "y": torch.zeros(7)}) == 7 and batch_size_of([1, 2]) is None


def test_panel_shows_prediction_breakdown_and_limitations():
    report = Report(current={"device": "cpu", "name": "Xeon", "cpu_cores": 2},
                    plan={"total_steps": 100, "max_epochs": 2, "validation_runs": 2, "checkpoint_saves": 2},
                    limitations=["torch.compile'd module: step phases only"])
    report.add_prediction({"at_step": 10, "elapsed_s": 5.0, "predicted_total_s": 65.0, "eta_s": 60.0,
                           "low_s": 60.0, "high_s": 70.0, "step_s": 0.5,
                           "breakdown": {"setup": 1.0, "train": 55.0, "validation": 8.0, "checkpoints": 1.0}})
    text = render_text(report)
    assert "Predicted fit time on CPU (Xeon, 2 cores): 1m 05s" in text
    assert "band 1m 00s – 1m 10s" in text and "validation" in text and "torch.compile" in text


def test_a_report_round_trips_and_bad_files_are_named(tmp_path):
    report = Report(current={"device": "cpu"})
    report.add_prediction({"at_step": 1, "predicted_total_s": 2.0})
    path = report.save(tmp_path / "r.json")
    assert Report.load(path).predictions == report.predictions
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ReportError, match="bad.json.*not valid JSON"):
        Report.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"schema": "something-else"}')
    with pytest.raises(ReportError, match="not a PreNeT report"):
        Report.load(tmp_path / "other.json")
