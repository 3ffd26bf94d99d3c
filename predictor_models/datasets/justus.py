"""Justus et al. 2018 (CDECatapult ml-performance-prediction, Apache-2.0): TensorFlow 1.x conv2d and
dense layer timings, FP32, on K40, K80, M60, GTX 1080 Ti, P100 and V100.

Kept: forward-only rows (``optimizer == 0``) as one conv / GEMM op each (TF 'same'/'valid' padding
for ``padding`` 1/0), median time. These include TensorFlow's session overhead, bias and activation.
Excluded, and counted: training-step rows (optimizer != 0: forward + backward + update fused in one
number, not one op), rows with a non-positive time or an empty output, rows of a GPU the catalog
does not know (filtered later by the trainer). Device names: the folder name (``1080ti`` -> GTX 1080 Ti);
the P100 and V100 variants are not recorded upstream (we assume PCIe 16 GB and SXM2 16 GB).
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

from .common import LoadReport, Sample, conv_op, gemm_op

SOURCE = "justus"
DEVICES = {"K40": "K40", "k80": "K80", "M60": "M60", "1080ti": "GTX 1080 Ti", "P100": "P100-PCIe-16GB",
           "V100": "V100-SXM2-16GB"}


def _row_op(kind: str, row: dict):
    if kind == "dense":
        b, din, dout = float(row["batchsize"]), float(row["dim_input"]), float(row["dim_output"])
        return gemm_op(1, b, dout, din, "float32", bias=True, weight_shared=True, name="aten::addmm")
    n, cin, cout = float(row["batchsize"]), float(row["channels_in"]), float(row["channels_out"])
    k, size, stride = float(row["kernelsize"]), float(row["matsize"]), float(row["strides"])
    same = row["padding"].strip() == "1"
    out = math.ceil(size / stride) if same else math.ceil((size - k + 1) / stride)
    if out <= 0:
        return None
    pad = max(0.0, ((out - 1) * stride + k - size) / 2) if same else 0.0
    return conv_op(n, cin, cout, size, size, k, k, stride, pad, "float32", name="aten::convolution",
                   out_size=(out, out))


def load(data_dir: str | Path) -> tuple[list[Sample], LoadReport]:
    """Load the forward-only layer timings."""
    root = Path(data_dir) / "ml_performance_prediction_CDECatapult" / "prediction_model" / "data" / "raw_data"
    if not root.is_dir():
        raise FileNotFoundError(f"{root} not found")
    report = LoadReport(SOURCE)
    report.notes.append("TensorFlow 1.x, FP32, wall clock per sess.run iteration (includes framework overhead)")
    samples: list[Sample] = []
    for path in sorted(root.glob("*/*/benchmark_*.csv")):
        device = DEVICES.get(path.parts[-3])
        kind = "dense" if "dense" in path.name else "conv"
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle):
                if row.get("optimizer", "0").strip() != "0":
                    report.exclude("training-step row (fwd+bwd+update, not one op)")
                    continue
                try:
                    op = _row_op(kind, row)
                    ms = float(row["timeUsed_median"])
                except (KeyError, ValueError):
                    report.exclude("unparseable row")
                    continue
                if op is None or not ms > 0 or device is None:
                    report.exclude("empty output, non-positive time or unknown GPU folder")
                    continue
                samples.append(Sample(op, device, ms * 1e-3, SOURCE))
    report.kept = len(samples)
    return samples, report
