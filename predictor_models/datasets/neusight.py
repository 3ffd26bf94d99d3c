"""NeuSight (ASPLOS'25, MIT licence) single-op forward latencies, FP32 without TF32, PyTorch 2.1.

Kept: bmm, linear, conv2d, softmax, layernorm and 11 elementwise ops from
``data/dataset/train/collect/<op>/p2.1.0/<GPU>.csv``, ``data/dataset/train/elem.csv`` and the
``data/dataset/test/*.csv`` files (the test files add L4, H100 and A100-80GB). Latency is in ms.
Excluded, and counted: AMD ROCm files (another software stack; not used), rows whose shape or
latency does not parse or is not positive, and exact duplicates (same GPU, op and shape; the
first is kept) since the merged ``train/*.csv`` files repeat rows of the per-GPU files.
Device names are NeuSight's (``"Tesla T4"``); `lookup_hardware` maps them to the catalog.
"""
from __future__ import annotations

import csv
from pathlib import Path

from .common import LoadReport, Sample, conv_op, elementwise_op, gemm_op, norm_op

SOURCE = "neusight"
DTYPE = "float32"
_BINARY = {"add", "mul", "pow", "div"}
_UNARY = {"addu": "add_scalar", "mulu": "mul_scalar", "powu": "pow_scalar", "divu": "div_scalar",
          "relu": "relu", "gelu": "gelu", "tanh": "tanh"}


def _files(root: Path) -> list[Path]:
    base = root / "data" / "dataset"
    files = sorted((base / "train" / "collect").glob("*/p2.1.0/*.csv"))
    files += sorted((base / "train").glob("*.csv")) + sorted((base / "test").glob("*.csv"))
    return files


def _op_from_row(row: dict):
    name = row["OPName"]
    f = lambda key: float(row[key])  # noqa: E731
    if name == "bmm":
        return ("bmm", f("B"), f("M"), f("N"), f("K")), gemm_op(f("B"), f("M"), f("K"), f("N"), DTYPE, name="aten::bmm")
    if name == "linear":
        m = f("B") * f("M")
        return (("linear", f("B"), f("M"), f("N"), f("K")),
                gemm_op(1, m, f("K"), f("N"), DTYPE, bias=True, weight_shared=True, name="aten::addmm"))
    if name == "conv":
        key = ("conv",) + tuple(f(k) for k in ("B", "Input_Channel", "Output_Channel", "Kernel_Szie",
                                               "Input_Size", "Stride", "Padding"))
        _, n, cin, cout, k, size, stride, pad = key
        if (size + 2 * pad - k) < 0:
            return key, None
        return key, conv_op(n, cin, cout, size, size, k, k, stride, pad, DTYPE, name="aten::convolution")
    if name in ("softmax", "ln"):
        aten = "aten::_softmax" if name == "softmax" else "aten::native_layer_norm"
        return (name, f("B"), f("H")), norm_op(f("B"), f("H"), DTYPE, name=aten)
    if name in _BINARY:
        return (name, f("B"), f("H")), elementwise_op(f("B") * f("H"), 2, DTYPE, name=f"aten::{name}")
    if name in _UNARY:
        return (name, f("B"), f("H")), elementwise_op(f("B") * f("H"), 1, DTYPE, name=f"aten::{_UNARY[name]}")
    return (name,), None


def load(data_dir: str | Path) -> tuple[list[Sample], LoadReport]:
    """Load every NeuSight kernel-level NVIDIA measurement under ``data_dir/neusight``."""
    root = Path(data_dir) / "neusight"
    if not root.is_dir():
        raise FileNotFoundError(f"{root} not found")
    report = LoadReport(SOURCE)
    report.notes.append("FP32 without TF32 (cudnn.allow_tf32=False), PyTorch 2.1, CUDA-event latency incl. launch")
    report.notes.append("AMD MI100/MI210 kernel sets not used (ROCm stack; GEMM training files missing upstream)")
    samples: list[Sample] = []
    seen: set = set()
    for path in _files(root):
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle):
                try:
                    key, op = _op_from_row(row)
                    ms = float(row["Latency"])
                except (KeyError, ValueError, TypeError):
                    report.exclude("unparseable row")
                    continue
                if op is None:
                    report.exclude(f"unsupported or invalid op ({row.get('OPName')})")
                    continue
                if not ms > 0:
                    report.exclude("non-positive latency")
                    continue
                device = row["Device"].strip()
                ident = (device,) + key
                if ident in seen:
                    report.exclude("duplicate of a row already loaded")
                    continue
                seen.add(ident)
                samples.append(Sample(op, device, ms * 1e-3, SOURCE))
    report.kept = len(samples)
    return samples, report
