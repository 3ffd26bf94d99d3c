"""Device specs as numpy columns, so bounds and features broadcast over many devices at once."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from predictor_models.hardware.spec import MissingFigureError, UnsupportedPrecisionError

# Math modes an op can run in; an op's mode comes from its dtype, its tf32 flag and its class.
MODES = ("fp32", "tf32", "fp16", "bf16", "fp64", "fp8")
_MODE_DTYPE = {"fp32": ("float32", False), "tf32": ("float32", True), "fp16": ("float16", False),
               "bf16": ("bfloat16", False), "fp64": ("float64", False), "fp8": ("float8", False)}
DEFAULT_SM = 80          # where the catalog has no SM count (TPUs, unknown parts)
DEFAULT_L2_MB = 4.0
DEFAULT_W_PER_SM_GHZ = 2.0   # board power where the catalog has none (median of the catalog's GPUs)


@dataclass(frozen=True)
class DeviceColumns:
    """Per-device arrays (shape ``(d,)``): bandwidth B/s, SMs, L2 bytes, clock, peaks by mode, tensor flags."""

    names: tuple[str, ...]
    bandwidth: np.ndarray
    sms: np.ndarray
    l2_bytes: np.ndarray
    clock_mhz: np.ndarray
    memory_gb: np.ndarray
    tdp_w: np.ndarray        # board power; where the catalog has none, a typical 2 W per SM-GHz
    peaks: np.ndarray        # (d, len(MODES)) FLOP/s; a mode the device lacks falls back to fp32
    tensor: np.ndarray       # (d, len(MODES)) 1.0 where that mode runs on tensor cores
    # where a peak is a stand-in: a precision the device runs but the catalog has no figure for
    notes: tuple[str, ...] = ()
    arch: np.ndarray | None = None   # (d,) compute capability (8.0 for an A100); 0 where not NVIDIA or unknown

    def take(self, index: np.ndarray) -> "DeviceColumns":
        names = tuple(self.names[i] for i in index)
        present = set(names)
        notes = tuple(n for n in self.notes if n.split(":", 1)[0] in present)
        return DeviceColumns(names, self.bandwidth[index], self.sms[index],
                             self.l2_bytes[index], self.clock_mhz[index], self.memory_gb[index],
                             self.tdp_w[index], self.peaks[index], self.tensor[index], notes,
                             None if self.arch is None else self.arch[index])


def _peak(device, mode: str, fp32: float, notes: list[str]) -> float:
    """The device's peak in `mode`; its fp32 peak where it has none, noted when that is a catalog gap."""
    dtype, tf32 = _MODE_DTYPE[mode]
    try:
        value = float(device.peak_flops(dtype, tf32=tf32))
    except MissingFigureError:  # the device runs it, the catalog has no figure: a guess, said so
        notes.append(f"{device.name}: no published {mode} peak in the catalog; its fp32 peak stands in")
        value = fp32
    except UnsupportedPrecisionError:  # the hardware lacks it: libraries fall back to fp32 math
        value = fp32
    return value if value > 0 else fp32


def _on_tensor_cores(device, mode: str, cc: float, peak: float, fp32: float) -> bool:
    """Whether ``mode`` runs on the device's tensor cores: a mode whose peak is above the FP32 one, from Volta (cc 7.0)
    on, and TF32 on every Ampere or later GPU whose catalog entry has a TF32 figure, even where that figure equals the
    FP32 one (GA102 and AD102 cards, the A10G, the L40): cuBLAS runs their TF32 matmuls on tensor cores all the same.
    Priced as FP32 kernels, the RTX 4090's TF32 BERT steps came out 35-42% too slow (model card, "TF32 GEMMs")."""
    if mode in ("fp32", "fp64") or cc < 7.0:
        return False
    if mode == "tf32" and cc >= 8.0 and getattr(device, "tf32_tflops", None):
        return True
    return peak > fp32 * 1.01


def device_columns(devices: Sequence) -> DeviceColumns:
    """Columns for catalog `Accelerator`s (anything with the same fields and `peak_flops`).

    `peak_flops` may raise `UnsupportedPrecisionError` (the fp32 peak stands in; ``notes`` says so
    when it is a missing catalog figure); any other error is a fault and propagates.
    """
    rows, notes = [], []
    for dev in devices:
        row, dev_notes = _device_row(dev)
        rows.append(row)
        notes += dev_notes
    col = lambda i: np.array([r[i] for r in rows], dtype=np.float64)  # noqa: E731
    return DeviceColumns(tuple(r[0] for r in rows), col(1), col(2), col(3), col(4), col(5), col(6),
                         np.array([r[7] for r in rows], dtype=np.float64).reshape(len(rows), len(MODES)),
                         np.array([r[8] for r in rows], dtype=np.float64).reshape(len(rows), len(MODES)),
                         tuple(dict.fromkeys(notes)), col(9))


_ROWS: dict[int, tuple] = {}   # id -> (device, its row, its notes): a frozen catalog entry is read once
_MAX_ROWS = 512


def _device_row(dev) -> tuple[tuple, list[str]]:
    """One device's figures as `device_columns` lays them out, and its notes (kept per device object: a projection
    asks for the same catalog entries in every call)."""
    found = _ROWS.get(id(dev))
    if found is not None and found[0] is dev:
        return found[1], found[2]
    if not getattr(dev, "memory_bandwidth_gbs", None):
        raise ValueError(f"{getattr(dev, 'name', dev)}: no memory bandwidth in the catalog; cannot bound ops")
    notes: list[str] = []
    fp32 = float(dev.peak_flops("float32")) if dev.fp32_tflops else 1e12
    cc = compute_capability(dev)
    peaks = [_peak(dev, m, fp32, notes) for m in MODES]
    tensor = [1.0 if _on_tensor_cores(dev, m, cc, peaks[i], fp32) else 0.0 for i, m in enumerate(MODES)]
    sms, clock = dev.sm_count or DEFAULT_SM, dev.boost_clock_mhz or 1500.0
    tdp = getattr(dev, "tdp_w", None) or DEFAULT_W_PER_SM_GHZ * sms * clock / 1e3
    row = (dev.name, dev.memory_bandwidth_gbs * 1e9, sms, (dev.l2_cache_mb or DEFAULT_L2_MB) * 2**20,
           clock, dev.memory_gb or 16.0, float(tdp), peaks, tensor, cc)
    if _is_frozen(dev):   # a mutable stand-in (a test's, a user's) is read afresh each time
        if len(_ROWS) >= _MAX_ROWS:
            _ROWS.clear()
        _ROWS[id(dev)] = (dev, row, notes)
    return row, notes


def _is_frozen(dev) -> bool:
    params = getattr(type(dev), "__dataclass_params__", None)
    return bool(params is not None and params.frozen)


def compute_capability(dev) -> float:
    """The device's CUDA compute capability (8.0 for an A100); 0 where it is not NVIDIA or unknown."""
    try:
        return float(dev.compute_capability)
    except (TypeError, ValueError):
        return 0.0


def before_tf32(dev) -> bool:
    """An NVIDIA GPU older than Ampere (compute capability below 8.0), which has no TF32 math."""
    return 0.0 < compute_capability(dev) < 8.0

