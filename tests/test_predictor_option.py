"""Choosing the predictor: a `Predictor` or the path of a ``predictor.json`` from ``prenet train``
(e.g. retrained with your own GPU's measurements), in `estimate`, the callback and the CLI."""
import json

import pytest
import torch

from lightning_helpers import TinyModule, loaders, trainer
from predictor_models.predictor import Predictor, load_predictor, save_predictor
from prenet_callbacks import PreNeTCallback, estimate
from prenet_callbacks.projection.pricing.predictor_source import load_predictor_option
from tests.model_zoo import MLP


@pytest.fixture(scope="module")
def bound_only_folder(tmp_path_factory):
    """A valid artifact with no trained class: every op is its bound / 0.5 (slower than the shipped one)."""
    folder = tmp_path_factory.mktemp("mine")
    save_predictor(Predictor({}, {"version": "mine-1"}), folder)
    return folder


def test_option_accepts_none_a_predictor_a_folder_and_a_file(bound_only_folder):
    assert load_predictor_option(None) is None
    shipped = load_predictor()
    assert load_predictor_option(shipped) is shipped
    assert load_predictor_option(bound_only_folder).metadata["version"] == "mine-1"
    assert load_predictor_option(str(bound_only_folder / "predictor.json")).metadata["version"] == "mine-1"


@pytest.mark.parametrize("value, words", [
    ("{tmp}/missing", ["missing", "not found", "predictor_models.train", "--out"]),
    ("{tmp}/corrupt.json", ["corrupt.json", "not JSON"]),
    (42, ["42", "predictor.json"]),
    ("  ", ["predictor.json"]),
])
def test_bad_predictor_is_a_clear_error(tmp_path, value, words):
    (tmp_path / "corrupt.json").write_text("{not json")
    value = value.format(tmp=tmp_path) if isinstance(value, str) else value
    with pytest.raises(ValueError) as error:
        load_predictor_option(value)
    for word in words:
        assert word in str(error.value), (word, str(error.value))


def test_estimate_uses_the_chosen_predictor(bound_only_folder):
    with torch.device("meta"):
        model = MLP()
    x = torch.empty(64, 32, device="meta")
    shipped = estimate(model, x, targets=["A100"])
    mine = estimate(model, x, targets=["A100"], predictor=bound_only_folder)
    # the device phases differ (a step this small is host-bound: the host's issue time is the same)
    device = lambda est: est.row("A100")["phases_s"]["forward"] + est.row("A100")["phases_s"]["backward"]  # noqa: E731
    assert device(mine) != pytest.approx(device(shipped), rel=0.05)


def test_callback_rejects_a_bad_predictor_at_construction(tmp_path):
    with pytest.raises(ValueError, match="predictor: predictor artifact .*nothing.*not found"):
        PreNeTCallback(predictor=tmp_path / "nothing")


def test_callback_projects_with_the_chosen_predictor(tmp_path, bound_only_folder):
    callback = PreNeTCallback(predictor=bound_only_folder, targets=["T4"], print_report=False,
                              warmup_steps=1, profile_steps=1, timing_steps=2, report_path=tmp_path / "r.json")
    train, val = loaders(train_batches=12)
    trainer(tmp_path, [callback], max_epochs=1).fit(TinyModule(), train, val)
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["projection"]["predictor"] == "mine-1"
    assert [row["name"] for row in saved["targets"] if not row.get("current")] == ["T4"]
