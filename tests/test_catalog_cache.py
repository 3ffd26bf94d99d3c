"""The built-in catalog's parsed-TOML cache: current in the repository, used only while it matches its files."""
from __future__ import annotations

import shutil

from predictor_models.hardware import catalog
from predictor_models.hardware.catalog_cache import CACHE_NAME, parsed_builtin, write_cache
from predictor_models.hardware.catalog_file import _read_toml


def test_the_committed_cache_matches_the_toml_files():
    calls = []

    def parse(path):
        calls.append(path)
        return _read_toml(path)

    acc, prices = parsed_builtin(catalog.BUILTIN_ACCELERATORS, catalog.BUILTIN_PRICES, parse)
    assert not calls, ("predictor_models/hardware/builtin_catalog.json is stale (a TOML file changed): run "
                       "`python -m predictor_models.hardware.build_data --cache-only` and commit it")
    assert acc == _read_toml(catalog.BUILTIN_ACCELERATORS) and prices == _read_toml(catalog.BUILTIN_PRICES)


def test_an_edited_toml_file_is_parsed_not_read_from_the_cache(tmp_path):
    acc, prices = tmp_path / "accelerators.toml", tmp_path / "prices.toml"
    shutil.copy(catalog.BUILTIN_ACCELERATORS, acc)
    shutil.copy(catalog.BUILTIN_PRICES, prices)
    write_cache(acc, prices, _read_toml)
    parsed = []

    def parse(path):
        parsed.append(path.name)
        return _read_toml(path)

    assert parsed_builtin(acc, prices, parse)[0] == _read_toml(acc) and not parsed   # current: the cache
    acc.write_text(acc.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    parsed_builtin(acc, prices, parse)
    assert parsed == ["accelerators.toml", "prices.toml"]                               # stale: the TOML
    (tmp_path / CACHE_NAME).write_text("{not json", encoding="utf-8")
    parsed_builtin(acc, prices, parse)
    assert parsed[-2:] == ["accelerators.toml", "prices.toml"]                          # unreadable: the TOML
