"""The report's typed parts (issue 27): they write exactly the report's dicts and read back every report
a run writes, and the JSON Schema names the same target-row keys as `TargetRow`."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from prenet_callbacks import PreNeTCallback
from prenet_callbacks.outputs import report_view
from prenet_callbacks.forecast.eta import Prediction as EtaPrediction
from prenet_callbacks.projection import project_report
from prenet_callbacks.report import Report
from prenet_callbacks.report_parts import Measured, Prediction, TargetRow
from tests import html_fixtures
from tests.lightning_helpers import TinyModule, loaders, trainer
from tests.projection_fixtures import ScaledBound, make_report

SCHEMA = json.loads((Path(__file__).parents[1] / "prenet_callbacks" / "schemas" /
                     "prenet-report-2.schema.json").read_text())
V1_REPORT = Path(__file__).parent / "data" / "html_demo_report_v1.json"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> dict:
    """The report a real (small) Lightning fit writes, projected onto a single and a multi-GPU target."""
    tmp_path = tmp_path_factory.mktemp("fit")
    callback = PreNeTCallback(report_path=tmp_path / "r.json", warmup_steps=1, profile_steps=1, timing_steps=3,
                              metrics_every_n_steps=5, targets=["A100", "8x H100"], print_report=False)
    trainer(tmp_path, [callback], max_epochs=2).fit(TinyModule(), *loaders(train_batches=12))
    return json.loads((tmp_path / "r.json").read_text())


def _projected(**kwargs) -> Report:
    report = make_report(**kwargs)
    project_report(report, ["L4", "8x H100", "2x8 H100"], predictor=ScaledBound())
    return report


def _sources(fitted: dict) -> list[dict]:
    """Reports of every kind the readers meet: a real fit's, projected fixtures, hand-made pages, a /1 file."""
    with_layout = make_report()
    project_report(with_layout, ["8x H100 tp=8"], predictor=ScaledBound())
    reports = [fitted, _projected().to_dict(), _projected(device="cpu", devices=4).to_dict(), with_layout.to_dict()]
    reports += [getattr(html_fixtures, name)() for name in ("finished", "unknown_length", "resumed", "deepspeed")]
    reports.append(Report.from_dict(json.loads(V1_REPORT.read_text())).to_dict())
    return reports


def test_the_fit_report_validates_and_has_rows_of_both_kinds(fitted):
    jsonschema.validate(fitted, SCHEMA)
    kinds = [row["current"] for row in fitted["targets"]]
    assert kinds[0] is True and kinds.count(False) == 2


def test_every_part_read_from_a_report_writes_the_same_dict(fitted):
    for data in _sources(fitted):
        for row in data["targets"]:
            assert TargetRow.from_dict(row).to_dict() == row
        for entry in data["predictions"]:
            assert Prediction.from_dict(entry).to_dict() == entry
        assert Measured.from_dict(data["measured"]).to_dict() == data["measured"]


def test_parts_round_trip_and_keep_the_report_key_order(fitted):
    for data in (fitted, _projected().to_dict()):
        for row in data["targets"]:
            part = TargetRow.from_dict(row)
            assert TargetRow.from_dict(part.to_dict()) == part
            # the writers build rows through TargetRow: the JSON is the part's, byte for byte
            assert json.dumps(part.to_dict()) == json.dumps(row)
    for entry in fitted["predictions"]:   # written by the session (hand-made entries have their own order)
        part = Prediction.from_dict(entry)
        assert Prediction.from_dict(part.to_dict()) == part and json.dumps(part.to_dict()) == json.dumps(entry)
    measured = Measured.from_dict(fitted["measured"])
    assert Measured.from_dict(measured.to_dict()) == measured and measured.layer_rows


def test_missing_and_unknown_keys_are_kept_as_they_were():
    row = {"name": "T4", "devices": 1, "current": False, "step_s": 0.01, "from_a_newer_writer": [1, 2]}
    part = TargetRow.from_dict(row)
    assert part.label is None and part.display_label == "T4" and part.extra == {"from_a_newer_writer": [1, 2]}
    assert part.to_dict() == row
    assert TargetRow.from_dict({"name": "H100", "devices": 8}).display_label == "8x H100"
    with pytest.raises(TypeError, match="JSON object"):
        TargetRow.from_dict(["not", "a", "row"])


def test_the_schema_lists_exactly_the_target_row_keys():
    schema_keys = set(SCHEMA["properties"]["targets"]["items"]["properties"])
    assert set(TargetRow.keys()) == schema_keys   # a new row key goes into TargetRow and into the schema


def test_the_history_entry_is_the_eta_prediction_and_its_fit():
    assert Prediction.keys() == tuple(f.name for f in dataclasses.fields(EtaPrediction)) + ("fit",)
    made = EtaPrediction(at_step=5, at_batch=5, elapsed_s=1.23456, predicted_total_s=10.0, eta_s=8.8, low_s=9.0,
                         high_s=11.0, step_s=0.1, breakdown={"train_s": 10.0})
    entry = Prediction.from_eta(made, fit=2)
    assert entry.to_dict() == {**made.to_dict(), "fit": 2} and entry.elapsed_s == 1.2346


def test_a_partial_part_writes_only_its_keys_and_refuses_a_misspelt_one():
    part = Measured.partial(batch_s=0.25, clean_batches=4)
    assert part.to_dict() == {"batch_s": 0.25, "clean_batches": 4}
    with pytest.raises(TypeError, match="batch_sec"):
        Measured.partial(batch_sec=0.25)   # the measured block's writers cannot invent a key


def test_the_current_row_leaves_out_what_only_projections_have():
    report = _projected()
    current, *projected = report.targets
    assert "band_width" not in current and "memory_usable_gib" not in current
    assert all("band_width" in row and "memory_usable_gib" in row for row in projected)
    assert set(projected[0]) == set(TargetRow.keys()) - {"layout"}     # a row without a tp/pp layout
    report = make_report()
    project_report(report, ["8x H100 tp=8"], predictor=ScaledBound())
    assert set(report.targets[-1]) == set(TargetRow.keys())


@pytest.mark.parametrize("framework, word", [(None, "fit"), ("lightning", "fit"), ("transformers", "run"),
                                             ("deepspeed", "run"), ("loop", "run")])
def test_one_word_for_the_run_everywhere(framework, word):
    from prenet_callbacks.html import view
    from prenet_callbacks.session.lifecycle import actual_block, end_line
    from prenet_callbacks.outputs.render import render_text

    report = make_report()
    report.run["framework"] = framework
    assert report_view.run_word(report) == view.run_word(report.to_dict()) == word
    assert f"Predicted {word} time" in render_text(report, width=160)
    report.actual = actual_block(fit_s=700.0, steps=10_000, batches=10_000, reason="completed",
                                 first=report.predictions[-1], predicted_for_done_s=None)
    assert end_line(report).startswith(f"PreNeT: the {word} took")


def test_device_label_and_breakdown_are_read_once():
    data = html_fixtures.finished()
    assert report_view.device_label(data) == "CPU (AMD EPYC, 2 cores)"
    assert report_view.device_label(make_report(devices=8)) == "8x A100-SXM4-80GB"
    found = report_view.breakdown(data)
    assert not found.finished and [k for k, _, _ in found.rows()] == [
        "setup_s", "train_s", "data_loading_s", "validation_s", "checkpoints_s", "epoch_boundaries_s"]
    data["actual"] = {"fit_s": 20.4, "breakdown": {"setup_s": 0.7, "train_s": 17.0, "data_loading_s": 0.5,
                                                   "validation_s": 2.7}}
    spent = report_view.breakdown(data)
    assert spent.finished and spent.total_s == 20.4 and spent.of_which == (("data_loading_s", 0.5),)
    assert report_view.breakdown(html_fixtures.unknown_length()) is None
