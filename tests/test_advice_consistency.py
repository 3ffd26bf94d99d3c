"""The recommendation never contradicts the table it sits under (issue 25, item 3).

Over many rendered reports (device, precision, target sets, rate mode, a time limit, a resume): the
advice names no target slower than the current device, and every figure in its text (durations, step
times, dollars) is printed in the targets table too, in the same unit.
"""
from __future__ import annotations

import itertools
import re

import pytest

from prenet_callbacks.projection import project_report, recommend
from prenet_callbacks.outputs.render import render_text
from tests.projection_fixtures import ScaledBound, make_report

TARGET_SETS = [["A100", "T4", "8x H100"], ["T4", "L4"], ["H100", "2x8 H100", "4x8 H100"], None, ["P100", "V100"]]
# a figure as the renderer writes it: "1h 23m", "9.4 s", "612 µs", "$0.53", "<$0.01", "37.8 ms"
_FIGURE = re.compile(r"<?\$\d[\d,]*(?:\.\d+)?k?|\d+h \d+m|\d+m \d+s|\d+(?:\.\d+)? ?(?:µs|ms|s|min|h)\b")


def _report(variant: str, device: str, precision: str):
    report = make_report(device=device, precision=precision,
                         catalog_name="A100-SXM4-80GB" if device == "cuda" else None)
    if variant == "rate":
        report.plan = {"total_steps": None, "accumulate": 1}
        report.predictions[-1].update(predicted_total_s=None, eta_s=None, low_s=None, high_s=None)
    elif variant == "time_limit":
        report.plan = {"total_steps": 10_000, "accumulate": 1, "max_time_s": 120.0}
        report.predictions[-1].update(time_limited=True, predicted_total_s=120.0, steps=1_500)
    elif variant == "resumed":
        report.run = {**(report.run or {}), "start": "resumed", "start_step": 4_000}
    return report


CASES = list(itertools.product(["plain", "rate", "time_limit", "resumed"], ["cuda", "cpu"], ["32-true", "bf16-mixed"],
                               range(len(TARGET_SETS))))


@pytest.mark.parametrize("variant,device,precision,targets", CASES)
def test_advice_figures_are_the_tables_and_never_a_slower_target(variant, device, precision, targets):
    report = _report(variant, device, precision)
    project_report(report, TARGET_SETS[targets], predictor=ScaledBound())
    rec = report.recommendation
    if rec is None:
        return
    rows = {r["label"]: r for r in report.targets}
    current = next((r for r in report.targets if r.get("current")), None)
    key = "total_s" if all(r.get("total_s") is not None for r in report.targets) else "work_s"
    for pick in ("fastest", "cheapest", "best_value"):
        label = rec.get(pick)
        if label is None:
            continue
        assert label in rows, f"{pick} {label!r} is not a row of the table"
        if current is not None and current.get(key):
            assert rows[label][key] <= current[key] * (1 + 1e-9), f"{pick} {label} is slower than the current device"
    text = render_text(report, width=200)
    table = text.split("Recommendation")[0]
    for figure in _FIGURE.findall(rec["text"]):
        assert figure in table, f"{figure!r} of the advice {rec['text']!r} is not in the table"


def test_a_slower_cheaper_target_is_not_cheapest():
    """The issue's example: a T4 slower than the current GPU is not named cheapest or best value."""
    rows = [{"label": "A100", "name": "A100", "current": True, "total_s": 100.0, "work_s": 1.0, "step_s": 1.0,
             "total_usd": 5.0, "fits_memory": True},
            {"label": "T4", "name": "T4", "total_s": 113.0, "work_s": 1.13, "step_s": 1.13, "total_usd": 1.0,
             "fits_memory": True, "step_high_s": 1.3},
            {"label": "8x H100", "name": "H100", "devices": 8, "total_s": 20.0, "work_s": 0.2, "step_s": 1.6,
             "total_usd": 8.0, "fits_memory": True, "step_high_s": 2.0}]
    rec = recommend(rows)
    assert rec["fastest"] == "8x H100" and rec["cheapest"] != "T4" and rec["best_value"] != "T4"


def test_rate_mode_quotes_the_rows_step_time():
    rows = [{"label": "CPU", "name": "CPU", "current": True, "total_s": None, "work_s": 0.05, "step_s": 0.05,
             "fits_memory": True},
            {"label": "8x H100", "name": "H100", "devices": 8, "total_s": None, "work_s": 0.000077,
             "step_s": 0.000612, "fits_memory": True, "step_high_s": 0.0008}]
    rec = recommend(rows)
    assert "612 µs per step of 8 GPUs" in rec["text"] and "77" not in rec["text"]
