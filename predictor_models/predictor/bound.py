"""The physical lower bound of an op on a device, and op-device pairs laid out for broadcasting.

bound = max(FLOPs / peak for the op's math mode, bytes / DRAM bandwidth) + launch latency.
A `Pairs` holds op columns and device columns shaped either ``(N,)`` each (one device per op, for
training) or ``(n, 1)`` and ``(1, d)`` (every op on every device, for `predict_matrix`), so the same
arithmetic serves both.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .devices import DeviceColumns, device_columns
from .optable import OpColumns, op_columns

LAUNCH_S = 2e-6  # a kernel launch and its tail: no measured kernel in our data is shorter


@dataclass(frozen=True)
class Pairs:
    """Op and device arrays that broadcast against each other to the pair shape."""

    ops: OpColumns           # arrays (N,) or (n, 1) -- dims stays 2-D: use `dim`
    dims: np.ndarray         # (N, K) or (n, 1, K)
    dev: DeviceColumns       # arrays (N,) or (1, d)
    peak: np.ndarray         # FLOP/s for each pair's math mode
    tensor: np.ndarray       # 1.0 where that mode uses tensor cores
    shape: tuple[int, ...]

    def dim(self, key: str) -> np.ndarray:
        from .optable import DIM_KEYS

        return self.dims[..., DIM_KEYS.index(key)]


def _reshape_ops(ops: OpColumns, shape: tuple[int, ...]) -> OpColumns:
    r = lambda a: a.reshape(shape)  # noqa: E731
    return OpColumns(r(ops.op_class), r(ops.mode), r(ops.flops), r(ops.bytes), ops.dims, r(ops.heavy),
                     r(ops.softmax), r(ops.esize))


def paired(ops: OpColumns, devs: DeviceColumns) -> Pairs:
    """Pairs for ops[i] on devs[i] (equal lengths)."""
    idx = np.arange(len(ops))
    return Pairs(ops, ops.dims, devs, devs.peaks[idx, ops.mode], devs.tensor[idx, ops.mode], (len(ops),))


def matrix(ops: OpColumns, devs: DeviceColumns) -> Pairs:
    """Pairs for every op on every device: arrays broadcast to ``(n, d)``."""
    n, d = len(ops), len(devs.names)
    dev = DeviceColumns(devs.names, *(a.reshape(1, d) for a in (devs.bandwidth, devs.sms, devs.l2_bytes,
                                                               devs.clock_mhz, devs.memory_gb, devs.tdp_w)),
                        devs.peaks, devs.tensor, devs.notes, None if devs.arch is None else devs.arch.reshape(1, d))
    return Pairs(_reshape_ops(ops, (n, 1)), ops.dims.reshape(n, 1, -1), dev, devs.peaks[:, ops.mode].T,
                 devs.tensor[:, ops.mode].T, (n, d))


def compute_seconds(p: Pairs) -> np.ndarray:
    return p.ops.flops / p.peak


def memory_seconds(p: Pairs) -> np.ndarray:
    return p.ops.bytes / p.dev.bandwidth


def roofline_seconds(flops, moved, peak, bandwidth) -> np.ndarray:
    """max(FLOPs / peak, bytes / bandwidth) + launch latency, for arrays that broadcast together."""
    return np.maximum(flops / peak, moved / bandwidth) + LAUNCH_S


def bound_seconds(p: Pairs) -> np.ndarray:
    """max(compute, memory) + launch latency, broadcast to the pair shape."""
    return np.broadcast_to(roofline_seconds(p.ops.flops, p.ops.bytes, p.peak, p.dev.bandwidth), p.shape)


def rooflines(ops, devices) -> np.ndarray:
    """`bound_seconds` of every op (`OpSpec`) on every device: ``(len(ops), len(devices))``."""
    return np.array(bound_seconds(matrix(op_columns(list(ops)), device_columns(list(devices)))))

