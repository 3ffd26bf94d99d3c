"""DeepBench (Baidu Research, Apache-2.0) training kernels: dense GEMM and convolution forward,
backward-data (dgrad) and backward-filter (wgrad), fp32 and half precision, cuBLAS / cuDNN 6-7.

Read from ``deepbench/DeepBench_NV_<GPU>.xlsx`` (the ``results/train`` workbooks; reading them needs
openpyxl: ``pip install 'prenet-callbacks[data]'``). One sample per kernel:

- GEMM ``C[m,n] = op(A)[m,k] @ op(B)[k,n]``, b = 1; the transposes are only in the name
  (``deepbench:gemm_NT``).
- convolution (op_class ``conv``), three samples per row, each with the FLOPs of that one kernel,
  ``2*N*K*P*Q*C*R*S`` (the count DeepBench's TFLOPS columns use), and its own bytes: forward
  (dims ``backward=0``) reads input + weights and writes the output; dgrad (``backward=1, grad=1``)
  reads grad-output + weights and writes grad-input; wgrad (``backward=1, grad=2``) reads input +
  grad-output and writes grad-weights. DeepBench's columns: W, H input width and height, C input
  channels, N batch, K output channels, R, S filter height and width, pad_h/pad_w, vertical and
  horizontal stride. The output size is computed, ``(H + 2*pad_h - R) // stride_v + 1`` (the
  sheets' own P, Q are fractional in the CUDA 8 workbooks, and the newer ones swap which is
  which); the old and new workbooks order the filter/padding/stride columns differently, and the
  loader reads each by its header.

Sheets and dtypes: ``Results FP32`` (and the TITAN Xp's ``FP32``): float32, no TF32 (pre-Ampere);
``Results - FP16 ip, Mixed math`` (V100, T4: fp16 inputs and outputs, fp32 accumulation, tensor
cores): float16; ``Results - Psuedo FP16`` (P100: fp16 storage, fp32 arithmetic, which is also what
PyTorch's fp16 GEMMs do on a P100): float16, marked ``[pseudo-fp16]`` in the name.

Devices (the ``Specs`` sheets): V100 in a DGX-1, so ``Tesla V100-SXM2-16GB`` (16 or 32 GB is not
said; the clocks are the same); T4 ``Tesla T4`` (its Specs sheet also says DGX-1, copied from the
V100's: no DGX-1 holds T4s); P100, 1080 Ti and TITAN Xp on an ASUS X99-E WS workstation board, so
the P100 is the PCIe card (``Tesla P100-PCIE-16GB``). V100 and T4: CUDA 10.1, cuDNN 7.6; the others
CUDA 8.0, cuDNN 6.0.

Excluded, and counted: kernels whose time is ``N/A*`` (cuDNN 7.6 had no dgrad for the strided
20x5 DeepSpeech filters on V100 and T4), exact duplicates (same device, dtype, kernel and shape:
the GEMM table repeats shapes of several applications; the first is kept). Not loaded: the
recurrent-layer and all-reduce tables (noted in the report).
"""
from __future__ import annotations

import warnings
from pathlib import Path

from predictor_models.op_spec import OpSpec

from .common import DTYPE_BYTES, LoadReport, Sample, gemm_op

SOURCE = "deepbench"

# workbook -> (device name lookup_hardware understands, {sheet: (dtype, pseudo_fp16)})
WORKBOOKS: dict[str, tuple[str, dict[str, tuple[str, bool]]]] = {
    "DeepBench_NV_V100.xlsx": ("Tesla V100-SXM2-16GB", {"Results FP32": ("float32", False),
                                                        "Results - FP16 ip, Mixed math": ("float16", False)}),
    "DeepBench_NV_T4.xlsx": ("Tesla T4", {"Results FP32": ("float32", False),
                                          "Results - FP16 ip, Mixed math": ("float16", False)}),
    "DeepBench_NV_P100.xlsx": ("Tesla P100-PCIE-16GB", {"Results FP32": ("float32", False),
                                                        "Results - Psuedo FP16": ("float16", True)}),
    "DeepBench_NV_1080Ti.xlsx": ("GeForce GTX 1080 Ti", {"Results - FP32": ("float32", False)}),
    "DeepBench_NV_TitanXp.xlsx": ("TITAN Xp", {"FP32": ("float32", False)}),
}

# header text (lower case, stripped) -> field; both workbook layouts
_CONV_HEADERS = {
    "w": "W", "h": "H", "c": "C", "n": "N", "k": "K",
    "r": "R", "r (filter height)": "R", "s": "S", "s (filter width)": "S",
    "pad_h": "pad_h", "pad_w": "pad_w", "vertical stride": "stride_v", "horizontal stride": "stride_h",
    "forward (msec)": "fwd", "wrt inputs (msec)": "dgrad", "wrt parameters (msec)": "wgrad",
    "forward algorithm": "algo",
}
_CONV_KERNELS = ("fwd", "dgrad", "wgrad")
_GEMM_HEADERS = {"m": "M", "n": "N", "k": "K", "a transpose": "ta", "b transpose": "tb", "time (msec)": "ms"}


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def conv_kernel_op(kernel: str, n: float, c: float, k: float, h: float, w: float, r: float, s: float,
                   pad_h: float, pad_w: float, stride_v: float, stride_h: float, dtype: str, *,
                   name: str = "") -> OpSpec:
    """One of the three convolution kernels (``fwd``, ``dgrad``, ``wgrad``), dense, ungrouped."""
    p = (h + 2 * pad_h - r) // stride_v + 1
    q = (w + 2 * pad_w - s) // stride_h + 1
    size = DTYPE_BYTES[dtype]
    x, weights, y = n * c * h * w * size, k * c * r * s * size, n * k * p * q * size
    read, written = {"fwd": (x + weights, y), "dgrad": (y + weights, x), "wgrad": (x + y, weights)}[kernel]
    backward, grad = {"fwd": (0, 0), "dgrad": (1, 1), "wgrad": (1, 2)}[kernel]
    dims = {"n": n, "c_in": c, "c_out": k, "h_in": h, "w_in": w, "h_out": p, "w_out": q, "kh": r, "kw": s,
            "stride": stride_v, "groups": 1, "transposed": 0, "backward": backward, "spatial_dims": 2}
    if grad:
        dims["grad"] = grad
    return OpSpec("conv", dtype, 2.0 * n * k * p * q * c * r * s, read, written, dims, False, name)


def _header_map(row, table: dict[str, str]) -> dict[str, int]:
    out = {}
    for i, cell in enumerate(row):
        if isinstance(cell, str) and cell.strip().lower() in table:
            out.setdefault(table[cell.strip().lower()], i)
    return out


def _sheet_samples(rows: list[tuple], device: str, dtype: str, pseudo: bool, report: LoadReport,
                   seen: set) -> list[Sample]:
    tag = " [pseudo-fp16]" if pseudo else ""
    samples: list[Sample] = []
    section, columns = "", {}
    for row in rows:
        if not row:
            continue
        if row[0] is not None:  # a table title (its header may be on the same row or the next)
            section = str(row[0]).strip().lower()
            columns = {}
            if section.startswith("dense"):
                columns = _header_map(row, _GEMM_HEADERS)
            continue
        if section == "convolution" and not columns:
            columns = _header_map(row, _CONV_HEADERS)
            continue
        if section.startswith("dense") and len(columns) == len(_GEMM_HEADERS):
            m, n, k, ms = (_number(row[columns[key]]) for key in ("M", "N", "K", "ms"))
            if m is None or n is None or k is None:
                continue  # blank or stray cell
            if ms is None or not ms > 0:
                report.exclude("no time (N/A or not positive)")
                continue
            transposes = f"{row[columns['ta']]}{row[columns['tb']]}".replace(" ", "")
            ident = (device, dtype, "gemm", m, n, k, transposes)
            if ident in seen:
                report.exclude("duplicate of a row already loaded")
                continue
            seen.add(ident)
            op = gemm_op(1, m, n, k, dtype, name=f"deepbench:gemm_{transposes}{tag}")
            samples.append(Sample(op, device, ms * 1e-3, SOURCE))
        elif section == "convolution" and len(columns) == len(set(_CONV_HEADERS.values())):
            shape = {key: _number(row[columns[key]]) for key in
                     ("W", "H", "C", "N", "K", "R", "S", "pad_h", "pad_w", "stride_v", "stride_h")}
            if any(v is None for v in shape.values()):
                continue
            algo = row[columns["algo"]]
            for kernel in _CONV_KERNELS:
                ms = _number(row[columns[kernel]])
                if ms is None or not ms > 0:
                    report.exclude(f"conv {kernel}: no time (N/A or not positive)")
                    continue
                ident = (device, dtype, kernel) + tuple(shape.values())
                if ident in seen:
                    report.exclude("duplicate of a row already loaded")
                    continue
                seen.add(ident)
                name = f"deepbench:conv_{kernel}{tag}" + (f" {algo}" if kernel == "fwd" and algo else "")
                op = conv_kernel_op(kernel, shape["N"], shape["C"], shape["K"], shape["H"], shape["W"],
                                    shape["R"], shape["S"], shape["pad_h"], shape["pad_w"], shape["stride_v"],
                                    shape["stride_h"], dtype, name=name)
                samples.append(Sample(op, device, ms * 1e-3, SOURCE))
    return samples


def load(data_dir: str | Path) -> tuple[list[Sample], LoadReport]:
    """Load the DeepBench training-kernel workbooks under ``data_dir/deepbench``."""
    root = Path(data_dir) / "deepbench"
    if not root.is_dir():
        raise FileNotFoundError(f"{root} not found")
    try:
        import openpyxl
    except ImportError:
        # FileNotFoundError so that `load_all` reports the source as not loaded instead of failing
        raise FileNotFoundError("reading the DeepBench workbooks needs openpyxl: "
                                "pip install 'prenet-callbacks[data]'") from None
    report = LoadReport(SOURCE)
    report.notes.append("cuBLAS/cuDNN kernel times (ms, no framework); V100/T4 CUDA 10.1 cuDNN 7.6, "
                        "P100/1080 Ti/TITAN Xp CUDA 8.0 cuDNN 6.0; fp16 = fp16 inputs, fp32 accumulation "
                        "(tensor cores on V100/T4; fp32 arithmetic on P100: '[pseudo-fp16]')")
    report.notes.append("recurrent-layer (vanilla, LSTM, GRU) and all-reduce tables not loaded")
    report.notes.append("convolution: forward, dgrad (dims grad=1) and wgrad (grad=2) as separate samples")
    samples: list[Sample] = []
    seen: set = set()
    for filename, (device, sheets) in WORKBOOKS.items():
        path = root / filename
        if not path.is_file():
            report.notes.append(f"{filename} not found")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Unknown extension is not supported and will be removed"
            book = openpyxl.load_workbook(path, read_only=True, data_only=True)
            try:
                for sheet, (dtype, pseudo) in sheets.items():
                    if sheet not in book.sheetnames:
                        report.notes.append(f"{filename}: no sheet {sheet!r}")
                        continue
                    rows = list(book[sheet].iter_rows(values_only=True))
                    samples.extend(_sheet_samples(rows, device, dtype, pseudo, report, seen))
            finally:
                book.close()
    report.kept = len(samples)
    return samples, report
