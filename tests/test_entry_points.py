"""Every entry point accepts what the docs name and refuses the rest at once, with the same words.

One table of target strings and one of precision names, driven through the Lightning callback, the
Hugging Face callback, `Tracker`, `estimate()` and both CLIs: each string is accepted everywhere or
refused everywhere (a `ValueError` at construction, exit code 2 on the command line).
"""
from __future__ import annotations

import textwrap

import pytest
import torch
from torch import nn

from integrations.lightning import PreNeTCallback
from integrations.loop import Tracker
from prenet_callbacks import estimate
from prenet_callbacks.cli import main
from tests.projection_fixtures import importable_models, make_report

ACCEPTED = ["H100", "8x H100", "4x8 H100", "2x8 H100 @ 200G", "16x H100", "A100, 8x H100", "default", "2x8 A100",
            "8x H100 tp=8", "4x8 H100 tp=8 pp=4 microbatches=8", "2x8 A100 tp=4 pp=2 dp=2 sp interleaved"]
REFUSED = ["H1000", "13x H100", "9x H100", "16x RTX 4090", "2x8 RTX 4090", "0x H100", "H100 @ 100G", " ",
           "8x H100 tp=3", "8x H100 tp=4 dp=4", "8x H100 sp", "8x H100 tp=8 interleaved"]


def _lightning(target: str, tmp_path) -> None:
    PreNeTCallback(targets=[target], report_path=tmp_path / "r.json")


def _transformers(target: str, tmp_path) -> None:
    from integrations.transformers import PreNeTTrainerCallback

    PreNeTTrainerCallback(targets=[target], report_path=tmp_path / "r.json")


def _tracker(target: str, tmp_path) -> None:
    Tracker(10, targets=[target], report_path=tmp_path / "r.json", print_report=False).close()


def _estimate(target: str, tmp_path) -> None:
    with torch.device("meta"):
        model = nn.Linear(8, 8)
    estimate(model, torch.empty(4, 8, device="meta"), targets=[target])


def _cli_estimate(target: str, tmp_path, models: str) -> int:
    return main(["estimate", f"{models}:mlp", "--input", "4,8", "--targets", target])


def _cli_report(target: str, tmp_path) -> int:
    path = make_report().save(tmp_path / "report.json")
    return main(["report", str(path), "--targets", target])


MODELS = textwrap.dedent("""
    from torch import nn

    def mlp():
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
""")


@pytest.fixture
def models(tmp_path, monkeypatch):
    return importable_models(tmp_path, monkeypatch, MODELS, "entry_point_models")


@pytest.mark.parametrize("target", ACCEPTED)
def test_every_entry_point_accepts(target, tmp_path, models, capsys):
    for build in (_lightning, _transformers, _tracker, _estimate):
        build(target, tmp_path)
    assert _cli_estimate(target, tmp_path, models) == 0
    assert _cli_report(target, tmp_path) == 0


@pytest.mark.parametrize("target", REFUSED)
def test_every_entry_point_refuses_at_once(target, tmp_path, models, capsys):
    messages = []
    for build in (_lightning, _transformers, _tracker, _estimate):
        with pytest.raises(ValueError) as error:
            build(target, tmp_path)
        messages.append(str(error.value))
    assert _cli_estimate(target, tmp_path, models) == 2
    assert _cli_report(target, tmp_path) == 2
    assert len(set(messages)) == 1, f"the entry points explain {target!r} differently: {messages}"


@pytest.mark.parametrize("precision,canonical", [("bf16", "bf16-mixed"), ("bf16-mixed", "bf16-mixed"),
                                                 ("16", "16-mixed"), ("32", "32-true"), ("16-true", "16-true")])
def test_precision_names_agree(precision, canonical, tmp_path, models, capsys):
    tracker = Tracker(10, precision=precision, report_path=tmp_path / "r.json", print_report=False)
    tracker.close()
    assert tracker.report.current["precision"] == canonical
    with torch.device("meta"):
        model = nn.Linear(8, 8)
    est = estimate(model, torch.empty(4, 8, device="meta"), targets=[], precision=precision)
    assert est.to_dict()["precision"] == canonical
    assert main(["estimate", f"{models}:mlp", "--input", "4,8", "--targets", "A100", "--precision", precision]) == 0


@pytest.mark.parametrize("precision", ["fp12", "bf17-mixed", ""])
def test_bad_precision_is_refused_everywhere(precision, tmp_path, models, capsys):
    with pytest.raises(ValueError, match="precision"):
        Tracker(10, precision=precision, report_path=tmp_path / "r.json", print_report=False)
    with torch.device("meta"):
        model = nn.Linear(8, 8)
    with pytest.raises(ValueError, match="precision"):
        estimate(model, torch.empty(4, 8, device="meta"), targets=[], precision=precision)
    assert main(["estimate", f"{models}:mlp", "--input", "4,8", "--precision", precision]) == 2


@pytest.mark.parametrize("argument,value", [("print_report", "yes"), ("profile_layers", None),
                                            ("print_report", 1), ("html", "yes")])
def test_flags_must_be_booleans(argument, value, tmp_path):
    with pytest.raises(ValueError, match=argument):
        PreNeTCallback(report_path=tmp_path / "r.json", **{argument: value})
    with pytest.raises(ValueError, match=argument):
        Tracker(10, report_path=tmp_path / "r.json", **{argument: value})


def test_an_unwritable_report_path_fails_at_construction():
    for build in (lambda: PreNeTCallback(report_path="/proc/prenet/report.json"),
                  lambda: Tracker(10, report_path="/proc/prenet/report.json")):
        with pytest.raises(ValueError, match="not writable"):
            build()


def test_eval_batches_errors_speak_of_batches(tmp_path):
    with pytest.raises(ValueError, match=r"batches per evaluation"):
        Tracker(100, eval_every=10, eval_batches=0, report_path=tmp_path / "r.json")
