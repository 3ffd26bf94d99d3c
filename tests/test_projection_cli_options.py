"""`prenet estimate` / `prenet report --targets` options for how targets run, and their bad values."""
from __future__ import annotations

import json

import pytest

from prenet_callbacks.cli import main
from tests.projection_fixtures import importable_models, make_report


@pytest.fixture
def models(tmp_path, monkeypatch):
    source = "from torch import nn\n\ndef mlp(width=64):\n    return nn.Sequential(nn.Linear(width, width), nn.ReLU())\n"
    return importable_models(tmp_path, monkeypatch, source, "cli_models_opts")


def test_estimate_global_batch_over_nodes(models, capsys):
    assert main(["estimate", f"{models}:mlp", "--input", "64,64", "--targets", "2x4 H100", "--batch-convention",
                 "global", "--sharding", "zero3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    row = data["targets"][0]
    assert data["batch_convention"] == "global" and row["batch_per_device"] == 8 and row["nodes"] == 2
    assert row["assumed"]["sharding"] == "ZeRO-3"


@pytest.mark.parametrize("argv,needle", [
    (["--targets", "0x8 H100"], "0 x 8"),
    (["--targets", "2x8 H100 @ smoke-signals"], "unknown interconnect"),
    (["--targets", "3x H100", "--batch-convention", "global"], "does not divide"),
    (["--zero-stage", "2", "--sharding", "zero3"], "not both"),
])
def test_estimate_bad_values_exit_2(models, capsys, argv, needle):
    assert main(["estimate", f"{models}:mlp", "--input", "64,64", *argv]) == 2
    assert needle in capsys.readouterr().err


def test_report_options_need_targets_and_apply_with_them(tmp_path, capsys):
    path = make_report().save(tmp_path / "r.json")
    assert main(["report", str(path), "--batch-convention", "global"]) == 2
    assert "--targets" in capsys.readouterr().err
    assert main(["report", str(path), "--targets", "8x H100", "--batch-convention", "global", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["targets"][1]["batch_per_device"] == 4 and data["projection"]["batch_convention"] == "global"
    assert main(["report", str(path), "--targets", "8x H100", "--compile", "reduce-overhead", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["targets"][1]["assumed"]["cuda_graphs"] is True
