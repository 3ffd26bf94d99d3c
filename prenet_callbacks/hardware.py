"""Public hardware API: the catalog of accelerators, their prices, and the current device.

    from prenet_callbacks import list_hardware, lookup_hardware, current_device
    h100 = lookup_hardware("H100")                 # H100-SXM5 (documented default variant)
    h100.peak_flops(torch.bfloat16)                # dense FLOP/s
    h100.usd_per_hour, h100.price_date             # lowest current on-demand per GPU-hour, and its date

The implementation lives in `predictor_models.hardware`; this module only re-exports it.
"""
from __future__ import annotations

from predictor_models.hardware import (
    Accelerator,
    DeviceInfo,
    HardwareCatalogError,
    MissingFigureError,
    Price,
    Target,
    UnknownHardwareError,
    UnsupportedPrecisionError,
    current_device,
    list_hardware,
    load_catalog,
    lookup_hardware,
    parse_target,
    price_table_date,
)

__all__ = [
    "Accelerator", "DeviceInfo", "HardwareCatalogError", "MissingFigureError", "Price", "Target",
    "UnknownHardwareError", "UnsupportedPrecisionError", "current_device", "list_hardware", "load_catalog",
    "lookup_hardware", "parse_target", "price_table_date",
]
