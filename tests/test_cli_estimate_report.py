"""`prenet estimate` and `prenet report --targets`: output, JSON, and exit code 2 on bad input."""
from __future__ import annotations

import json
import textwrap

import pytest

from prenet_callbacks.cli import main
from tests.projection_fixtures import importable_models, make_report

MODELS = textwrap.dedent("""
    import torch
    from torch import nn

    def mlp(width=64):
        return nn.Sequential(nn.Linear(width, 4 * width), nn.ReLU(), nn.Linear(4 * width, width))

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x):
            y = self.fc(x)
            return y[y > 0].sum()

    def masked():
        return Masked()

    def cnn():
        return nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))

    def embed(vocab=1000):
        return nn.Sequential(nn.Embedding(vocab, 32), nn.Linear(32, vocab))

    not_a_model = 3
""")


@pytest.fixture
def models(tmp_path, monkeypatch):
    return importable_models(tmp_path, monkeypatch, MODELS, "cli_models_for_test")


def test_estimate_table_and_json(models, capsys):
    assert main(["estimate", f"{models}:mlp", "--input", "256,64", "--targets", "L4", "8x H100",
                 "--precision", "bf16-mixed", "--steps", "1000"]) == 0
    out = capsys.readouterr().out
    assert "L4" in out and "8x H100-SXM5" in out
    assert main(["estimate", f"{models}:embed", "-i", "8x128:int64", "-t", "A100", "--json",
                 "--model-kwargs", '{"vocab": 500}']) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["targets"][0]["name"] == "A100-SXM4-80GB" and data["targets"][0]["step_s"] > 0


def test_estimate_accumulate_and_checkpointing_options(models, capsys):
    assert main(["estimate", f"{models}:mlp", "-i", "256,64", "-t", "A100", "--accumulate", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accumulate"] == 4
    assert main(["estimate", f"{models}:mlp", "-i", "256,64", "--accumulate", "0"]) == 2
    # an MLP has no repeated blocks to checkpoint: a clear error, exit 2
    assert main(["estimate", f"{models}:mlp", "-i", "256,64", "--activation-checkpointing", "full"]) == 2
    assert "repeated blocks" in capsys.readouterr().err


def test_estimate_channels_last_removes_the_layout_transforms(models, capsys):
    steps = []
    for extra in ([], ["--channels-last"]):
        assert main(["estimate", f"{models}:cnn", "-i", "64,3,256,256", "-t", "A100", "--precision", "16-mixed",
                     "--json", *extra]) == 0
        steps.append(json.loads(capsys.readouterr().out)["targets"][0]["step_s"])
    assert steps[1] < steps[0]


@pytest.mark.parametrize("argv,needle", [
    (["--input", "256,64", "--targets", "H1000"], "closest"),
    (["--input", "256,abc"], "shape"),
    (["--input", "256,64:float12"], "dtype"),
    (["--input", "256,64", "--precision", "fp12"], "precision"),
])
def test_estimate_bad_input_exits_2(models, capsys, argv, needle):
    assert main(["estimate", f"{models}:mlp", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_estimate_bad_model_paths_exit_2(models, capsys):
    for spec in ("nomodule_xyz:mlp", f"{models}:missing", f"{models}:not_a_model", "no_colon"):
        assert main(["estimate", spec, "--input", "4,8"]) == 2
    assert main(["estimate", f"{models}:masked", "--input", "4,8", "-t", "L4"]) == 2
    assert "meta" in capsys.readouterr().err


def test_report_rerender_for_other_targets(tmp_path, capsys):
    path = make_report().save(tmp_path / "report.json")
    assert main(["report", str(path)]) == 0
    assert "Predicted fit time" in capsys.readouterr().out
    out_path = tmp_path / "projected.json"
    assert main(["report", str(path), "--targets", "L4", "8x H100", "--out", str(out_path)]) == 0
    text = capsys.readouterr().out
    assert "8x H100-SXM5" in text and "Recommendation" in text
    saved = json.loads(out_path.read_text())
    assert [t["name"] for t in saved["targets"]][1:] == ["L4", "H100-SXM5"]
    assert main(["report", str(path), "--targets", "default", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["targets"]) == 7  # the current A100 replaces the default one


def test_report_bad_input_exits_2(tmp_path, capsys):
    path = make_report().save(tmp_path / "report.json")
    assert main(["report", str(path), "--targets", "A100-SXM9"]) == 2
    assert "closest" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.json")]) == 2
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["report", str(tmp_path / "bad.json")]) == 2
