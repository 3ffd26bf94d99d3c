"""Load, validate and query the hardware catalog.

The built-in catalog is `accelerators.toml` + `prices.toml` beside this file. An override file (given
as an argument, or named by the `PRENET_HARDWARE` environment variable) adds entries or replaces
fields of existing ones, and may add prices; it uses the same TOML layout. Every validation error
names the file, the entry and the field. Nothing is ever read from the network.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import re
import warnings
from pathlib import Path
from typing import Any, Iterator, Mapping

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from predictor_models.hardware.names import NameIndex, normal_key, parse_name
from predictor_models.hardware.prices import USER_PROVIDER
from predictor_models.hardware.spec import PRECISIONS, Accelerator, Price, Target

ENV_VAR = "PRENET_HARDWARE"
DATA_DIR = Path(__file__).resolve().parent
BUILTIN_ACCELERATORS = DATA_DIR / "accelerators.toml"
BUILTIN_PRICES = DATA_DIR / "prices.toml"


class UnknownHardwareError(ValueError):
    """A name that resolves to no catalog entry; the message lists the closest known names."""

    def __init__(self, name: str, closest: list[str], hint: str = "") -> None:
        self.name = name
        self.closest = closest
        listed = f"; closest: {', '.join(closest)}" if closest else ""
        super().__init__(f"unknown hardware {name!r}{listed}{hint}")


class AmbiguousHardwareError(UnknownHardwareError):
    """A name that fits several catalog entries equally; the message lists them."""

    def __init__(self, name: str, fits: list[str]) -> None:
        ValueError.__init__(self, f"hardware {name!r} fits {len(fits)} catalog entries: {', '.join(fits)}; "
                                  "name one of them")
        self.name, self.closest = name, fits


class HardwareCatalogError(ValueError):
    """A catalog or override file is malformed. The message names the file, the entry and the field."""

    def __init__(self, path: str | Path, message: str, *, entry: str | None = None, field: str | None = None):
        self.path, self.entry, self.field = str(path), entry, field
        where = [str(path)]
        if entry:
            where.append(entry)
        if field:
            where.append(f"field {field!r}")
        super().__init__(": ".join(where) + ": " + message)


# ---- schema -----------------------------------------------------------------------------------
_REQUIRED_NUMBERS = ("memory_gb", "memory_bandwidth_gbs")
_OPTIONAL_NUMBERS = (
    "boost_clock_mhz", "l2_cache_mb", "tdp_w", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops",
    "fp8_tflops", "fp64_tflops", "fp32_matrix_tflops", "interconnect_bandwidth_gbs",
)
_INTEGERS = ("sm_count", "pcie_gen", "release_year")
_TEXTS = ("name", "vendor", "architecture", "interconnect", "compute_capability", "kind", "notes",
          "form_factor", "memory_type")
_LISTS = ("sources", "aliases", "unsupported", "estimated")
_USER_PRICE = ("usd_per_hour", "price_date")
_ACCELERATOR_FIELDS = set(_REQUIRED_NUMBERS + _OPTIONAL_NUMBERS + _INTEGERS + _TEXTS + _LISTS + _USER_PRICE)
_PRICE_FIELDS = {"accelerator", "provider", "instance_type", "gpus_per_instance", "usd_per_instance_hour",
                 "usd_per_gpu_hour", "region", "price_date", "source", "notes", "gpu_only"}
_TOP_LEVEL = {"accelerator", "price", "defaults", "meta"}
_KINDS = ("gpu", "tpu")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _suggest(key: str, known: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise HardwareCatalogError(path, "file not found") from None
    except tomllib.TOMLDecodeError as error:
        raise HardwareCatalogError(path, f"not valid TOML ({error})") from None
    except OSError as error:
        raise HardwareCatalogError(path, f"cannot read ({error.strerror or error})") from None


def _check_value(path: Path, entry: str, key: str, value: Any) -> Any:
    """Type- and range-check one accelerator field; returns the normalised value."""

    def fail(message: str) -> HardwareCatalogError:
        return HardwareCatalogError(path, message, entry=entry, field=key)

    if key in _REQUIRED_NUMBERS or key in _OPTIONAL_NUMBERS or key == "usd_per_hour":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail(f"must be a number, got {value!r}")
        if not value > 0 or value != value or value == float("inf"):
            raise fail(f"must be a positive number, got {value!r}")
        return float(value)
    if key in _INTEGERS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(f"must be an integer, got {value!r}")
        low = 1990 if key == "release_year" else 1
        if not low <= value <= (2100 if key == "release_year" else 100_000):
            raise fail(f"out of range: {value!r}")
        return value
    if key in _LISTS:
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise fail(f"must be a list of non-empty strings, got {value!r}")
        if key in ("unsupported", "estimated"):
            bad = [v for v in value if v not in PRECISIONS]
            if bad:
                raise fail(f"unknown precision {bad[0]!r}; known: {', '.join(PRECISIONS)}")
        return tuple(v.strip() for v in value)
    if key == "price_date":
        return _check_date(path, entry, key, value)
    # text fields
    if key == "compute_capability" and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = f"{value:.1f}"  # 8.0 written without quotes
    if not isinstance(value, str):
        raise fail(f"must be a string, got {value!r}")
    if key in ("name", "vendor") and not value.strip():
        raise fail("must not be empty")
    if key == "kind" and value not in _KINDS:
        raise fail(f"must be one of {', '.join(_KINDS)}, got {value!r}")
    return value.strip()


def _check_date(path: Path, entry: str, key: str, value: Any) -> str:
    if isinstance(value, _dt.date):
        value = value.isoformat()
    if not isinstance(value, str) or not _DATE.match(value):
        raise HardwareCatalogError(path, f"must be a date YYYY-MM-DD, got {value!r}", entry=entry, field=key)
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        raise HardwareCatalogError(path, f"not a real date: {value!r}", entry=entry, field=key) from None
    return value


def _entry_label(index: int, raw: Mapping[str, Any]) -> str:
    name = raw.get("name")
    return f"[[accelerator]] #{index + 1} {name!r}" if isinstance(name, str) else f"[[accelerator]] #{index + 1}"


def _parse_accelerators(path: Path, data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Checked field dicts (only the keys present), with the label each error should carry."""
    raw_entries = data.get("accelerator", [])
    if not isinstance(raw_entries, list):
        raise HardwareCatalogError(path, "'accelerator' must be an array of tables: write [[accelerator]]")
    out: list[tuple[str, dict[str, Any]]] = []
    seen: dict[str, str] = {}
    for index, raw in enumerate(raw_entries):
        label = _entry_label(index, raw)
        if not isinstance(raw, dict):
            raise HardwareCatalogError(path, "must be a table", entry=label)
        if "name" not in raw:
            raise HardwareCatalogError(path, "missing", entry=label, field="name")
        fields: dict[str, Any] = {}
        for key, value in raw.items():
            if key not in _ACCELERATOR_FIELDS:
                raise HardwareCatalogError(path, "unknown field" + _suggest(key, _ACCELERATOR_FIELDS),
                                           entry=label, field=key)
            fields[key] = _check_value(path, label, key, value)
        key = normal_key(fields["name"])
        if key in seen:
            raise HardwareCatalogError(path, f"duplicate name (same as {seen[key]})", entry=label, field="name")
        seen[key] = label
        out.append((label, fields))
    return out


def _new_accelerator(path: Path, label: str, fields: dict[str, Any], *, user: bool) -> Accelerator:
    for key in ("vendor", *_REQUIRED_NUMBERS):
        if key not in fields:
            raise HardwareCatalogError(path, "missing (required for a new entry)", entry=label, field=key)
    if not any(fields.get(k) for k in ("fp32_tflops", "fp16_tflops", "bf16_tflops")):
        raise HardwareCatalogError(path, "a new entry needs at least one of fp32_tflops, fp16_tflops, bf16_tflops",
                                   entry=label, field="fp32_tflops")
    if not user and not fields.get("sources"):
        raise HardwareCatalogError(path, "missing (every built-in entry cites its sources)", entry=label,
                                   field="sources")
    values = {k: v for k, v in fields.items() if k not in _USER_PRICE}
    values.setdefault("architecture", "")
    if user:
        values.setdefault("sources", (f"user file {path}",))
        values["user_defined"] = True
    return _check_matrix(path, label, Accelerator(**values))


def _check_matrix(path: Path, label: str, entry: Accelerator) -> Accelerator:
    """`fp32_matrix_tflops` is the faster matrix-core path: never below the vector FP32 peak."""
    if entry.fp32_matrix_tflops is not None and entry.fp32_tflops is not None \
            and entry.fp32_matrix_tflops < entry.fp32_tflops:
        raise HardwareCatalogError(path, f"{entry.fp32_matrix_tflops:g} is below fp32_tflops "
                                   f"({entry.fp32_tflops:g}); give the FP32 matrix-core peak, or leave the field "
                                   "out where FP32 GEMMs run at the vector rate", entry=label,
                                   field="fp32_matrix_tflops")
    return entry


def _user_price(path: Path, fields: dict[str, Any], name: str) -> Price | None:
    if "usd_per_hour" not in fields:
        return None
    date = fields.get("price_date") or _dt.date.today().isoformat()
    return Price(USER_PROVIDER, "", 1, fields["usd_per_hour"], "", date, f"user file {path}")


def _parse_prices(path: Path, data: dict[str, Any]) -> list[tuple[str, Price, str]]:
    raw_prices = data.get("price", [])
    if not isinstance(raw_prices, list):
        raise HardwareCatalogError(path, "'price' must be an array of tables: write [[price]]")
    out = []
    for index, raw in enumerate(raw_prices):
        label = f"[[price]] #{index + 1}"
        if not isinstance(raw, dict):
            raise HardwareCatalogError(path, "must be a table", entry=label)
        for key in raw:
            if key not in _PRICE_FIELDS:
                raise HardwareCatalogError(path, "unknown field" + _suggest(key, _PRICE_FIELDS), entry=label, field=key)
        for key in ("accelerator", "provider", "usd_per_gpu_hour", "price_date"):
            if key not in raw:
                raise HardwareCatalogError(path, "missing", entry=label, field=key)
        usd = raw["usd_per_gpu_hour"]
        if isinstance(usd, bool) or not isinstance(usd, (int, float)) or not usd > 0:
            raise HardwareCatalogError(path, f"must be a positive number, got {usd!r}", entry=label,
                                       field="usd_per_gpu_hour")
        gpus = raw.get("gpus_per_instance", 1)
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise HardwareCatalogError(path, f"must be an integer >= 1, got {gpus!r}", entry=label,
                                       field="gpus_per_instance")
        for key in ("accelerator", "provider", "instance_type", "region", "source", "notes"):
            if key in raw and not isinstance(raw[key], str):
                raise HardwareCatalogError(path, f"must be a string, got {raw[key]!r}", entry=label, field=key)
        price = Price(
            provider=raw["provider"], instance_type=raw.get("instance_type", ""), gpus_per_instance=gpus,
            usd_per_gpu_hour=float(usd), region=raw.get("region", ""),
            price_date=_check_date(path, label, "price_date", raw["price_date"]),
            source=raw.get("source", f"user file {path}"), notes=raw.get("notes", ""),
            gpu_only=bool(raw.get("gpu_only", False)),
        )
        out.append((label, price, raw["accelerator"]))
    return out


def _check_top_level(path: Path, data: dict[str, Any]) -> None:
    for key in data:
        if key not in _TOP_LEVEL:
            raise HardwareCatalogError(path, f"unknown top-level key {key!r}{_suggest(key, _TOP_LEVEL)}")


# ---- the catalog ------------------------------------------------------------------------------
class Catalog:
    """An immutable set of accelerators with forgiving name lookup."""

    def __init__(self, entries: list[Accelerator], defaults: dict[str, str], table_date: str | None,
                 files: tuple[str, ...]) -> None:
        self.entries: tuple[Accelerator, ...] = tuple(entries)
        self.defaults = dict(defaults)
        self.table_date = table_date
        self.files = files
        self._index = NameIndex(self.entries, self.defaults)

    def __iter__(self) -> Iterator[Accelerator]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def vendors(self) -> list[str]:
        return sorted({e.vendor for e in self.entries})

    def resolve(self, name: str, *, memory_hint_gb: float | None = None) -> Accelerator | None:
        """Forgiving lookup that returns None instead of raising."""
        return self._index.resolve(name, memory_hint_gb=memory_hint_gb)

    def lookup(self, name: str) -> Accelerator:
        """Forgiving lookup; raises `UnknownHardwareError` listing the closest names."""
        _check_name(name)
        if not name.strip():
            raise UnknownHardwareError(str(name), [], " (empty name; `prenet hardware` lists the catalog)")
        found = self._index.matches(name)
        if not found:
            if _TARGET.match(name):
                raise UnknownHardwareError(name, [], " (a node target such as '8x H100' is read by parse_target)")
            raise UnknownHardwareError(name, self._index.closest(name))
        if len(found) > 1:
            raise AmbiguousHardwareError(name, [e.name for e in found])
        return found[0]

    def list(self, vendor: str | None = None, min_memory_gb: float | None = None,
             contains: str | None = None) -> list[Accelerator]:
        """Entries in catalog order, filtered by vendor, minimum memory and a name substring."""
        entries = list(self.entries)
        if vendor is not None:
            if not isinstance(vendor, str):
                raise ValueError(f"vendor must be a string such as {self.vendors[0]!r} or None, got {vendor!r} "
                                 f"({type(vendor).__name__}); known vendors: {', '.join(self.vendors)}")
            wanted = vendor.strip().lower()
            if wanted not in {v.lower() for v in self.vendors}:
                raise ValueError(f"unknown vendor {vendor!r}; known: {', '.join(self.vendors)}")
            entries = [e for e in entries if e.vendor.lower() == wanted]
        if min_memory_gb is not None:
            if isinstance(min_memory_gb, bool) or not isinstance(min_memory_gb, (int, float)):
                raise ValueError(f"min_memory_gb must be a number of GB such as 40, or None, got {min_memory_gb!r} "
                                 f"({type(min_memory_gb).__name__})")
            if not min_memory_gb >= 0:
                raise ValueError(f"min_memory_gb must be >= 0, got {min_memory_gb!r}")
            entries = [e for e in entries if e.memory_gb >= min_memory_gb]
        if contains is not None and not isinstance(contains, str):
            raise ValueError(f"contains must be a string such as 'h100', or None, got {contains!r} "
                             f"({type(contains).__name__})")
        if contains:
            needle = _squash(contains)
            entries = [e for e in entries if any(needle in _squash(t) for t in (e.name, *e.aliases))]
        return entries

    def parse_target(self, text: str) -> Target:
        """'8x H100', '8 x H100 SXM5', '8xH100' or 'H100' (count 1) -> Target."""
        _check_name(text, "hardware target")
        match = _TARGET.match(text)
        if match:
            count = int(match.group(1))
            if count < 1:
                raise ValueError(f"device count must be >= 1 in {text!r}")
            return Target(count, self.lookup(match.group(2)))
        return Target(1, self.lookup(text))


def _check_name(name: Any, what: str = "hardware name") -> None:
    """A name that is not a string is an unknown name (an `UnknownHardwareError`, so a ValueError)."""
    if not isinstance(name, str):
        raise UnknownHardwareError(str(name), [], f" (a {what} must be a string such as 'H100' or '8x A100', "
                                                  f"got {type(name).__name__}; `prenet hardware` lists the catalog)")


_TARGET = re.compile(r"^\s*([-+]?\d+)\s*[x×*]\s*(\S.*)$", re.IGNORECASE)


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


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


def _check_defaults(path: Path, data: dict[str, Any], entries: list[Accelerator]) -> dict[str, str]:
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise HardwareCatalogError(path, "[defaults] must be a table of family = entry name")
    names = {e.name for e in entries}
    for family, target in defaults.items():
        if target not in names:
            raise HardwareCatalogError(path, f"names no catalog entry: {target!r}", entry="[defaults]", field=family)
    return dict(defaults)


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


def _check_unique_names(path: Path, entries: list[Accelerator]) -> None:
    owner: dict[str, str] = {}
    for entry in entries:
        for text in (entry.name, *entry.aliases):
            key = normal_key(text)
            if key in owner and owner[key] != entry.name:
                raise HardwareCatalogError(path, f"{text!r} is already a name of {owner[key]!r}",
                                           entry=f"accelerator {entry.name!r}", field="aliases")
            owner[key] = entry.name


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


def _check_defaults_raw(path: Path, data: dict[str, Any]) -> dict[str, str]:
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict) or not all(isinstance(v, str) for v in defaults.values()):
        raise HardwareCatalogError(path, "[defaults] must be a table of family = entry name")
    return defaults


# ---- loading and caching ----------------------------------------------------------------------
_BUILTIN: Catalog | None = None
_DEFAULT_CACHE: dict[tuple[Any, ...], Catalog] = {}
_WARNED: set[str] = set()


def builtin_catalog() -> Catalog:
    """The catalog shipped with the package (parsed once)."""
    global _BUILTIN
    if _BUILTIN is None:
        acc = _read_toml(BUILTIN_ACCELERATORS)
        prices = _read_toml(BUILTIN_PRICES)
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
