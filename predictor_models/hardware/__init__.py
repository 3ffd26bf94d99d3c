"""Hardware catalog: accelerator specs, dated cloud prices, name resolution, current-device detection.

    from predictor_models.hardware import lookup_hardware, parse_target
    lookup_hardware("h100").peak_flops("bf16")      # 9.895e14 dense FLOP/s
    parse_target("8x H100 SXM5").count              # 8

Module-level functions use the cached default catalog (built-in + `$PRENET_HARDWARE`, where a broken
override warns once and is ignored). Call `load_catalog(path)` to load an override strictly.
"""
from __future__ import annotations

from typing import Any

from predictor_models.hardware.catalog import (
    ENV_VAR,
    Catalog,
    HardwareCatalogError,
    UnknownHardwareError,
    builtin_catalog,
    default_catalog,
    load_catalog,
    price_table_date,
)
from predictor_models.hardware.detect import current_device as _current_device
from predictor_models.hardware.detect import detected_entry
from predictor_models.hardware.prices import PriceChoice, choose_price, default_price, format_price
from predictor_models.hardware.providers import check_provider
from predictor_models.hardware.spec import (
    Accelerator,
    DeviceInfo,
    MissingFigureError,
    Price,
    Target,
    UnsupportedPrecisionError,
    precision_key,
)

__all__ = [
    "Accelerator", "Catalog", "DeviceInfo", "ENV_VAR", "HardwareCatalogError", "MissingFigureError", "Price",
    "PriceChoice", "check_provider", "choose_price",
    "Target", "UnknownHardwareError", "UnsupportedPrecisionError", "builtin_catalog", "current_device",
    "default_catalog", "default_price", "format_price", "list_hardware", "load_catalog", "lookup_hardware",
    "parse_target", "precision_key", "price_table_date",
]


def lookup_hardware(name: str, *, catalog: Catalog | None = None) -> Accelerator:
    """Forgiving lookup ("h100", "NVIDIA A100-SXM4-80GB", "AMD Instinct MI300X"); raises UnknownHardwareError.

    A GPU this process detected (`current_device` on a GPU the catalog lacks) resolves by its name."""
    try:
        return (catalog or default_catalog()).lookup(name)
    except UnknownHardwareError:
        found = detected_entry(name) if isinstance(name, str) else None
        if found is None:
            raise
        return found


def list_hardware(vendor: str | None = None, min_memory_gb: float | None = None, contains: str | None = None,
                  *, catalog: Catalog | None = None) -> list[Accelerator]:
    """Catalog entries, optionally filtered by vendor, minimum memory (GB) and a name substring."""
    return (catalog or default_catalog()).list(vendor=vendor, min_memory_gb=min_memory_gb, contains=contains)


def parse_target(text: str, *, catalog: Catalog | None = None) -> Target:
    """'8x H100' -> Target(8, H100-SXM5); a bare name has count 1; count < 1 raises ValueError."""
    return (catalog or default_catalog()).parse_target(text)


def current_device(catalog: Catalog | None = None, device: Any = None) -> DeviceInfo:
    """The device this process trains on (``device`` None: GPU 0, MPS or the CPU; ``"cuda:1"``: GPU 1;
    ``"cpu"``: the CPU), mapped to the catalog where it is in it, else described from the driver's
    figures (``info.detected``). Never raises."""
    return _current_device(catalog, device)


def __getattr__(name: str) -> Any:  # pragma: no cover - friendly error for typos
    raise AttributeError(f"module 'predictor_models.hardware' has no attribute {name!r}")
