"""FP8 GEMM rates from OpenXLA's measured matmul table (Apache-2.0), as a shipped achievable-rate table.

The predictor is trained on bf16/fp32 rows only (`xla_tables` leaves the fp8 rows out). FP8 GEMMs are
priced from their bf16 twin instead: time(fp8) = predicted time(bf16) / (fp8 rate / bf16 rate), the
ratio measured by XLA at the same shape on the same GPU (`prenet_callbacks.projection.pricing.fp8_rates`).
This module turns the raw table into that ratio table:

- devices: sm_90 (H100 SXM) and sm_100_B200 (B200), 375 shapes each: b in {1,2,4}, m, n, k in
  {256 ... 4096};
- per device and shape, TFLOP/s of ``bf16xbf16->bf16``, ``f8e4m3fnxf8e4m3fn->bf16`` (torchao's forward
  GEMM: input and weight in e4m3) and ``f8e5m2xf8e4m3fn->bf16`` (its backward GEMMs: grad_output in e5m2).

Rebuild with ``python -m predictor_models.datasets.fp8_rates --data ../shared/data``.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from .xla_tables import DEVICES

TABLE_FILE = Path(__file__).resolve().parent.parent / "pretrained" / "fp8_gemm_rates.json"
SCHEMA = "prenet-fp8-gemm-rates/1"
GRID = {"b": [1, 2, 4], "m": [256, 512, 1024, 2048, 4096], "n": [256, 512, 1024, 2048, 4096],
        "k": [256, 512, 1024, 2048, 4096]}
COLUMNS = {"bf16": "bf16xbf16->bf16", "fp8_e4m3": "f8e4m3fnxf8e4m3fn->bf16",
           "fp8_e5m2_e4m3": "f8e5m2xf8e4m3fn->bf16"}
SOURCE = {
    "name": "OpenXLA GPU cost-model matmul table (xla/service/gpu/model/matmul_interpolator_data.h)",
    "licence": "Apache-2.0", "repository": "https://github.com/openxla/xla (copy used: ROCm/xla)",
    "commit": "62edde4be67bf0154635595852e44079423997df",
    "file": "xla_gpu_perf_tables/xla_matmul_perf_table_DERIVED.csv",
}


def build(data_dir: str | Path) -> dict:
    """The ratio table as a JSON-ready dict (TFLOP/s per column, grid order b, m, n, k)."""
    path = Path(data_dir) / SOURCE["file"]
    wanted = {v: k for k, v in COLUMNS.items()}
    rates: dict[str, dict[str, dict[tuple, float]]] = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            device = DEVICES.get(row["device_key"])
            column = wanted.get(row["dtype"])
            if device is None or column is None:
                continue
            key = tuple(int(row[c]) for c in "bmnk")
            rates.setdefault(device, {}).setdefault(column, {})[key] = float(row["flops_per_sec"]) / 1e12
    devices = {}
    for device, columns in sorted(rates.items()):
        devices[device] = {}
        for column in COLUMNS:
            values = columns.get(column, {})
            grid = [values.get((b, m, n, k)) for b in GRID["b"] for m in GRID["m"] for n in GRID["n"]
                    for k in GRID["k"]]
            if any(v is None or not v > 0 for v in grid):
                raise ValueError(f"{path}: {device} {column} lacks grid points")
            devices[device][column] = [round(v, 2) for v in grid]
    return {"schema": SCHEMA, "source": SOURCE, "grid": GRID, "columns": COLUMNS, "tflops": devices}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the raw data folder (e.g. ../shared/data)")
    parser.add_argument("--out", default=str(TABLE_FILE), help=f"output JSON (default {TABLE_FILE})")
    args = parser.parse_args(argv)
    table = build(args.data)
    Path(args.out).write_text(json.dumps(table, separators=(",", ":")) + "\n")
    print(f"wrote {args.out}: {', '.join(table['tflops'])}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
