"""Scale-free features of an op on a device, per op class (inputs of the utilisation model).

Every feature is relative or logarithmic (intensity against the device's ridge point, waves of
tiles over its SMs, bytes against its L2) so that what is learnt on some GPUs carries to others.
Each function returns a list of arrays broadcastable to ``pairs.shape``.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .bound import LAUNCH_S, Pairs, compute_seconds, memory_seconds

TILE = 128.0          # a typical GEMM CTA tile edge (cuBLAS/cutlass 128x128 / 128x64)
THREADS_PER_SM = 2048.0


def _l2(x) -> np.ndarray:
    return np.log2(np.maximum(x, 0.0) + 1.0)


def _common(p: Pairs) -> list[np.ndarray]:
    tc, tm = compute_seconds(p), memory_seconds(p)
    bound = np.maximum(tc, tm)
    return [
        np.log10(p.ops.flops + 1.0),
        np.log10(p.ops.bytes + 1.0),
        np.clip(np.log10((tc + 1e-12) / (tm + 1e-12)), -6, 6),     # intensity relative to the ridge point
        np.log10(bound / LAUNCH_S + 1e-3),                          # op size in launch latencies
        np.log10(p.ops.bytes / p.dev.l2_bytes + 1e-6),              # does the working set fit in L2
        np.log2(p.dev.sms),
        np.log2(p.peak / p.dev.bandwidth),                          # ridge point, FLOP/byte
        p.tensor,
        p.ops.esize,
    ]
COMMON_NAMES = ["log_flops", "log_bytes", "log_intensity_over_ridge", "log_bound_over_launch", "log_bytes_over_l2",
                "log2_sms", "log2_ridge", "tensor_core", "dtype_bytes"]


def _gemm_like(p: Pairs, b, m, n, k) -> list[np.ndarray]:
    b, m, n, k = (np.maximum(x, 1.0) for x in (b, m, n, k))
    tiles_m, tiles_n = np.ceil(m / TILE), np.ceil(n / TILE)
    waves = b * tiles_m * tiles_n / p.dev.sms
    return [
        _l2(b), _l2(m), _l2(n), _l2(k), _l2(np.minimum(np.minimum(m, n), k)),
        np.log2(waves), waves / np.ceil(waves),                     # wave quantisation
        (m * n) / (tiles_m * tiles_n * TILE * TILE),                # tile quantisation
        _l2(k / np.maximum(waves, 1.0)),                            # work per SM along k
    ]
GEMM_NAMES = ["log2_b", "log2_m", "log2_n", "log2_k", "log2_min_dim", "log2_waves", "wave_eff", "tile_eff", "log2_k_per_wave"]


def _power(p: Pairs) -> list[np.ndarray]:
    """Board power per TFLOP of the op's math mode: low-power cards (T4, L4: ~70 W) cannot hold their
    boost clock under sustained matrix work, so their datasheet peak overstates what they deliver."""
    return [np.log2(p.dev.tdp_w / (p.peak / 1e12))]
POWER_NAMES = ["log2_watts_per_tflop"]


def gemm_features(p: Pairs) -> list[np.ndarray]:
    return _common(p) + _gemm_like(p, p.dim("b"), p.dim("m"), p.dim("n"), p.dim("k"))


def conv_features(p: Pairs) -> list[np.ndarray]:
    groups = np.maximum(p.dim("groups"), 1.0)
    kernel = np.maximum(p.dim("kh"), 1.0) * np.maximum(p.dim("kw"), 1.0)
    spatial = np.maximum(p.dim("h_out"), 1.0) * np.maximum(p.dim("w_out"), 1.0)
    gm = np.maximum(p.dim("n"), 1.0) * spatial                       # implicit-GEMM view
    gk = np.maximum(p.dim("c_in"), 1.0) / groups * kernel
    return (_common(p) + _gemm_like(p, groups, gm, p.dim("c_out") / groups, gk)
            + [_l2(kernel), np.maximum(p.dim("stride"), 1.0), _l2(groups), _l2(p.dim("c_in")), _l2(spatial)] + _power(p))
CONV_NAMES = GEMM_NAMES + ["log2_kernel", "stride", "log2_groups", "log2_c_in", "log2_spatial"]


def norm_features(p: Pairs) -> list[np.ndarray]:
    rows, cols = np.maximum(p.dim("rows"), 1.0), np.maximum(p.dim("cols"), 1.0)
    # no "backward" feature: no backward norm is measured alone in the data; bytes carry it
    return _common(p) + [_l2(rows), _l2(cols), np.log2(rows / p.dev.sms), p.ops.softmax + 0 * rows]
NORM_NAMES = ["log2_rows", "log2_cols", "log2_rows_per_sm", "softmax"]


def elementwise_features(p: Pairs) -> list[np.ndarray]:
    numel = np.maximum(p.dim("numel"), 1.0)
    return _common(p) + [_l2(numel), np.maximum(p.dim("inputs"), 1.0), p.ops.heavy + 0 * numel,
                         np.log2(numel / (p.dev.sms * THREADS_PER_SM))]
ELEMENTWISE_NAMES = ["log2_numel", "inputs", "heavy", "log2_waves"]


def embedding_features(p: Pairs) -> list[np.ndarray]:
    idx, dim = np.maximum(p.dim("indices"), 1.0), np.maximum(p.dim("dim"), 1.0)
    return _common(p) + [_l2(idx), _l2(dim), _l2(p.dim("vocab")), np.log2(idx * dim / (p.dev.sms * THREADS_PER_SM))]
EMBEDDING_NAMES = ["log2_indices", "log2_dim", "log2_vocab", "log2_waves"]

FEATURES: dict[str, tuple[Callable[[Pairs], list[np.ndarray]], list[str]]] = {
    "gemm": (gemm_features, COMMON_NAMES + GEMM_NAMES),
    "conv": (conv_features, COMMON_NAMES + CONV_NAMES + POWER_NAMES),
    "norm": (norm_features, COMMON_NAMES + NORM_NAMES),
    "elementwise": (elementwise_features, COMMON_NAMES + ELEMENTWISE_NAMES),
    "embedding": (embedding_features, COMMON_NAMES + EMBEDDING_NAMES),
}


def feature_matrix(op_class: str, p: Pairs) -> np.ndarray:
    """``(pairs, features)`` float64 matrix for one class (pairs flattened in C order)."""
    func, _ = FEATURES[op_class]
    cols = [np.broadcast_to(c, p.shape).reshape(-1) for c in func(p)]
    return np.stack(cols, axis=1)
