"""Target totals are on the same footing as the measured run's: its one-off time travels with them.

The report is the demo's, measured on an H200 (benchmarks/results/gpu/): a host-bound run whose
per-step time is the same on an A100 or H100. Before, every target looked faster by the run's
warm-up, profiling window and this tool's own work, which only the measured row contained.
"""
import json
import lzma
from pathlib import Path

import pytest

from prenet_callbacks.projection import project_report
from prenet_callbacks.report import Report

DEMO = Path(__file__).resolve().parents[1] / "benchmarks/results/gpu/h200-2026-11-30-demo.report.json.xz"


def test_a_host_bound_run_is_not_faster_elsewhere_by_its_own_one_off_time():
    report = Report.from_dict(json.loads(lzma.open(DEMO).read()))
    project_report(report, ["A100", "H100"])
    current = next(t for t in report.targets if t["current"])
    others = [t for t in report.targets if not t["current"]]
    assert current["label"] == "H200-SXM" and len(others) == 2
    for row in others:
        assert row["step_s"] == pytest.approx(current["step_s"], rel=0.02)   # host-bound: the same step
        assert row["total_s"] == pytest.approx(current["total_s"], rel=0.02)
        assert row["speedup"] == pytest.approx(1.0, abs=0.02)
