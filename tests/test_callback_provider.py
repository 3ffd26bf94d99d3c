"""``provider=`` on the integrations: validated at construction, and the live report's target rows are
priced with that provider's listings (``project_report(provider=...)``)."""
from __future__ import annotations

import pytest

import lightning.pytorch as pl

from prenet_callbacks import PreNeTCallback, Tracker
from prenet_callbacks.session.arguments import validate_session_config
from tests.lightning_helpers import TinyModule, loaders, trainer

_BASE = dict(warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=5, report_path=None,
             targets=["H100"], print_report=False, profile_layers=True)


def test_a_lightning_fit_prices_its_rows_with_the_provider(tmp_path):
    callback = PreNeTCallback(report_path=tmp_path / "r.json", warmup_steps=1, profile_steps=1, timing_steps=3,
                              metrics_every_n_steps=5, targets=["H100"], print_report=False, html=False,
                              provider="lambda")
    assert callback.config.provider == "Lambda"   # as the price table spells it
    pl.seed_everything(0, verbose=False)
    trainer(tmp_path, [callback], max_steps=12).fit(TinyModule(), *loaders(train_batches=12))
    rows = [row for row in callback.report.targets if not row.get("current")]
    assert [row["name"] for row in rows] == ["H100-SXM5"]
    assert rows[0]["price_provider"] == "Lambda"


def test_the_default_is_the_cheapest_listing():
    assert validate_session_config(**_BASE).provider is None


@pytest.mark.parametrize("make", [
    lambda: PreNeTCallback(targets=["H100"], provider="Lamda"),
    lambda: Tracker(total_steps=10, provider="Lamda"),
    lambda: validate_session_config(**_BASE, provider=3),
])
def test_an_unknown_provider_fails_at_construction_listing_the_known_ones(make):
    with pytest.raises(ValueError, match=r"provider.*Lambda"):
        make()
