"""`prenet hardware`: list the hardware catalog (rich table or JSON), or show one entry.

    prenet hardware                          # the whole catalog
    prenet hardware --vendor amd --min-memory 64
    prenet hardware --contains h100 --json
    prenet hardware "NVIDIA A100-SXM4-80GB"  # one entry in detail, with all its prices
    prenet hardware --detect                 # this machine's GPU: its catalog entry, or what was detected
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from predictor_models.hardware import Accelerator, load_catalog
from predictor_models.hardware.prices import format_price
from predictor_models.hardware.spec import PRECISIONS

_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "hardware", help="list the hardware catalog", description="List the hardware catalog or show one entry."
    )
    parser.add_argument("name", nargs="?", help="show one accelerator in detail (forgiving name, e.g. 'h100')")
    parser.add_argument("--vendor", help="only this vendor (NVIDIA, AMD, Google)")
    parser.add_argument("--min-memory", type=float, metavar="GB", help="only devices with at least this memory")
    parser.add_argument("--contains", "--name-contains", dest="contains", metavar="TEXT",
                        help="only names containing TEXT (case, spaces and hyphens ignored)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--catalog", metavar="FILE",
                        help="override file adding/replacing entries (default: $PRENET_HARDWARE)")
    parser.add_argument("--detect", action="store_true",
                        help="describe this machine's GPU (or CPU): its catalog entry, or the figures read from the "
                             "driver for a GPU the catalog lacks")
    parser.add_argument("--device", default=None, help="with --detect: the device to describe, e.g. cuda:1")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.device is not None and not args.detect:
        raise ValueError("--device is read with --detect only; pass --detect --device cuda:1")
    if args.detect:
        if args.name is not None:
            raise ValueError("--detect describes this machine's device; leave NAME out (or drop --detect)")
        return _detect(load_catalog(args.catalog, on_error="raise"), args.device, as_json=args.json)
    if args.name is not None and not args.name.strip():
        raise ValueError("the accelerator NAME is empty; give a name such as 'H100', or leave NAME out to list "
                         "the whole catalog")
    catalog = load_catalog(args.catalog, on_error="raise")
    if args.name is not None:
        entry = catalog.lookup(args.name)
        if args.json:
            print(json.dumps(entry.to_dict(), indent=2))
        else:
            _print_detail(entry)
        return 0
    if args.min_memory is not None and (math.isnan(args.min_memory) or args.min_memory < 0):
        raise ValueError(f"--min-memory must be >= 0, got {args.min_memory:g}")
    entries = catalog.list(vendor=args.vendor, min_memory_gb=args.min_memory, contains=args.contains)
    if args.json:
        print(json.dumps({"price_table_date": catalog.table_date,
                          "accelerators": [e.to_dict() for e in entries]}, indent=2))
        return 0
    if not entries:
        print("no hardware matches these filters", file=sys.stderr)
        return 0
    _print_table(entries, catalog.table_date)
    return 0


def _detect(catalog, device: str | None, *, as_json: bool) -> int:
    """Print what `current_device` finds: the device, and its entry (from the catalog or detected)."""
    from predictor_models.hardware import current_device
    from predictor_models.hardware.detected import to_toml

    info = current_device(catalog, device)
    entry = info.accelerator
    if as_json:
        print(json.dumps({"kind": info.kind, "name": info.name, "index": info.index, "count": info.count,
                          "memory_gib": info.memory_gb, "cpu_cores": info.cpu_cores, "detected": info.detected,
                          "catalog_name": entry.name if entry is not None and not info.detected else None,
                          "accelerator": entry.to_dict() if entry is not None else None}, indent=2))
        return 0
    where = f" (GPU {info.index} of {info.count})" if info.index is not None else ""
    if entry is None:
        print(f"{info.kind}: {info.name}{where}, {info.cpu_cores} CPU cores; no GPU entry "
              + ("(a GPU whose figures could not be read: describe it with --catalog FILE)" if info.kind != "cpu"
                 else "(no GPU visible to torch)"))
        return 0
    how = ("not in the catalog: figures detected from the driver" if info.detected else "catalog entry")
    print(f"{info.kind}: {info.name}{where} -> {entry.name} ({how})")
    _print_detail(entry)
    if info.detected:
        print("To use this entry in another process or on another machine, save it as an override file:\n")
        print(to_toml(entry))
    return 0


# ---- formatting --------------------------------------------------------------------------------
def format_tflops(value: float | None) -> str:
    """989.5 -> '989 TFLOPS', 19.5 -> '19.5 TFLOPS', 0.473 -> '0.47 TFLOPS'."""
    if value is None:
        return "-"
    if value >= 100:
        number = f"{math.floor(value):,d}"
    elif value >= 10:
        number = f"{value:.1f}".rstrip("0").rstrip(".")
    else:
        number = f"{value:.2f}".rstrip("0").rstrip(".")
    return f"{number} TFLOPS"


def format_gb(value: float | None, unit: str = "GB") -> str:
    if value is None:
        return "-"
    return f"{value:,.0f} {unit}" if value >= 10 or float(value).is_integer() else f"{value:.1f} {unit}"


def _flops_cell(entry: Accelerator, key: str) -> str:
    value = getattr(entry, f"{key}_tflops")
    if value is None:
        return "n/a" if key in entry.unsupported else "-"
    return ("~" if key in entry.estimated else "") + format_tflops(value)


def _link(e: Accelerator) -> str:
    """The GPU-to-GPU link in one short cell: the NVLink/fabric part of the text, with its bandwidth."""
    if not e.interconnect:
        return "-"
    parts = [p.strip() for p in e.interconnect.split(";")]
    fabric = [p for p in parts if any(w in p for w in ("NVLink", "Infinity", "ICI", "xGMI"))]
    text = (fabric or parts)[0]
    return f"{text}, {format_gb(e.interconnect_bandwidth_gbs, 'GB/s')}" if e.interconnect_bandwidth_gbs else text


def _console():
    from rich.console import Console

    # Piped output has no terminal width; keep rows on one line rather than 80 columns of wrap.
    return Console(width=None if sys.stdout.isatty() else 220, soft_wrap=False)


def _print_table(entries: list[Accelerator], table_date: str | None) -> None:
    from rich.table import Table

    table = Table(title=f"Hardware catalog ({len(entries)} accelerators)", title_justify="left",
                  caption=(f"Dense peaks (no sparsity); GeForce fp16/bf16/fp8 use FP32 accumulate. ~ estimate, "
                           f"n/a not supported, - unknown. Price: lowest current on-demand USD per GPU-hour "
                           f"(table dated {table_date})."), caption_justify="left")
    for header, justify in (("Name", "left"), ("Vendor", "left"), ("Memory", "right"), ("Bandwidth", "right"),
                            ("FP32", "right"), ("TF32", "right"), ("BF16", "right"), ("FP16", "right"),
                            ("FP8", "right"), ("Interconnect", "left"), ("Year", "right"), ("Price", "right")):
        table.add_column(header, justify=justify, no_wrap=header != "Interconnect")
    for e in entries:
        table.add_row(e.name, e.vendor, format_gb(e.memory_gb), format_gb(e.memory_bandwidth_gbs, "GB/s"),
                      *(_flops_cell(e, k) for k in _DTYPES), _link(e), str(e.release_year or "-"),
                      format_price(e.default_price))
    _console().print(table)


def _print_detail(e: Accelerator) -> None:
    from rich.table import Table

    table = Table(title=f"{e.name} ({e.vendor} {e.architecture})", title_justify="left", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    rows = [
        ("Aliases", ", ".join(e.aliases) or "-"), ("Kind / form factor", f"{e.kind} / {e.form_factor or '-'}"),
        ("Compute capability", e.compute_capability or "-"), ("Release year", str(e.release_year or "-")),
        ("Memory", f"{format_gb(e.memory_gb)} {e.memory_type or ''}".strip()),
        ("Memory bandwidth", format_gb(e.memory_bandwidth_gbs, "GB/s")),
        ("SMs / CUs", str(e.sm_count or "-")), ("Boost clock", f"{e.boost_clock_mhz:g} MHz" if e.boost_clock_mhz else "-"),
        ("L2 cache", f"{e.l2_cache_mb:g} MB" if e.l2_cache_mb else "-"), ("TDP", f"{e.tdp_w:g} W" if e.tdp_w else "-"),
    ]
    rows += [(f"{k.upper()} dense", _flops_cell(e, k)) for k in PRECISIONS]
    rows += [
        ("Interconnect", f"{e.interconnect or '-'}"
         + (f" ({format_gb(e.interconnect_bandwidth_gbs, 'GB/s')} bidirectional)" if e.interconnect_bandwidth_gbs else "")),
        ("PCIe", f"Gen{e.pcie_gen}" if e.pcie_gen else "-"),
        ("Default price", format_price(e.default_price)),
        ("Notes", e.notes or "-"), ("Sources", "\n".join(e.sources) or "-"),
    ]
    for label, value in rows:
        table.add_row(label, value)
    console = _console()
    console.print(table)
    if e.prices:
        prices = Table(title="Listed on-demand prices", title_justify="left")
        for header in ("Provider", "Instance", "GPUs", "USD/GPU-h", "Region", "Date"):
            prices.add_column(header)
        for p in sorted(e.prices, key=lambda p: (p.price_date, p.provider), reverse=True):
            prices.add_row(p.provider, p.instance_type + (" (GPU only)" if p.gpu_only else ""),
                           str(p.gpus_per_instance), f"${p.usd_per_gpu_hour:,.2f}", p.region or "-", p.price_date)
        console.print(prices)
