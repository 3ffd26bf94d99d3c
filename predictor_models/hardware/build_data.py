"""Regenerate `accelerators.toml` and `prices.toml` from the curated tables in ../shared/data/hardware.

    python -m predictor_models.hardware.build_data [--source DIR]

The shared CSVs carry long provenance notes; the committed TOML keeps short notes, at most three
sources per entry, our canonical names and aliases, which precisions each device lacks, and the few
figures we fill in as labelled estimates (listed in `ESTIMATES` and `POWER_CAP`). Runtime code reads
only the TOML.

The project keeps its own curated additions beside this file, in the shared tables' column layout, each
row with its sources: `curated_accelerators.csv` (entries the shared table lacks: H20, H800, A800, L20,
RTX 4080, RTX 3090 Ti, MI300A, TPU v6e, the 500 W and 96 GB H100 SXM variants) and `curated_prices.csv`
(further dated on-demand listings: GCP machine types, Lambda's 2/4-GPU instances, CoreWeave, RunPod).
They are appended to the shared rows; a curated accelerator never replaces a shared one.

The overlay tables live in `build_overlay`, the per-row readers in `build_rows` and the TOML writers in
`build_toml`; their public names are importable from here too.
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

from predictor_models.hardware.build_overlay import (
    ALIASES,
    DEFAULTS,
    ESTIMATES,
    FP32_MATRIX,
    NETWORK,
    NETWORK_FIELDS,
    NOTES,
    PACKED_FP16,
    POWER_CAP,
    POWER_CAP_POINTS,
    RENAME,
)
from predictor_models.hardware.build_rows import apply_power_caps, power_cap_ratio
from predictor_models.hardware.catalog_cache import write_cache
from predictor_models.hardware.catalog_file import _read_toml
from predictor_models.hardware.build_toml import FIELD_ORDER, TEXT_FIELDS, build_accelerators, build_prices

__all__ = [
    "ALIASES", "CURATED_ACCELERATORS", "CURATED_PRICES", "DEFAULTS", "DEFAULT_SOURCE", "ESTIMATES", "FIELD_ORDER",
    "FP32_MATRIX", "HERE", "NETWORK", "NETWORK_FIELDS", "NOTES", "PACKED_FP16", "POWER_CAP", "POWER_CAP_POINTS",
    "RENAME", "TEXT_FIELDS", "apply_power_caps", "build_accelerators", "build_prices", "main", "power_cap_ratio",
    "with_curated",
]

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE = HERE.parents[2] / "shared" / "data" / "hardware"
CURATED_ACCELERATORS = HERE / "curated_accelerators.csv"
CURATED_PRICES = HERE / "curated_prices.csv"


def with_curated(accelerators: list[dict[str, str]], prices: list[dict[str, str]]
                 ) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The shared rows followed by the project's curated rows (new entries only), power caps applied."""
    with open(CURATED_ACCELERATORS, newline="", encoding="utf-8") as handle:
        extra = list(csv.DictReader(handle))
    known = {r["name"] for r in accelerators}
    clash = sorted(r["name"] for r in extra if r["name"] in known)
    if clash:
        raise SystemExit(f"curated_accelerators.csv repeats shared entries {clash}; edit the shared table instead")
    with open(CURATED_PRICES, newline="", encoding="utf-8") as handle:
        extra_prices = list(csv.DictReader(handle))
    return apply_power_caps(accelerators + extra), prices + extra_prices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--cache-only", action="store_true",
                        help="only rewrite builtin_catalog.json from the TOML files (after editing one by hand)")
    args = parser.parse_args()
    if args.cache_only:
        print(f"wrote {write_cache(HERE / 'accelerators.toml', HERE / 'prices.toml', _read_toml)}")
        return
    with open(args.source / "accelerators.csv", newline="", encoding="utf-8") as handle:
        accelerators = list(csv.DictReader(handle))
    with open(args.source / "prices.csv", newline="", encoding="utf-8") as handle:
        prices = list(csv.DictReader(handle))
    accelerators, prices = with_curated(accelerators, prices)
    (HERE / "accelerators.toml").write_text(build_accelerators(accelerators), encoding="utf-8")
    (HERE / "prices.toml").write_text(build_prices(prices), encoding="utf-8")
    write_cache(HERE / "accelerators.toml", HERE / "prices.toml", _read_toml)   # the parsed files, for a fast load
    print(f"wrote {len(accelerators)} accelerators and {len(prices)} prices to {HERE}")


if __name__ == "__main__":
    main()
