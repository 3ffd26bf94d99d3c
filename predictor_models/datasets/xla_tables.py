"""OpenXLA GPU cost-model GEMM tables (Apache-2.0), H100 (sm_90) and B200, derived CSV.

Kept: ``bf16xbf16->bf16`` (tensor cores) and ``f32xf32->f32`` rows. XLA runs f32 dots on TF32
tensor cores by default (the table's f32 peak, ~400 TFLOP/s on H100, is far above the 67 TFLOP/s
FP32 rate), so those rows are labelled float32 with ``tf32=True``.
Excluded: fp8 rows (no fp8 op class in this predictor yet). Times are ``2*b*m*n*k / flops_per_sec``.
Devices: sm_90 is an H100 SXM (the hlo profile table names it "NVIDIA H100 80GB HBM3"); sm_100_B200 is B200.
"""
from __future__ import annotations

import csv
from pathlib import Path

from .common import LoadReport, Sample, gemm_op

SOURCE = "xla"
DEVICES = {"sm_90": "H100-SXM5", "sm_100_B200": "B200"}
DTYPES = {"bf16xbf16->bf16": ("bfloat16", False), "f32xf32->f32": ("float32", True)}


def load(data_dir: str | Path) -> tuple[list[Sample], LoadReport]:
    """Load the XLA matmul perf table as GEMM samples."""
    path = Path(data_dir) / "xla_gpu_perf_tables" / "xla_matmul_perf_table_DERIVED.csv"
    report = LoadReport(SOURCE)
    samples: list[Sample] = []
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["dtype"] not in DTYPES:
                report.exclude("fp8 GEMM (not modelled)")
                continue
            device = DEVICES.get(row["device_key"])
            if device is None:
                report.exclude("unknown device key")
                continue
            dtype, tf32 = DTYPES[row["dtype"]]
            b, m, n, k = (float(row[c]) for c in "bmnk")
            rate = float(row["flops_per_sec"])
            if not rate > 0:
                report.exclude("non-positive rate")
                continue
            op = gemm_op(b, m, n, k, dtype, tf32=tf32, name="aten::bmm" if b > 1 else "aten::mm")
            samples.append(Sample(op, device, 2.0 * b * m * n * k / rate, SOURCE))
    report.kept = len(samples)
    return samples, report
