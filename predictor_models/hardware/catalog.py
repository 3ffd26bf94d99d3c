"""Assemble, override, load and cache the hardware catalog.

The built-in catalog is `accelerators.toml` + `prices.toml` beside this file. An override file (given
as an argument, or named by the `PRENET_HARDWARE` environment variable) adds entries or replaces
fields of existing ones, and may add prices; it uses the same TOML layout. Every validation error
names the file, the entry and the field. Nothing is ever read from the network.

Reading and checking a file lives in `catalog_file`, the `Catalog` object and its lookups in
`catalog_query`, the errors in `catalog_errors`; their public names are importable from here too.
"""
from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path
from typing import Any

from predictor_models.hardware.catalog_errors import (
    AmbiguousHardwareError,
    HardwareCatalogError,
    UnknownHardwareError,
)
from predictor_models.hardware.catalog_file import (
    _USER_PRICE,
    _check_defaults,
    _check_defaults_raw,
    _check_matrix,
    _check_top_level,
    _check_unique_names,
    _new_accelerator,
    _parse_accelerators,
    _parse_prices,
    _read_toml,
    _user_price,
)
from predictor_models.hardware.catalog_query import Catalog
from predictor_models.hardware.names import normal_key, parse_name
from predictor_models.hardware.spec import Price

__all__ = [
    "BUILTIN_ACCELERATORS", "BUILTIN_PRICES", "DATA_DIR", "ENV_VAR", "AmbiguousHardwareError", "Catalog",
    "HardwareCatalogError", "UnknownHardwareError", "apply_override", "builtin_catalog", "default_catalog",
    "family_of", "load_catalog", "price_table_date",
]

ENV_VAR = "PRENET_HARDWARE"
DATA_DIR = Path(__file__).resolve().parent
BUILTIN_ACCELERATORS = DATA_DIR / "accelerators.toml"
BUILTIN_PRICES = DATA_DIR / "prices.toml"


# ---- assembling a catalog from checked files --------------------------------------------------
def _build(acc_path: Path, acc_data: dict[str, Any], price_path: Path, price_data: dict[str, Any]) -> Catalog:
    _check_top_level(acc_path, acc_data)
    _check_top_level(price_path, price_data)
    entries = [_new_accelerator(acc_path, label, fields, user=False)
               for label, fields in _parse_accelerators(acc_path, acc_data)]
    defaults = _check_defaults(acc_path, acc_data, entries)
    prices = _parse_prices(price_path, price_data)
    meta = price_data.get("meta", {})
    table_date = meta.get("table_date") if isinstance(meta, dict) else None
    catalog = Catalog(entries, defaults, str(table_date) if table_date else None, (str(acc_path), str(price_path)))
    return _attach_prices(catalog, price_path, prices)


def _attach_prices(catalog: Catalog, path: Path, prices: list[tuple[str, Price, str]]) -> Catalog:
    by_name: dict[str, list[Price]] = {e.name: list(e.price_list) for e in catalog.entries}
    for label, price, accelerator in prices:
        entry = catalog._index.resolve(accelerator)
        if entry is None:
            raise HardwareCatalogError(path, f"names no catalog entry: {accelerator!r}", entry=label,
                                       field="accelerator")
        by_name[entry.name].append(price)
    entries = [dataclasses.replace(e, price_list=tuple(by_name[e.name])) for e in catalog.entries]
    return Catalog(entries, catalog.defaults, catalog.table_date, catalog.files)


def apply_override(base: Catalog, path: str | Path) -> Catalog:
    """`base` with the entries, field changes and prices of the override file at `path`."""
    path = Path(path).expanduser()
    data = _read_toml(path)
    _check_top_level(path, data)
    entries = list(base.entries)
    positions = {e.name: i for i, e in enumerate(entries)}
    exact = {normal_key(t): e.name for e in entries for t in (e.name, *e.aliases)}
    extra_prices: list[tuple[str, Price, str]] = []
    for label, fields in _parse_accelerators(path, data):
        existing = exact.get(normal_key(fields["name"]))
        if existing is not None:  # replace only the fields given
            values = {k: v for k, v in fields.items() if k not in _USER_PRICE and k != "name"}
            entries[positions[existing]] = _check_matrix(path, label, dataclasses.replace(
                entries[positions[existing]], **values, user_defined=True))
            name = existing
        else:
            entries.append(_new_accelerator(path, label, fields, user=True))
            name = fields["name"]
        price = _user_price(path, fields, name)
        if price is not None:
            extra_prices.append((label, price, name))
    _check_unique_names(path, entries)
    defaults = dict(base.defaults)
    names = {e.name for e in entries}
    for family, target in _check_defaults_raw(path, data).items():
        if target not in names:
            raise HardwareCatalogError(path, f"names no catalog entry: {target!r}", entry="[defaults]", field=family)
        defaults[family] = target
    extra_prices += _parse_prices(path, data)
    merged = Catalog(entries, defaults, base.table_date, base.files + (str(path),))
    return _attach_prices(merged, path, extra_prices)


# ---- loading and caching ----------------------------------------------------------------------
_BUILTIN: Catalog | None = None
_DEFAULT_CACHE: dict[tuple[Any, ...], Catalog] = {}
_WARNED: set[str] = set()


def builtin_catalog() -> Catalog:
    """The catalog shipped with the package (parsed once)."""
    global _BUILTIN
    if _BUILTIN is None:
        from predictor_models.hardware.catalog_cache import parsed_builtin

        acc, prices = parsed_builtin(BUILTIN_ACCELERATORS, BUILTIN_PRICES, _read_toml)   # the JSON cache, if current
        catalog = _build(BUILTIN_ACCELERATORS, acc, BUILTIN_PRICES, prices)
        _check_unique_names(BUILTIN_ACCELERATORS, list(catalog.entries))
        _BUILTIN = catalog
    return _BUILTIN


def load_catalog(path: str | Path | None = None, *, on_error: str = "raise", use_env: bool = True) -> Catalog:
    """The built-in catalog plus the override file `path` (or `$PRENET_HARDWARE` when `path` is None).

    on_error="raise": a broken override raises `HardwareCatalogError` (file, entry and field named).
    on_error="warn": it is reported once with `warnings.warn` and the built-in catalog is returned;
    use this inside training, where a bad file must not stop the run.
    """
    if on_error not in ("raise", "warn"):
        raise ValueError(f"on_error must be 'raise' or 'warn', got {on_error!r}")
    base = builtin_catalog()
    if path is None and use_env:
        path = os.environ.get(ENV_VAR) or None
    if path is None:
        return base
    try:
        return apply_override(base, path)
    except HardwareCatalogError as error:
        if on_error == "raise":
            raise
        message = f"ignoring hardware override ({error}); using the built-in catalog"
        if message not in _WARNED:
            _WARNED.add(message)
            warnings.warn(message, RuntimeWarning, stacklevel=2)
        return base


def default_catalog(on_error: str = "warn") -> Catalog:
    """Cached `load_catalog()` honoring `$PRENET_HARDWARE`; re-read when the variable or the file changes."""
    env = os.environ.get(ENV_VAR) or None
    stamp: Any = None
    if env:
        try:
            stamp = os.stat(env).st_mtime_ns
        except OSError:
            stamp = "missing"
    key = (env, stamp, on_error)
    catalog = _DEFAULT_CACHE.get(key)
    if catalog is None:
        catalog = load_catalog(on_error=on_error)
        _DEFAULT_CACHE.clear()
        _DEFAULT_CACHE[key] = catalog
    return catalog


def price_table_date() -> str | None:
    """Date of the newest price in the built-in price table (show it wherever a cost is shown)."""
    return builtin_catalog().table_date


def family_of(name: str) -> str:
    """The family key a name belongs to ("NVIDIA H100 80GB HBM3" -> "h100")."""
    return parse_name(name).family
