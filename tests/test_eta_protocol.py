"""The ETA protocol's declared splits and its summaries (`benchmarks/eta_splits.py`, `eta_summary.py`); no training."""
from __future__ import annotations

import pytest

from benchmarks import eta_splits
from benchmarks.eta_protocol import planned
from benchmarks.eta_summary import BAND_PARTS, by, summarise, user_wall_figures


def _registries() -> dict[str, set[str]]:
    from benchmarks import deepspeed_workloads, heldout_workloads, hf_workloads, loop_workloads, workloads

    return {"lightning": set(workloads.WORKLOADS) | set(heldout_workloads.LIGHTNING),
            "hf": set(hf_workloads.WORKLOADS) | set(heldout_workloads.HF),
            "loop": set(loop_workloads.WORKLOADS) | set(heldout_workloads.LOOP),
            "deepspeed": set(deepspeed_workloads.WORKLOADS)}


def test_splits_are_disjoint_and_every_workload_exists():
    registries = _registries()
    for framework, name in eta_splits.DEVELOPMENT + eta_splits.HELD_OUT:
        assert name in registries[framework], (framework, name)
    assert not {n for _, n in eta_splits.DEVELOPMENT} & {n for _, n in eta_splits.HELD_OUT}


def test_development_is_every_existing_workload_and_both_splits_span_frameworks_and_architectures():
    from benchmarks import deepspeed_workloads, hf_workloads, loop_workloads, workloads

    existing = (set(workloads.WORKLOADS) | set(hf_workloads.WORKLOADS) | set(loop_workloads.WORKLOADS)
                | set(deepspeed_workloads.DEVELOPMENT))
    assert {n for _, n in eta_splits.DEVELOPMENT} == existing
    assert {n for fw, n in eta_splits.HELD_OUT if fw == "deepspeed"} == set(deepspeed_workloads.HELD_OUT)
    for split in (eta_splits.DEVELOPMENT, eta_splits.HELD_OUT):
        assert len(split) >= 8 and {fw for fw, _ in split} == {"lightning", "hf", "loop", "deepspeed"}
        words = " ".join(n for _, n in split)
        for kind in (("gru", "lstm"), ("cnn",), ("mlp",), ("transformer", "distilbert", "encoder")):
            assert any(k in words for k in kind), kind


def test_planned_keeps_the_split_order_and_filters_by_workload_or_framework():
    order = planned("held_out", None)
    assert [(fw, n) for _, fw, n in order] == list(eta_splits.HELD_OUT)
    assert {fw for _, fw, _ in planned("held_out", ["deepspeed"])} == {"deepspeed"}
    assert [n for *_, n in planned("all", ["ho_loop_mlp_loader_epochs"])] == ["ho_loop_mlp_loader_epochs"]
    with pytest.raises(SystemExit):
        planned("development", ["ho_loop_mlp_loader_epochs"])


def _row(workload: str, error: float, at_pace: float, in_band: bool, half: float, parts: dict) -> dict:
    actual = 10.0
    row = {"workload": workload, "framework": "loop", "split": "held_out", "actual_s": actual, "wall_s": actual + 0.1,
           "first_prediction_s": actual * (1 + error), "first_error": error, "first_error_at_pace": at_pace,
           "first_band": [actual * (1 + error - half), actual * (1 + error + half)] if in_band else [1.0, 2.0],
           "actual_in_band": in_band, "first_band_half_width": half, "first_band_parts": parts, "pace": 1.0}
    row.update(user_wall_figures(row))
    return row


def test_summary_keeps_every_run_median_worst_spread_coverage_and_parts():
    parts = [{name: 0.1 * (i + 1) for name in BAND_PARTS} for i in range(3)]
    rows = [_row("a", 0.02, 0.01, True, 0.2, parts[0]), _row("a", -0.10, -0.03, False, 0.3, parts[1]),
            _row("b", 0.05, 0.02, True, 0.4, parts[2])]
    s = summarise(rows)
    assert s["runs"] == 3 and s["first_error"] == {"median_abs": 0.05, "worst_abs": 0.1, "spread": 0.15,
                                                   "median": 0.02}
    assert s["first_error_at_pace"]["worst_abs"] == 0.03
    assert s["actual_in_band"] == 2 and s["band_coverage"] == pytest.approx(2 / 3, abs=1e-4)
    assert s["median_band_half_width"] == 0.3
    assert s["median_band_parts"] == {name: 0.2 for name in BAND_PARTS}
    assert rows[0]["end_outside_report_s"] == pytest.approx(0.1)
    assert rows[0]["wall_error"] == pytest.approx(10.2 / 10.1 - 1, abs=1e-4)
    assert set(by(rows, "workload")) == {"a", "b"} and by(rows, "workload")["a"]["runs"] == 2


def test_append_adds_repeats_and_keeps_every_run(tmp_path, monkeypatch):
    import json

    from benchmarks import eta_protocol, hf_eta_accuracy

    calls = []

    def fake_child(script, which, *args):
        calls.append(which)
        error = 0.01 * len(calls)
        return {"workload": which.split(":")[1], "actual_s": 10.0, "wall_s": 10.0, "first_prediction_s": 10 + 10 * error,
                "first_error": error, "first_error_at_pace": error / 2, "first_band": [8.0, 12.0], "actual_in_band": True,
                "first_band_half_width": 0.2, "first_band_parts": {"pace_drift": 0.2}, "pace": 1.0,
                "first_prediction_at_fraction": 0.04}

    monkeypatch.setattr(hf_eta_accuracy, "run_child", fake_child)
    monkeypatch.setattr(hf_eta_accuracy, "_machine", lambda: "test")
    out = tmp_path / "p.json"
    base = ["--split", "held_out", "--only", "deepspeed", "--repeats", "1", "--json", str(out)]
    eta_protocol.main(base)
    eta_protocol.main(base + ["--append"])
    data = json.loads(out.read_text())
    assert calls == [f"deepspeed:{n}" for fw, n in eta_splits.HELD_OUT if fw == "deepspeed"] * 2
    assert [r["repeat"] for r in data["runs"]] == [0, 0, 0, 1, 1, 1] and data["complete"]
    assert data["repeats_done"] == 2 and len(data["commands"]) == 2
    assert data["splits"]["held_out"]["runs"] == 6 and data["splits"]["held_out"]["wall_in_band"] == 6
