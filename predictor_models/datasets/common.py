"""The sample type shared by all loaders, and the builders of the ops they measure.

The row files that store samples (what `collect` writes, what ships) are read and written by `rows`.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from predictor_models.op_spec import OpSpec

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "float8": 1}


@dataclass(frozen=True)
class Sample:
    """One measured op: what ran, where (a name `lookup_hardware` understands), and how long."""

    op: OpSpec
    device: str
    seconds: float
    source: str


@dataclass
class LoadReport:
    """What a loader kept and what it dropped, with reasons (for the model card)."""

    source: str
    kept: int = 0
    excluded: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def exclude(self, reason: str, count: int = 1) -> None:
        self.excluded[reason] += count

    def as_dict(self) -> dict:
        return {"source": self.source, "kept": self.kept, "excluded": dict(self.excluded), "notes": self.notes}


def gemm_op(b: float, m: float, n: float, k: float, dtype: str, *, tf32: bool = False,
            bias: bool = False, weight_shared: bool = False, name: str = "") -> OpSpec:
    """A (batched) GEMM C[b,m,n] = A[b,m,k] @ B[b,k,n]; ``weight_shared`` for a linear's weight."""
    s = DTYPE_BYTES[dtype]
    b_elems = k * n if weight_shared else b * k * n
    read = (b * m * k + b_elems + (n if bias else 0)) * s
    return OpSpec("gemm", dtype, 2.0 * b * m * n * k, read, b * m * n * s,
                  {"b": b, "m": m, "n": n, "k": k}, tf32, name)


def conv_op(n: float, c_in: float, c_out: float, h_in: float, w_in: float, kh: float, kw: float,
            stride: float, padding: float, dtype: str, *, groups: float = 1, tf32: bool = False,
            name: str = "", out_size: tuple[float, float] | None = None) -> OpSpec:
    """A forward 2-D convolution with square stride/padding (``out_size`` overrides the output H, W)."""
    s = DTYPE_BYTES[dtype]
    h_out = (h_in + 2 * padding - kh) // stride + 1
    w_out = (w_in + 2 * padding - kw) // stride + 1
    if out_size is not None:
        h_out, w_out = out_size
    flops = 2.0 * n * c_out * h_out * w_out * (c_in / groups) * kh * kw
    read = (n * c_in * h_in * w_in + c_out * (c_in / groups) * kh * kw) * s
    dims = {"n": n, "c_in": c_in, "c_out": c_out, "h_in": h_in, "w_in": w_in, "h_out": h_out,
            "w_out": w_out, "kh": kh, "kw": kw, "stride": stride, "groups": groups,
            "transposed": 0, "backward": 0, "spatial_dims": 2}
    return OpSpec("conv", dtype, flops, read, n * c_out * h_out * w_out * s, dims, tf32, name)


def norm_op(rows: float, cols: float, dtype: str, *, name: str, backward: int = 0) -> OpSpec:
    """Layer/RMS norm or softmax over the last dim of a [rows, cols] tensor."""
    s = DTYPE_BYTES[dtype]
    numel = rows * cols
    weights = 0 if "softmax" in name else 2 * cols
    return OpSpec("norm", dtype, 5.0 * numel, (numel + weights) * s, numel * s,
                  {"rows": rows, "cols": cols, "backward": backward}, False, name)


def elementwise_op(numel: float, inputs: int, dtype: str, *, name: str) -> OpSpec:
    """A pointwise op reading ``inputs`` tensors of ``numel`` elements and writing one."""
    s = DTYPE_BYTES[dtype]
    return OpSpec("elementwise", dtype, float(numel), inputs * numel * s, numel * s,
                  {"numel": numel, "inputs": inputs}, False, name)


def embedding_op(indices: float, dim: float, vocab: float, dtype: str, *, name: str = "embedding") -> OpSpec:
    """An embedding gather of ``indices`` rows of width ``dim``."""
    s = DTYPE_BYTES[dtype]
    return OpSpec("embedding", dtype, 0.0, indices * 8 + indices * dim * s, indices * dim * s,
                  {"indices": indices, "dim": dim, "vocab": vocab, "backward": 0}, False, name)
