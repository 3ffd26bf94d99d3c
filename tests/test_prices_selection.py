"""Which listing prices a row: the GPU-count rule, provider choice, user prices, notes; on fixture price
tables only (a refresh of the shipped prices must not break these)."""
from __future__ import annotations

import json
import textwrap

import pytest
import torch

from predictor_models.hardware import catalog as catalog_module
from predictor_models.hardware import lookup_hardware
from predictor_models.hardware.prices import choose_price
from predictor_models.hardware.providers import check_provider, known_providers
from predictor_models.hardware.spec import Price
from prenet_callbacks.projection.rows.cost import run_cost


def _p(provider, n, usd, date="2026-01-01", gpu_only=False, instance=None):
    return Price(provider, instance or f"{n}x-{provider.lower()}", n, usd, "any", date, "fixture", gpu_only=gpu_only)


TABLE = (
    _p("AlphaCloud", 1, 2.00), _p("AlphaCloud", 8, 1.50), _p("AlphaCloud", 8, 0.10, date="2025-01-01"),
    _p("BetaCloud", 8, 1.20, date="2026-02-01"), _p("BetaCloud", 4, 1.10, date="2026-02-01"),
    _p("GammaCloud", 1, 0.50, gpu_only=True),
)


def test_a_row_takes_the_cheapest_current_listing_of_its_gpu_count():
    assert choose_price(TABLE, 8).price == TABLE[3]            # Beta 1.20; Alpha's 2025 0.10 is history
    one = choose_price(TABLE, 1)
    assert one.price == TABLE[0] and one.exact and not one.note  # GPU-only 0.50 loses to a full machine
    assert choose_price(TABLE, 4).price == TABLE[4]


def test_without_an_instance_of_that_size_the_closest_size_is_used_and_said():
    only_eight = (_p("BetaCloud", 8, 3.00),)
    choice = choose_price(only_eight, 1)
    assert choice.price == only_eight[0] and not choice.exact
    assert "no 1-GPU instance" in choice.note and "BetaCloud's 8-GPU" in choice.note
    assert choose_price(TABLE, 2).price.gpus_per_instance == 1   # 1 and 4 are both 1 away: the smaller
    assert choose_price(TABLE, 16).price == TABLE[3]              # largest instance, cheapest of that size


def test_a_provider_keeps_its_own_listings_case_insensitively():
    assert choose_price(TABLE, 8, "alphacloud").price == TABLE[1]
    assert choose_price(TABLE, 1, "BETACLOUD").price.provider == "BetaCloud"   # its smallest: the 4-GPU one
    assert choose_price(TABLE, 8, "DeltaCloud").price is None


def test_gpu_only_prices_are_used_when_nothing_else_is_listed():
    only = (_p("GammaCloud", 1, 0.5, gpu_only=True),)
    assert choose_price(only, 1).price == only[0]


def test_user_price_wins_unless_a_provider_is_asked_for():
    table = TABLE + (Price("user", "", 1, 0.9, "", "2026-03-01", "user file"),)
    assert choose_price(table, 8).price.provider == "user"
    assert choose_price(table, 8, "AlphaCloud").price == TABLE[1]


def test_provider_names_are_checked_against_the_table():
    class Entry:
        price_list = TABLE

    entries = [Entry()]
    assert known_providers(entries) == ["AlphaCloud", "BetaCloud", "GammaCloud"]
    assert check_provider("betacloud", entries) == "BetaCloud"
    assert check_provider(None, entries) is None
    with pytest.raises(ValueError, match="unknown provider 'Nope'.*AlphaCloud, BetaCloud, GammaCloud"):
        check_provider("Nope", entries)


# ---- the same rules through the catalog, estimate() and the CLI, on a fixture price table -----------
FIXTURE_PRICES = textwrap.dedent("""
    [meta]
    table_date = "2026-02-01"
    oldest_date = "2025-06-01"
    currency = "USD"
    """) + "".join(textwrap.dedent(f"""
    [[price]]
    accelerator = "{acc}"
    provider = "{prov}"
    instance_type = "{inst}"
    gpus_per_instance = {n}
    usd_per_instance_hour = {usd * n}
    usd_per_gpu_hour = {usd}
    region = "any"
    price_date = "{date}"
    source = "fixture"
    """) for acc, prov, inst, n, usd, date in [
    ("H100-SXM5", "AlphaCloud", "a-1", 1, 2.0, "2026-01-01"), ("H100-SXM5", "AlphaCloud", "a-8", 8, 1.5, "2026-01-01"),
    ("H100-SXM5", "BetaCloud", "b-8", 8, 1.2, "2026-02-01"), ("H200-SXM", "BetaCloud", "b-h200-8", 8, 3.0, "2025-06-01"),
])


@pytest.fixture
def fixture_prices(tmp_path, monkeypatch):
    path = tmp_path / "prices.toml"
    path.write_text(FIXTURE_PRICES)
    monkeypatch.delenv(catalog_module.ENV_VAR, raising=False)
    monkeypatch.setattr(catalog_module, "BUILTIN_PRICES", path)
    monkeypatch.setattr(catalog_module, "_BUILTIN", None)
    catalog_module._DEFAULT_CACHE.clear()
    yield path
    catalog_module._DEFAULT_CACHE.clear()


def test_run_cost_names_the_listing_and_multi_node_rows_match_per_node(fixture_prices):
    h100 = lookup_hardware("H100")
    cost = run_cost(h100, 16, 3600.0, gpus_per_node=8)
    assert (cost.provider, cost.instance, cost.instance_gpus, cost.price_date) == ("BetaCloud", "b-8", 8, "2026-02-01")
    assert cost.total_usd == pytest.approx(16 * 1.2)
    none = run_cost(lookup_hardware("B200"), 8, 3600.0, provider="BetaCloud")
    assert none.total_usd is None and "BetaCloud lists no B200 (no provider lists it)" in none.note
    h200 = run_cost(lookup_hardware("H200"), 8, 3600.0, provider="AlphaCloud")
    assert h200.total_usd is None and "listed by BetaCloud" in h200.note


def _estimate(**kwargs):
    from prenet_callbacks import estimate

    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256))
    return estimate(model, torch.empty(64, 256, device="meta"), targets=["H100", "8x H100", "H200", "B200"],
                    steps=1000, **kwargs)


def test_estimate_rows_say_which_listing_and_provider_choice_follows(fixture_prices):
    rows = {r["label"]: r for r in _estimate().rows}
    assert (rows["H100-SXM5"]["price_provider"], rows["H100-SXM5"]["price_instance"]) == ("AlphaCloud", "a-1")
    assert rows["8x H100-SXM5"]["price_provider"] == "BetaCloud" and rows["8x H100-SXM5"]["usd_per_gpu_hour"] == 1.2
    h200 = rows["H200-SXM"]
    assert h200["price_instance_gpus"] == 8 and any("no 1-GPU instance" in n for n in h200["notes"])
    assert rows["B200"]["usd_per_gpu_hour"] is None and rows["B200"]["price_provider"] is None
    alpha = {r["label"]: r for r in _estimate(provider="alphacloud").rows}
    assert alpha["8x H100-SXM5"]["price_provider"] == "AlphaCloud" and alpha["8x H100-SXM5"]["usd_per_gpu_hour"] == 1.5
    assert alpha["H200-SXM"]["total_usd"] is None
    assert any("AlphaCloud lists no H200-SXM" in n for n in alpha["H200-SXM"]["notes"])
    with pytest.raises(ValueError, match="unknown provider 'Nope'; the price table knows: AlphaCloud, BetaCloud"):
        _estimate(provider="Nope")


def test_the_table_shows_how_old_the_used_prices_are(fixture_prices):
    text = _estimate().table()
    assert "prices dated 2025-06-01 to 2026-02-01" in text      # oldest listing used: the H200's
    assert "H200-SXM: price: no 1-GPU instance listed" in text


def test_user_price_file_still_wins(fixture_prices, tmp_path, monkeypatch):
    override = tmp_path / "mine.toml"
    override.write_text('[[accelerator]]\nname = "H100-SXM5"\nusd_per_hour = 0.9\nprice_date = "2026-03-01"\n')
    monkeypatch.setenv(catalog_module.ENV_VAR, str(override))
    catalog_module._DEFAULT_CACHE.clear()
    rows = {r["label"]: r for r in _estimate().rows}
    assert rows["8x H100-SXM5"]["price_provider"] == "user" and rows["8x H100-SXM5"]["usd_per_gpu_hour"] == 0.9
    assert {r["label"]: r for r in _estimate(provider="BetaCloud").rows}["8x H100-SXM5"]["usd_per_gpu_hour"] == 1.2


def test_cli_provider_option_on_estimate_and_report(fixture_prices, tmp_path, monkeypatch, capsys):
    from prenet_callbacks.cli import main
    from tests.projection_fixtures import importable_models, make_report

    models = importable_models(tmp_path, monkeypatch, "from torch import nn\n\ndef mlp():\n    return nn.Linear(64, 64)\n",
                               "price_models_for_test")
    assert main(["estimate", f"{models}:mlp", "-i", "32,64", "-t", "8x H100", "--provider", "AlphaCloud",
                 "--steps", "100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["provider"] == "AlphaCloud" and data["targets"][0]["price_instance"] == "a-8"
    assert main(["estimate", f"{models}:mlp", "-i", "32,64", "--provider", "nope"]) == 2
    assert "unknown provider" in capsys.readouterr().err
    path = tmp_path / "r.json"
    make_report().save(path)
    assert main(["report", str(path), "--targets", "8x H100", "--provider", "betacloud", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["targets"]
    assert [r["price_provider"] for r in rows if not r["current"]] == ["BetaCloud"]
    assert main(["report", str(path), "--provider", "betacloud"]) == 2   # a re-projection option without --targets


def test_the_table_says_who_priced_each_row():
    from prenet_callbacks.projection.rows.cost import listing_label

    assert listing_label("Lambda", "8x NVIDIA H100 SXM", "2026-09-20") == "Lambda 8x NVIDIA H100 SXM, 2026-09-20"
    assert listing_label("Lambda", "8x NVIDIA H100 SXM", "2026-09-20", instance_chars=0) == "Lambda, 2026-09-20"
    assert listing_label(None, None, None) == "—"
    import torch
    from torch import nn

    from prenet_callbacks import estimate

    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256))
    est = estimate(model, torch.empty(64, 256, device="meta"), targets=["H100"], steps=10)
    row = est.rows[0]
    text = est.table(width=160)
    assert "priced by" in text and f"{row['price_provider']}, {row['price_date']}" in text
