"""Ops as numpy columns: class, math mode, FLOPs, bytes and a fixed set of dims (0 where absent)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from predictor_models.op_spec import OpSpec

from .devices import MODES

# Every dims key any class uses (contract in op_spec / aten_ops); missing keys read as 0.
DIM_KEYS = ("b", "m", "n", "k", "c_in", "c_out", "h_in", "w_in", "h_out", "w_out", "kh", "kw", "stride",
            "groups", "transposed", "backward", "spatial_dims", "heads", "s_q", "s_kv", "d", "causal",
            "rows", "cols", "numel", "inputs", "numel_in", "numel_out", "kernel", "indices", "dim", "vocab",
            "seq", "batch", "input", "hidden", "layers", "directions", "gates", "tensors", "kind", "bytes", "ranks",
            "grad", "grad_input", "grad_weight", "dilation", "algorithm_search")
_DIM_INDEX = {k: i for i, k in enumerate(DIM_KEYS)}
# Matmul-like classes use tensor-core peaks; the rest run on the vector units.
MATMUL_CLASSES = frozenset({"gemm", "conv", "attention", "recurrent"})
# Names of pointwise ops that cost more than a load/store per element (transcendentals, division).
_ESIZE = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0, "float64": 8.0, "float8": 1.0}
_HEAVY = ("pow", "gelu", "tanh", "exp", "erf", "sigmoid", "silu", "log", "sqrt", "div", "sin", "cos", "softplus")


@dataclass(frozen=True)
class OpColumns:
    """Per-op arrays, each shape ``(n,)`` (dims: ``(n, len(DIM_KEYS))``)."""

    op_class: np.ndarray  # object array of class names
    mode: np.ndarray      # int index into MODES
    flops: np.ndarray
    bytes: np.ndarray
    dims: np.ndarray
    heavy: np.ndarray     # 1.0 for heavy pointwise math
    softmax: np.ndarray   # 1.0 for softmax-like norms
    esize: np.ndarray     # bytes per element of the dtype

    def dim(self, key: str) -> np.ndarray:
        return self.dims[:, _DIM_INDEX[key]]

    def take(self, index: np.ndarray) -> "OpColumns":
        return OpColumns(self.op_class[index], self.mode[index], self.flops[index], self.bytes[index],
                         self.dims[index], self.heavy[index], self.softmax[index], self.esize[index])

    def __len__(self) -> int:
        return len(self.flops)

    def concat(self, other: "OpColumns") -> "OpColumns":
        """These rows, then ``other``'s."""
        return OpColumns(*(np.concatenate([mine, theirs]) for mine, theirs in
                           zip((self.op_class, self.mode, self.flops, self.bytes, self.dims, self.heavy,
                                self.softmax, self.esize),
                               (other.op_class, other.mode, other.flops, other.bytes, other.dims, other.heavy,
                                other.softmax, other.esize))))


def op_mode(op: OpSpec) -> int:
    """Index in MODES of the math an op runs: tensor modes only for matmul-like classes."""
    dtype = op.dtype
    if dtype == "float64":
        return MODES.index("fp64")
    if op.op_class not in MATMUL_CLASSES:
        return 0
    if dtype == "float16":
        return MODES.index("fp16")
    if dtype == "bfloat16":
        return MODES.index("bf16")
    if dtype == "float8":
        return MODES.index("fp8")
    return MODES.index("tf32") if op.tf32 else 0


@lru_cache(maxsize=4096)
def _name_flags(name: str) -> tuple[float, float]:
    """(softmax, heavy) flags from an op name; cached since models repeat a few names many times."""
    low = name.lower()
    return float("softmax" in low), float(any(h in low for h in _HEAVY))


def op_columns(ops: Sequence[OpSpec]) -> OpColumns:
    """Columns for a sequence of ops (one Python pass; everything after is vectorised)."""
    n = len(ops)
    dims = np.zeros((n, len(DIM_KEYS)))
    flops = np.empty(n)
    moved = np.empty(n)
    mode = np.empty(n, dtype=np.int64)
    heavy = np.zeros(n)
    softmax = np.zeros(n)
    classes = np.empty(n, dtype=object)
    esize = np.empty(n)
    index = _DIM_INDEX
    for i, op in enumerate(ops):
        classes[i] = op.op_class
        flops[i] = op.flops
        moved[i] = op.bytes_read + op.bytes_written
        mode[i] = op_mode(op)
        esize[i] = _ESIZE.get(op.dtype, 4.0)
        for key, value in op.dims.items():
            j = index.get(key)
            if j is not None and value is not None:
                dims[i, j] = value
        flags = _name_flags(op.name)
        softmax[i], heavy[i] = flags
    return OpColumns(classes, mode, np.maximum(flops, 0.0), np.maximum(moved, 0.0), dims, heavy, softmax, esize)
