"""Inputs of the tiled-kernel network (`mono.py`): features that grow with the work and with the device's
weakness (monotone inputs), and features that name the kind of kernel (free inputs).

The network's output is non-decreasing in every monotone input (`mono.MonoNet`). Every monotone input here is
a non-decreasing function of each work dimension of the op (b, m, n, k of a GEMM; batch, channels, pixels and
kernel taps of a convolution) and a non-increasing function of each device figure it reads (the peak of the
op's math mode, DRAM bandwidth, SM count, board power). So, for every input and not only on a grid:

- more work is never predicted faster;
- a device with at least another's peak, bandwidth, SMs and board power is never predicted slower (the free
  inputs name no device);

and the predictor never goes below the roofline (it takes the larger of the network and the bound). The free
inputs cannot vary with the work: the math mode, whether it runs on tensor cores, and the kernel kind.

One network prices GEMMs and dense or grouped convolutions (forward, data gradient, weight gradient): a
convolution is an implicit GEMM, so what half-precision GEMMs show on a GPU carries to its convolutions, which
the public data measures in half precision on three pre-Ampere GPUs only.
"""
from __future__ import annotations

import numpy as np

from .bound import Pairs

TILE = 128.0          # the edge of a typical GEMM CTA tile (cuBLAS/CUTLASS 128x128)
MIN_TILE = 16.0       # the narrowest tile edge a library uses for a narrow side
KINDS = ("gemm", "conv_fwd", "conv_dgrad", "conv_wgrad")
MONO_NAMES = ("log_compute_s", "log_memory_s", "log_tiled_compute_s", "log_waves", "log_whole_waves", "log_k",
              "log_b", "log_m", "log_n", "log_taps", "log_flops_per_watt")
FREE_NAMES = ("tf32", "half", "bf16", "fp64", "tensor_core") + KINDS


def _log(x) -> np.ndarray:
    return np.log(np.maximum(x, 1e-30))


def _padded(x: np.ndarray) -> np.ndarray:
    """The side a tiled kernel computes for a side of ``x``: the next power of two from `MIN_TILE` up to `TILE`,
    then whole tiles (non-decreasing in ``x``)."""
    x = np.maximum(x, 1.0)
    small = np.maximum(MIN_TILE, 2.0 ** np.ceil(np.log2(x)))
    return np.where(x <= TILE, small, np.ceil(x / TILE) * TILE)


def tiled_view(p: Pairs) -> tuple[np.ndarray, ...]:
    """(kind index, b, m, n, k, taps) of the implicit GEMM each op computes."""
    one = lambda key: np.maximum(p.dim(key), 1.0)  # noqa: E731
    conv = p.ops.op_class == "conv"
    grad = p.dim("grad")
    kind = np.where(conv, np.where(grad == 1, 2, np.where(grad == 2, 3, 1)), 0).astype(np.float64)
    groups = one("groups")
    c_in, c_out = one("c_in") / groups, one("c_out") / groups
    taps = one("kh") * one("kw")
    out_pixels = one("n") * one("h_out") * one("w_out")
    in_pixels = one("n") * one("h_in") * one("w_in")
    # a convolution kernel's GEMM: forward (pixels x c_out x c_in*taps), data gradient (input pixels x c_in x
    # c_out*taps), weight gradient (c_out x c_in*taps, reduced over the pixels); one per group
    m = np.where(kind == 2, in_pixels, np.where(kind == 3, c_out, out_pixels))
    n = np.where(kind == 2, c_in, np.where(kind == 3, c_in * taps, c_out))
    k = np.where(kind == 2, c_out * taps, np.where(kind == 3, out_pixels, c_in * taps))
    return (kind, np.where(conv, groups, one("b")), np.where(conv, m, one("m")), np.where(conv, n, one("n")),
            np.where(conv, k, one("k")), np.where(conv, taps, 1.0))


def tiled_features(p: Pairs) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(monotone, free) input columns, each broadcastable to ``p.shape`` (names: `MONO_NAMES`, `FREE_NAMES`)."""
    kind, b, m, n, k, taps = tiled_view(p)
    tiles = b * np.ceil(m / TILE) * np.ceil(n / TILE)
    waves = tiles / p.dev.sms
    mono = [
        _log(p.ops.flops / p.peak),                              # time at the mode's peak
        _log(p.ops.bytes / p.dev.bandwidth),                     # time at DRAM bandwidth
        _log(2.0 * b * _padded(m) * _padded(n) * k / p.peak),    # the work of whole tiles, at peak
        _log(waves), _log(np.ceil(waves)),                       # waves of tiles over the SMs
        _log(k), _log(b), _log(m), _log(n), _log(taps),
        _log(p.ops.flops / p.dev.tdp_w),                         # what the board's power sustains
    ]
    mode = p.ops.mode   # MODES = fp32, tf32, fp16, bf16, fp64, fp8
    free = [(mode == 1) + 0.0 * kind, ((mode == 2) | (mode == 3)) + 0.0 * kind, (mode == 3) + 0.0 * kind,
            (mode == 4) + 0.0 * kind, p.tensor + 0.0 * kind] + [(kind == i) + 0.0 for i in range(len(KINDS))]
    return mono, free


# The GEMM network's inputs (2026-12-07): only times on the device among the monotone inputs, so that a GPU faster
# than the training ones reads as a smaller op (raw sizes let a network learn each trained GPU's times from the sizes,
# and a held-out H100's half-precision GEMMs came out 42-85% off, `benchmarks/results/issue38_gemm_scaled_network/`).
# Compute and memory time are one input, their larger (DRAM bandwidth cannot move a compute-bound GEMM); the FLOPs per
# board watt are left out (at equal time on the peak an H100 does 1.8x an A100's FLOPs per watt, which a monotone
# input can only read as a larger op: the H100's large fp16 GEMMs came out 1.26x too slow in sample).
GEMM_MONO_NAMES = ("log_roofline_s", "log_tiled_compute_s", "log_waves", "log_whole_waves", "log_tile_k_s",
                   "log_whole_waves_tile_k_s", "log_bytes_over_l2")
GEMM_FREE_NAMES = ("tf32", "half", "fp64", "tensor_core")


def gemm_time_features(p: Pairs) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(monotone, free) input columns of the GEMM network (names: `GEMM_MONO_NAMES`, `GEMM_FREE_NAMES`). Each monotone
    input is non-decreasing in b, m, n and k: the roofline time, the whole tiles' FLOPs at peak, the waves of tiles
    over the SMs and their whole number, one tile's k-loop on one SM's share of the peak and that times the whole
    waves, and the bytes against the L2. fp16 and bf16 read alike (no bf16 input: bf16 GEMMs are measured by one
    harness only, and the input learnt that harness)."""
    _, b, m, n, k, _ = tiled_view(p)
    waves = b * np.ceil(m / TILE) * np.ceil(n / TILE) / p.dev.sms
    tile_k_s = 2.0 * TILE * TILE * k * p.dev.sms / p.peak
    mono = [
        _log(np.maximum(p.ops.flops / p.peak, p.ops.bytes / p.dev.bandwidth)),
        _log(2.0 * b * _padded(m) * _padded(n) * k / p.peak),
        _log(waves), _log(np.ceil(waves)),
        _log(tile_k_s), _log(np.ceil(waves) * tile_k_s),
        _log(p.ops.bytes / p.dev.l2_bytes),
    ]
    mode = p.ops.mode
    free = [(mode == 1) + 0.0 * b, ((mode == 2) | (mode == 3)) + 0.0 * b, (mode == 4) + 0.0 * b, p.tensor + 0.0 * b]
    return mono, free


# A network's kind of inputs: its feature function and the names of its monotone and free inputs.
INPUTS = {"tiled": (tiled_features, MONO_NAMES, FREE_NAMES),
          "gemm_times": (gemm_time_features, GEMM_MONO_NAMES, GEMM_FREE_NAMES)}


def feature_arrays(p: Pairs, inputs: str = "tiled") -> tuple[np.ndarray, np.ndarray]:
    """``(pairs, monotone)`` and ``(pairs, free)`` float64 matrices of the network inputs ``inputs`` (`INPUTS`), pairs
    flattened in C order."""
    mono, free = INPUTS[inputs][0](p)
    flat = lambda cols: np.stack([np.broadcast_to(np.asarray(c, dtype=np.float64), p.shape).reshape(-1)  # noqa: E731
                                  for c in cols], axis=1)
    return flat(mono), flat(free)
