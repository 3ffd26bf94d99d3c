"""A kernel's device time from physics: floor + max(compute / (peak x e_c), bytes / (bandwidth x e_m)).

Every op the predictor prices is first expanded (`expand.py`) into kernels of seven classes:

- *tiled* kernels (``gemm``; dense and grouped convolution forward ``conv``, its input gradient ``conv_dgrad``
  and its weight gradient ``conv_wgrad``) run as a grid of output tiles over the SMs, as cuBLAS/cuDNN and
  NeuSight describe them. For each candidate tile (256x128 ... 64x64) and split of the reduction (1, 2, 4, 8)
  (skinny 256x32 and 32x256 tiles for a narrow side)
  the time is ``waves x (tile work / (per-SM peak x e_c) x (1 + a / tile reuse) + c0)``, plus the split's
  partial sums written and read at DRAM speed; the kernel takes the best candidate, as a library's
  heuristic picks one. ``waves = ceil(tiles x splits / SMs)`` quantises both the tiles and the waves.
- *streaming* kernels (``norm``, ``elementwise``, ``conv_depthwise``: pointwise math, reductions, norms,
  casts, copies, optimizer updates, gathers; depthwise convolutions are memory-bound) read and write their
  bytes at ``bandwidth x e_m``, at full speed only with at least ``q`` blocks per SM (rows of a norm, planes
  of a depthwise convolution, 2,048-element blocks of a pointwise op), and compute at the vector peak.

The learned parameters (`KernelParams`) are efficiencies in (0, 1], a kernel floor of a few microseconds
(device time: the host's issue cost is the host model's) and per-wave / per-block constants, per
architecture generation and math mode. The form guarantees, for every input and not only on a grid:

- never faster than the roofline: e_c, e_m <= 1, the power-held peak <= the datasheet's, quantised work >=
  the work, floor >= `LAUNCH_S`;
- time non-decreasing in each work dimension (b, m, n, k; batch, channels, pixels; rows, columns, elements):
  every term is a non-decreasing function of them and a minimum over candidates keeps that;
- a device with at least another's peaks, bandwidth and SMs of the same generation is never slower: the
  per-SM terms alone cannot promise it (more, slower SMs), so `dominance.py` takes the envelope.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bound import LAUNCH_S, Pairs
from .devices import MODES

# Architecture generations (compute capability) parameters are kept per; a device takes the newest at or
# below its own; the last slot is a device of no known generation (TPUs, others): the shared base values.
GENERATIONS = (6.0, 6.1, 7.0, 7.5, 8.0, 8.6, 8.9, 9.0, 10.0, 12.0)
UNKNOWN_GENERATION = len(GENERATIONS)
TILED = ("gemm", "conv", "conv_dgrad", "conv_wgrad")
STREAMING = ("norm", "elementwise", "conv_depthwise")
KERNEL_CLASSES = TILED + STREAMING
TILES = ((256.0, 128.0), (128.0, 128.0), (128.0, 64.0), (64.0, 64.0), (256.0, 32.0), (32.0, 256.0))
SPLITS = (1.0, 2.0, 4.0, 8.0)
ELEMENTS_PER_BLOCK = 2048.0
# a convolution whose groups hold this many input channels or fewer is a depthwise (streaming) kernel
DEPTHWISE_CHANNELS = 2.0
_PARTIAL_BYTES = 4.0   # split-K partial sums are fp32
# a kernel class without measurements of its own takes the constants of the nearest one that has them
DONOR = {"conv_dgrad": "conv", "conv_wgrad": "conv", "conv_depthwise": "elementwise"}


@dataclass(frozen=True)
class KernelParams:
    """Learned constants of one kernel class; arrays indexed by generation slot (and math mode)."""

    floor_s: np.ndarray      # (G,) seconds, >= LAUNCH_S
    e_m: np.ndarray          # (G,) achieved share of DRAM bandwidth, (0, 1]
    e_c: np.ndarray          # (len(MODES), G) achieved share of the mode's peak, (0, 1]
    wave_s: np.ndarray       # (G,) fixed seconds per wave of tiles (prologue, epilogue) -- tiled kernels
    reuse: float             # a: the tile-reuse penalty, 1 + a / (Tm Tn / (Tm + Tn)) -- tiled kernels
    blocks_per_sm: float     # q: blocks per SM to reach full bandwidth -- streaming kernels
    # watts a sustained TFLOP/s needs on the vector units and on the tensor cores: a board whose power is
    # below peak x this (the 70 W T4 and L4) cannot hold its boost clock through a large GEMM -- tiled kernels
    watts_per_tflops: tuple[float, float] = (0.0, 0.0)

    def to_json(self) -> dict:
        return {"floor_s": self.floor_s.tolist(), "e_m": self.e_m.tolist(), "e_c": self.e_c.tolist(),
                "wave_s": self.wave_s.tolist(), "reuse": self.reuse, "blocks_per_sm": self.blocks_per_sm,
                "watts_per_tflops": list(self.watts_per_tflops)}

    @classmethod
    def from_json(cls, doc: dict) -> "KernelParams":
        arrays = {k: np.asarray(doc[k], dtype=np.float64) for k in ("floor_s", "e_m", "e_c", "wave_s")}
        g = len(GENERATIONS) + 1
        if arrays["e_c"].shape != (len(MODES), g) or any(arrays[k].shape != (g,) for k in ("floor_s", "e_m", "wave_s")):
            raise ValueError("kernel parameters do not match this code's generations and modes")
        params = cls(**arrays, reuse=float(doc["reuse"]), blocks_per_sm=float(doc["blocks_per_sm"]),
                     watts_per_tflops=tuple(float(w) for w in doc["watts_per_tflops"]))
        params.check()
        return params

    def check(self) -> None:
        """The constraints the guarantees rest on (a hand-edited or corrupt file is refused)."""
        if not (np.all(self.floor_s >= LAUNCH_S * (1 - 1e-9)) and np.all((self.e_m > 0) & (self.e_m <= 1))
                and np.all((self.e_c > 0) & (self.e_c <= 1)) and np.all(self.wave_s >= 0)
                and self.reuse >= 0 and self.blocks_per_sm >= 0 and min(self.watts_per_tflops) >= 0):
            raise ValueError("kernel parameters break their constraints (efficiency in (0, 1], floor >= launch)")


def generation_slot(arch: np.ndarray) -> np.ndarray:
    """Index into `GENERATIONS` of the newest generation at or below each compute capability."""
    arch = np.asarray(arch, dtype=np.float64)
    slot = np.searchsorted(np.asarray(GENERATIONS), arch + 1e-6, side="right") - 1
    return np.where(slot < 0, UNKNOWN_GENERATION, slot)


def kernel_class(cols) -> np.ndarray:
    """The kernel class of each (expanded) op row: its op class, convolutions told apart."""
    out = np.array(cols.op_class, dtype=object)
    conv = out == "conv"
    if conv.any():
        groups = np.maximum(cols.dim("groups"), 1.0)
        per_group = np.maximum(cols.dim("c_in"), 1.0) / groups
        grad = cols.dim("grad")
        out[conv & (grad == 1)] = "conv_dgrad"
        out[conv & (grad == 2)] = "conv_wgrad"
        out[conv & (groups > 1) & (per_group <= DEPTHWISE_CHANNELS)] = "conv_depthwise"
    return out


def gemm_view(kind: str, p: Pairs) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(batch, M, N, K) of the implicit GEMM a tiled kernel computes."""
    one = lambda key: np.maximum(p.dim(key), 1.0)  # noqa: E731
    if kind == "gemm":
        return one("b"), one("m"), one("n"), one("k")
    groups = one("groups")
    c_in, c_out = one("c_in") / groups, one("c_out") / groups
    kernel = one("kh") * one("kw")
    out_pixels = one("n") * one("h_out") * one("w_out")
    if kind == "conv_dgrad":
        return groups, one("n") * one("h_in") * one("w_in"), c_in, c_out * kernel
    if kind == "conv_wgrad":
        return groups, c_out, c_in * kernel, out_pixels
    return groups, out_pixels, c_out, c_in * kernel


def _take(p: Pairs, params: KernelParams):
    slot = generation_slot(p.dev.arch if p.dev.arch is not None else np.zeros_like(p.dev.sms))
    return slot, params.floor_s[slot], params.e_m[slot], params.e_c[p.ops.mode, slot]


def sustained_peak(p: Pairs, params: KernelParams) -> np.ndarray:
    """The peak a board's power can hold: min(datasheet peak, board watts / watts per TFLOP/s)."""
    vector, tensor = params.watts_per_tflops
    need = np.where(p.tensor > 0, tensor, vector)
    capped = np.where(need > 0, p.dev.tdp_w / np.maximum(need, 1e-12) * 1e12, np.inf)
    return np.minimum(p.peak, capped)


def tiled_seconds(kind: str, p: Pairs, params: KernelParams) -> np.ndarray:
    """Device seconds of tiled kernels (see the module docstring), broadcast to ``p.shape``."""
    slot, floor, e_m, e_c = _take(p, params)
    b, m, n, k = gemm_view(kind, p)
    sms, bandwidth = p.dev.sms, p.dev.bandwidth
    per_sm = sustained_peak(p, params) / sms * e_c
    best = np.full(np.broadcast_shapes(np.shape(m), np.shape(sms)), np.inf)
    wave_s = params.wave_s[slot]
    for tm, tn in TILES:
        penalty = 1.0 + params.reuse * (tm + tn) / (tm * tn)
        tiles = b * np.ceil(m / tm) * np.ceil(n / tn)
        for split in SPLITS:
            waves = np.ceil(tiles * split / sms)
            t = waves * (2.0 * tm * tn * np.ceil(k / split) * penalty / per_sm + wave_s)
            if split > 1:
                t = t + 2.0 * b * m * n * split * _PARTIAL_BYTES / bandwidth
            best = np.minimum(best, t)
    memory = p.ops.bytes / (bandwidth * e_m)
    return np.broadcast_to(floor + np.maximum(best, memory), p.shape)


def streaming_seconds(kind: str, p: Pairs, params: KernelParams) -> np.ndarray:
    """Device seconds of streaming kernels (see the module docstring), broadcast to ``p.shape``."""
    _, floor, e_m, e_c = _take(p, params)
    if kind == "norm":
        blocks = np.maximum(p.dim("rows"), 1.0)
    elif kind == "conv_depthwise":
        blocks = np.maximum(p.dim("n"), 1.0) * np.maximum(p.dim("c_out"), 1.0)
    else:
        numel = np.maximum(p.dim("numel"), p.ops.bytes / np.maximum(p.ops.esize, 1.0) / 2.0)
        blocks = np.maximum(numel / ELEMENTS_PER_BLOCK, 1.0)
    # fewer blocks than SMs x q: the busiest SMs stream q blocks' worth of output each at their share of DRAM
    # bandwidth. A block's output bytes (not all bytes: weights do not grow with the blocks) keep the time
    # non-decreasing in the op's work.
    written = p.ops.written if p.ops.written is not None else p.ops.bytes / 2.0
    per_block = written / blocks
    memory = np.maximum(p.ops.bytes, p.dev.sms * params.blocks_per_sm * per_block) / (p.dev.bandwidth * e_m)
    compute = p.ops.flops / (p.peak * e_c)
    return np.broadcast_to(floor + np.maximum(compute, memory), p.shape)


def kernel_seconds(kind: str, p: Pairs, params: KernelParams) -> np.ndarray:
    """Device seconds of kernels of class ``kind`` on the pairs ``p``."""
    if kind in TILED:
        return tiled_seconds(kind, p, params)
    return streaming_seconds(kind, p, params)


def price_kernels(models: dict[str, KernelParams], cols, times: np.ndarray, pairs_of) -> np.ndarray:
    """``times`` with the rows of every kernel class that ``models`` (or its `DONOR`) prices replaced by
    `kernel_seconds`; ``pairs_of(rows)`` gives the `Pairs` of those rows of ``cols``. Other rows keep their value."""
    kinds = kernel_class(cols)
    for kind in sorted(set(kinds.tolist())):
        params = models.get(kind) or models.get(DONOR.get(kind, ""))
        if params is not None:
            rows = np.flatnonzero(kinds == kind)
            times[rows] = kernel_seconds(kind, pairs_of(rows), params)
    return times
