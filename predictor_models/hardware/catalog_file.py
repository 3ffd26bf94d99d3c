"""Read and validate a catalog or override TOML file: every error names the file, the entry and the field."""
from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any, Mapping

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from predictor_models.hardware.catalog_errors import HardwareCatalogError
from predictor_models.hardware.names import normal_key
from predictor_models.hardware.prices import USER_PROVIDER
from predictor_models.hardware.spec import PRECISIONS, Accelerator, Price


# ---- schema -----------------------------------------------------------------------------------
_REQUIRED_NUMBERS = ("memory_gb", "memory_bandwidth_gbs")
_OPTIONAL_NUMBERS = (
    "boost_clock_mhz", "l2_cache_mb", "tdp_w", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops",
    "fp8_tflops", "fp64_tflops", "fp32_matrix_tflops", "interconnect_bandwidth_gbs", "network_gbps_per_gpu",
)
_INTEGERS = ("sm_count", "pcie_gen", "release_year", "max_gpus_per_node")
_TEXTS = ("name", "vendor", "architecture", "interconnect", "compute_capability", "kind", "notes",
          "form_factor", "memory_type", "network")
_LISTS = ("sources", "aliases", "unsupported", "estimated", "network_sources")
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


def _check_defaults(path: Path, data: dict[str, Any], entries: list[Accelerator]) -> dict[str, str]:
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise HardwareCatalogError(path, "[defaults] must be a table of family = entry name")
    names = {e.name for e in entries}
    for family, target in defaults.items():
        if target not in names:
            raise HardwareCatalogError(path, f"names no catalog entry: {target!r}", entry="[defaults]", field=family)
    return dict(defaults)


def _check_unique_names(path: Path, entries: list[Accelerator]) -> None:
    owner: dict[str, str] = {}
    for entry in entries:
        for text in (entry.name, *entry.aliases):
            key = normal_key(text)
            if key in owner and owner[key] != entry.name:
                raise HardwareCatalogError(path, f"{text!r} is already a name of {owner[key]!r}",
                                           entry=f"accelerator {entry.name!r}", field="aliases")
            owner[key] = entry.name


def _check_defaults_raw(path: Path, data: dict[str, Any]) -> dict[str, str]:
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict) or not all(isinstance(v, str) for v in defaults.values()):
        raise HardwareCatalogError(path, "[defaults] must be a table of family = entry name")
    return defaults
