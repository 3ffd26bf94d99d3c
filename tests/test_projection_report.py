"""`project_report` on saved reports: anchored on a known GPU, absolute on CPU, ZeRO, rendering."""
from __future__ import annotations

import re
import pytest

from predictor_models.hardware import UnknownHardwareError, lookup_hardware
from prenet_callbacks.projection import project_report
from prenet_callbacks.projection.from_report import workload_from_report
from prenet_callbacks.outputs.render import render_text
from tests.projection_fixtures import ScaledBound, make_report


@pytest.fixture
def predictor():
    return ScaledBound()


def _row(rows, name, devices=1):
    acc = lookup_hardware(name)
    return next(r for r in rows if r["name"] == acc.name and r["devices"] == devices and not r["current"])


def _recommendation(report):
    return report.recommendation


def test_current_row_first_and_measured(predictor):
    report = make_report()
    rows = project_report(report, ["H100-SXM5"], predictor=predictor)
    assert rows[0]["current"] and rows[0]["method"] == "measured" and rows[0]["step_s"] == 0.06
    assert rows[0]["total_s"] == 660.0 and rows[0]["total_usd"] is not None
    assert report.targets == rows and _recommendation(report)["text"]


def test_anchored_self_projection_reproduces_the_measurement(predictor):
    """Projecting onto the measured GPU itself must give back the measured step time."""
    report = make_report()
    workload = workload_from_report(report)
    assert workload.anchor is not None
    from prenet_callbacks.projection.rows.project import RunShape, project_targets
    from predictor_models.hardware import parse_target

    row = project_targets(workload, [parse_target("A100-SXM4-80GB")], predictor, RunShape(10_000))[0]
    assert row["step_s"] == pytest.approx(0.06, rel=1e-6)
    assert row["method"] == "anchored"


def test_anchored_ratio_follows_predictor_and_host_time_does_not_scale(predictor):
    report = make_report()
    rows = project_report(report, ["H100-SXM5"], predictor=predictor)
    h100 = _row(rows, "H100-SXM5")
    workload = workload_from_report(report)
    device = sum(u.measured_s for u in workload.units)
    gpu_part = h100["phases_s"]["forward"] + h100["phases_s"]["backward"] + h100["phases_s"]["optimizer"]
    assert 0 < gpu_part < device                      # the H100 is faster at the GPU part only
    assert h100["phases_s"]["host"] >= 0.06 - device - 1e-6   # the unexplained host time is kept
    assert h100["step_low_s"] < h100["step_s"] < h100["step_high_s"]
    assert h100["relative_error"] == pytest.approx(0.2)


def test_data_parallel_node_same_per_device_batch(predictor):
    report = make_report()
    rows = project_report(report, ["H100-SXM5", "8x H100-SXM5"], predictor=predictor)
    one, eight = _row(rows, "H100-SXM5"), _row(rows, "H100-SXM5", 8)
    assert eight["step_s"] >= one["step_s"]           # same per-device work + exposed comm
    assert eight["steps"] == pytest.approx(10_000 / 8)
    assert eight["total_s"] < one["total_s"] / 3
    assert eight["comm_s"] > 0 and "all-reduce" in eight["communication"]
    assert eight["total_usd"] == pytest.approx(eight["usd_per_hour"] * eight["total_s"] / 3600, rel=1e-3)


def test_cpu_run_projects_absolute(predictor):
    report = make_report(device="cpu")
    rows = project_report(report, ["A100-SXM4-80GB"], predictor=predictor)
    assert rows[0]["current"] and rows[0]["name"] == "Some CPU"
    assert _row(rows, "A100-SXM4-80GB")["method"] == "absolute"
    assert any("absolute" in n for n in report.projection["notes"])


def test_bf16_run_onto_v100_is_explained(predictor):
    report = make_report(precision="bf16-mixed")
    rows = project_report(report, ["V100-SXM2-16GB"], predictor=predictor)
    assert "BF16" in (_row(rows, "V100-SXM2-16GB")["precision_note"] or "")


def test_memory_misfit_gives_largest_batch(predictor):
    report = make_report(width=16384, layers=8)   # 2.1 G params x 16 B: far beyond a T4
    rows = project_report(report, ["T4", "H100-SXM5"], predictor=predictor)
    t4 = _row(rows, "T4")
    assert t4["fits_memory"] is False and t4["max_batch"] == 0


def test_deepspeed_zero_changes_communication_and_memory(predictor):
    plain = project_report(make_report(precision="bf16-mixed"), ["8x H100-SXM5"], predictor=predictor)
    zero3 = project_report(make_report(precision="bf16-mixed", deepspeed={
        "zero_stage": 3, "offload_optimizer": False, "offload_param": False, "gradient_accumulation_steps": 1,
        "micro_batch_per_gpu": 32}), ["8x H100-SXM5"], predictor=predictor)
    a, b = _row(plain, "H100-SXM5", 8), _row(zero3, "H100-SXM5", 8)
    assert "ZeRO-3" in b["communication"] and b["memory_gib"] < a["memory_gib"]


def test_unknown_target_raises_with_closest_and_empty_list_clears(predictor):
    report = make_report()
    with pytest.raises(UnknownHardwareError, match="closest"):
        project_report(report, ["A100-SXM9"], predictor=predictor)
    project_report(report, ["L4"], predictor=predictor)
    assert project_report(report, [], predictor=predictor) == [] and report.targets == []


def test_report_without_layer_profile_keeps_current_row_only(predictor):
    report = make_report(with_layers=False)
    rows = project_report(report, ["L4"], predictor=predictor)
    assert len(rows) == 1 and rows[0]["current"]
    assert any("profile" in n for n in report.projection["notes"])


def test_rendered_table_and_json_round_trip(predictor, tmp_path):
    from prenet_callbacks.report import Report

    report = make_report(precision="bf16-mixed")
    project_report(report, ["V100-SXM2-16GB", "8x H100-SXM5"], predictor=predictor)
    text = render_text(report, width=140)
    assert "8x H100-SXM5" in text and "Recommendation" in text and "BF16" in text and re.search(r"-\d+/\+\d+%", text)
    path = report.save(tmp_path / "r.json")
    again = Report.load(path)
    assert again.targets == report.targets and again.recommendation == report.recommendation


def test_default_predictor_works_without_artifact():
    report = make_report()
    rows = project_report(report, None)
    assert len(rows) >= 7 and all(r["step_s"] for r in rows)


def test_identical_recorded_ops_share_one_spec_and_different_ones_do_not():
    report = make_report(layers=3)
    layers = report.measured["layers"]["layers"]
    first = layers[0]["ops"][0]["spec"]
    layers[1]["ops"][0]["spec"] = {**first, "dims": dict(reversed(list(first["dims"].items())))}   # same, reordered
    layers[2]["ops"][0]["spec"] = {**first, "dims": {**first["dims"], "k": first["dims"]["k"] + 1}}  # another shape
    workload = workload_from_report(report)
    forward = [u.ops for u in workload.units if u.phase == "fwd"]
    assert forward[0][0][0] is forward[1][0][0]                    # one object: predicted once
    assert forward[2][0][0] is not forward[0][0][0] and forward[2][0][0].dims["k"] == first["dims"]["k"] + 1
    assert forward[0][1][0] is forward[1][1][0] is forward[2][1][0]   # the three layers' adds
    # and one (spec, calls) entry for all three (an entry holding a spec is an object the collector tracks)
    assert forward[0][1] is forward[1][1] is forward[2][1]
    assert forward[2][0] is not forward[0][0] and forward[0][0] is forward[1][0]
