"""FP8 GEMM time on a target: the bf16 twin's predicted time divided by a measured fp8/bf16 rate ratio.

The predictor learnt bf16 and fp32 GEMMs only. An FP8 GEMM (``torch._scaled_mm``, dtype ``float8``)
is priced as the same GEMM in bf16 on the same GPU, sped up by ``r = fp8 rate / bf16 rate``:

- GPUs in the shipped table (`predictor_models/pretrained/fp8_gemm_rates.json`, built from OpenXLA's
  measured matmul table: H100-SXM5 and B200): ``r`` as measured at the GEMM's shape (interpolated in
  log2 of b, m, n, k; clamped to the grid, whose largest side is 4096), never above the catalog's
  FP8/BF16 peak ratio -- the fp8 GEMM is never credited with a higher share of its peak than bf16 has
  (on H100 the table's fp8 rows exceed the dense FP8 peak at large shapes, up to 131%);
- other FP8 GPUs (H200, H20, L4, L40S, RTX 4090, MI300X, ...): the catalog's FP8 peak x the bf16
  achieved fraction the predictor gives for that GEMM there, i.e. ``r`` = FP8/BF16 peak ratio, times
  the shape efficiency the nearest table GPU measured (H100-SXM5; B200 for Blackwell), which is 1 for
  large GEMMs and below 1 for small ones, where fp8's gain vanishes.

An fp8 GEMM is never faster than its own bound (FLOPs / FP8 peak + launch latency).
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Sequence

import numpy as np

from predictor_models.op_spec import OpSpec
from predictor_models.predictor.bound import LAUNCH_S

TABLE = "fp8_gemm_rates.json"
E5M2 = 1.0   # dims["kind"] of an fp8 GEMM whose first operand is e5m2 (torchao's grad_output)


@lru_cache(maxsize=1)
def rate_table() -> dict:
    """The shipped table (see `predictor_models.datasets.fp8_rates`)."""
    from importlib import resources

    return json.loads(resources.files("predictor_models").joinpath("pretrained", TABLE).read_text())


@lru_cache(maxsize=8)
def _log_ratio(device: str, column: str) -> np.ndarray:
    """log(fp8 rate / bf16 rate) on the (b, m, n, k) grid of a table device."""
    table = rate_table()
    grid = table["grid"]
    shape = tuple(len(grid[a]) for a in "bmnk")
    rates = table["tflops"][device]
    return np.log(np.array(rates[column]) / np.array(rates["bf16"])).reshape(shape)


def _interpolate(cube: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """Multilinear interpolation of `cube` at (n, 4) shapes b, m, n, k, in log2, clamped to the grid."""
    grid = rate_table()["grid"]
    coords = []
    for axis, name in enumerate("bmnk"):
        lo = np.log2(grid[name][0])
        pos = np.clip(np.log2(np.maximum(dims[:, axis], 1.0)) - lo, 0.0, cube.shape[axis] - 1.0)
        coords.append(pos)
    out = np.zeros(len(dims))
    base = [np.minimum(np.floor(c).astype(int), cube.shape[a] - 2) for a, c in enumerate(coords)]
    frac = [c - b for c, b in zip(coords, base)]
    for corner in range(16):
        bits = [(corner >> a) & 1 for a in range(4)]
        weight = np.ones(len(dims))
        for a in range(4):
            weight *= frac[a] if bits[a] else 1.0 - frac[a]
        out += weight * cube[tuple(base[a] + bits[a] for a in range(4))]
    return out


def reference_device(accelerator) -> str:
    """The table GPU whose shape efficiency `accelerator` borrows (itself when it is in the table)."""
    devices = rate_table()["tflops"]
    if accelerator.name in devices:
        return accelerator.name
    try:
        blackwell = float(accelerator.compute_capability) >= 10.0
    except (TypeError, ValueError):
        blackwell = False
    return "B200" if blackwell and "B200" in devices else "H100-SXM5"


def peak_ratio(accelerator) -> float:
    """FP8 / BF16 dense peak of a catalog accelerator."""
    return accelerator.peak_flops("float8") / accelerator.peak_flops("bfloat16")


def rate_source(accelerator) -> str:
    """Where a row's FP8 GEMM rate came from, in words (the row's ``fp8_gemm_rate``)."""
    ref = reference_device(accelerator)
    fp8 = accelerator.peak_flops("float8") / 1e12
    if ref == accelerator.name:
        return (f"measured fp8/bf16 GEMM rate ratio at each shape, OpenXLA matmul table ({ref}), capped at the "
                f"catalog's FP8/BF16 peak ratio ({peak_ratio(accelerator):.2f})")
    return (f"catalog FP8 peak ({fp8:,.0f} TFLOPS) x the predicted bf16 achieved fraction, with the "
            f"fp8-vs-bf16 shape efficiency measured on {ref} (OpenXLA matmul table)")


def speedups(ops: Sequence[OpSpec], accelerator) -> np.ndarray:
    """``r`` = fp8 rate / bf16 rate of each fp8 GEMM in `ops` on `accelerator` (see the module doc)."""
    if not ops:
        return np.ones(0)
    ref = reference_device(accelerator)
    dims = np.array([[op.dims.get(a, 1.0) for a in "bmnk"] for op in ops], dtype=float)
    e5m2 = np.array([op.dims.get("kind", 0.0) == E5M2 for op in ops])
    ref_peak = _catalog_peak_ratio(ref)
    out = np.empty(len(ops))
    for column, rows in (("fp8_e4m3", ~e5m2), ("fp8_e5m2_e4m3", e5m2)):
        if rows.any():
            measured = np.exp(_interpolate(_log_ratio(ref, column), dims[rows]))
            out[rows] = np.minimum(measured / ref_peak, 1.0)   # shape efficiency of fp8 vs bf16, <= 1
    return out * peak_ratio(accelerator)


@lru_cache(maxsize=4)
def _catalog_peak_ratio(name: str) -> float:
    from predictor_models.hardware import lookup_hardware

    return peak_ratio(lookup_hardware(name))


def is_fp8_gemm(spec: OpSpec) -> bool:
    return spec.dtype == "float8" and spec.op_class == "gemm"


def bf16_twin(spec: OpSpec) -> OpSpec:
    """The same GEMM with bf16 operands (what the predictor knows): twice the operand bytes."""
    dims = {a: spec.dims.get(a, 1.0) for a in "bmnk"}
    return OpSpec("gemm", "bfloat16", spec.flops, spec.bytes_read * 2.0, spec.bytes_written, dims, False, "aten::mm")


def predict_times(predictor, specs: Sequence[OpSpec], devices: Sequence) -> np.ndarray:
    """``predictor.predict_matrix`` with fp8 GEMMs priced from their bf16 twins, ``(ops, devices)``."""
    fp8 = [i for i, spec in enumerate(specs) if is_fp8_gemm(spec)]
    if not fp8:
        return predictor.predict_matrix(specs, devices)
    chosen = set(fp8)
    twins = [bf16_twin(spec) if i in chosen else spec for i, spec in enumerate(specs)]
    times = predictor.predict_matrix(twins, devices)
    ops = [specs[i] for i in fp8]
    flops = np.array([op.flops for op in ops])
    for d, device in enumerate(devices):
        if not device.supports("float8"):
            continue   # refused before projecting (estimate); kept at bf16 if it ever gets here
        floor = flops / device.peak_flops("float8") + LAUNCH_S
        times[fp8, d] = np.maximum(times[fp8, d] / speedups(ops, device), floor)
    return times
