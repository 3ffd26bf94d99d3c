"""The Lambda development sets' data files and the relative-speed arithmetic (the predictions themselves are the
benchmarks' job: `benchmarks/projection_lambda.py`, `benchmarks/projection_lambda_bert.py`)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.projection_lambda import REFERENCE, TABLES, relative
from benchmarks.projection_lambda_bert import TABLES as BERT_TABLES
from predictor_models.hardware import lookup_hardware

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"


def test_the_bert_table_names_catalog_gpus_and_holds_both_models_in_both_precisions():
    doc = json.loads((DATA / "lambda_bert_squad_train.json").read_text())
    assert "MIT" in doc["source"] and len(doc["rows"]) == 12
    gpus = [row["gpu"] for row in doc["rows"]]
    assert len(set(gpus)) == len(gpus) and REFERENCE in gpus
    for row in doc["rows"]:
        assert lookup_hardware(row["gpu"]).name == row["gpu"]
        for model in ("bert_base_squad", "bert_large_squad"):
            for precision in ("amp", "fp32"):
                point = row[model][precision]
                assert point["batch"] > 0 and point["sequences_per_s"] > 0
        # AMP is never slower than FP32 on the same GPU, and BERT-large never faster than BERT-base
        for precision in ("amp", "fp32"):
            assert row["bert_large_squad"][precision]["sequences_per_s"] < row["bert_base_squad"][precision]["sequences_per_s"]
        assert row["bert_base_squad"]["amp"]["sequences_per_s"] >= row["bert_base_squad"]["fp32"]["sequences_per_s"]


def test_relative_speed_is_per_model_and_precision_against_the_reference():
    def row(model, precision, gpu, measured, predicted, batch=10):
        return {"model": model, "precision": precision, "gpu": gpu, "batch": batch, "measured_s": measured,
                "predicted_s": predicted}

    table = [row("a", "16-mixed", REFERENCE, 1.0, 1.0), row("a", "16-mixed", "H100-SXM5", 0.5, 0.4),
             row("b", "16-mixed", REFERENCE, 2.0, 1.0), row("b", "16-mixed", "H100-SXM5", 1.0, 0.5, batch=20),
             row("a", "32-true", "T4", 1.0, 1.0)]   # no reference in its group: no row
    out = relative(table, group=("model", "precision"))
    assert [(r["model"], r["gpu"]) for r in out] == [("a", "H100-SXM5"), ("b", "H100-SXM5")]
    assert out[0]["measured_speed"] == 2.0 and out[0]["predicted_speed"] == 2.5 and out[0]["error"] == 0.25
    assert out[1]["measured_speed"] == 4.0 and out[1]["predicted_speed"] == 4.0 and out[1]["error"] == 0.0
    assert relative(table) and all("model" not in r for r in relative(table))   # by precision alone, as before
    with pytest.raises(KeyError):
        relative(table, group=("layout",))


@pytest.mark.parametrize("name", ["lambda_resnet50_train_v2.json", "lambda_bert_squad_train_v2.json"])
def test_the_v2_tables_hold_one_row_per_catalog_gpu_with_their_machines_and_the_reference(name):
    doc = json.loads((DATA / name).read_text())
    assert "MIT" in doc["source"] and "aa5addb6" in doc["source"]
    gpus = [row["gpu"] for row in doc["rows"]]
    assert len(set(gpus)) == len(gpus) and "H100-SXM5" in gpus and {"H200-SXM", "B200", "GH200-96GB"} <= set(gpus)
    for row in doc["rows"]:
        assert lookup_hardware(row["gpu"]).name == row["gpu"] and row["machines"]
        points = [row[p] for p in ("amp", "fp32")] if "amp" in row else \
            [row[m][p] for m in ("bert_base_squad", "bert_large_squad") for p in ("amp", "fp32")]
        for point in points:
            rate = point.get("images_per_s", point.get("sequences_per_s"))
            assert point["batch"] > 0 and rate > 0


def test_each_table_names_its_own_file_and_a_reference_gpu_it_holds():
    for tables in (TABLES, BERT_TABLES):
        assert set(tables) == {"v1", "v2"}
        for data, reference in tables.values():
            rows = json.loads(data.read_text())["rows"]
            assert reference in [row["gpu"] for row in rows]


def test_relative_speed_takes_the_reference_it_is_given():
    table = [{"precision": "16-mixed", "gpu": gpu, "batch": 10, "measured_s": m, "predicted_s": p}
             for gpu, m, p in (("H100-SXM5", 1.0, 1.0), ("B200", 0.5, 0.25), (REFERENCE, 2.0, 2.0))]
    out = relative(table, reference="H100-SXM5")
    assert [r["gpu"] for r in out] == ["B200", REFERENCE]
    assert out[0]["measured_speed"] == 2.0 and out[0]["predicted_speed"] == 4.0 and out[0]["error"] == 1.0
    assert [r["gpu"] for r in relative(table)] == ["H100-SXM5", "B200"]   # the default stays the A100 80GB SXM4
