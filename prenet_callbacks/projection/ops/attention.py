"""Scaled dot-product attention as it runs on a target: flash, memory-efficient or the math path.

`F.scaled_dot_product_attention` picks a kernel per call (PyTorch's ``sdp_utils``): FlashAttention-2
for fp16/bf16 on compute capability >= 8.0 without an arbitrary mask and a head dim <= 256 that
divides by 8; the memory-efficient (cutlass) kernel on >= 5.0 for fp32/fp16 (bf16 from 8.0), with
masks; otherwise the math path (two batched GEMMs around a materialised score matrix, softmax and
dropout). On ROCm, CDNA2/CDNA3 run the AOTriton flash and efficient kernels for fp16/bf16.

A capture on ``meta`` or on a CPU runs neither GPU kernel, so `capture` records each SDPA call once
as an ``attention`` op with its shapes (dims ``sdpa=1``) and the projection decides per target:

- fused (flash / efficient): one forward kernel reading q, k, v (and the mask) and writing the output
  and the log-sum-exp; one backward kernel (recompute + 4 GEMMs, 2.5x the forward's FLOPs). Saved
  for backward: q, k, v, output, log-sum-exp (no score matrix).
- math: QK^T, scale/mask, softmax, dropout, PV forward; their gradients backward. Saved for backward:
  the probabilities (and the dropout mask and dropped probabilities), B*H*Lq*Lk elements each.
"""
from __future__ import annotations

from dataclasses import dataclass

from predictor_models.op_spec import OpSpec

BACKENDS = ("flash", "efficient", "math")
_ESIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


@dataclass(frozen=True)
class SdpaShape:
    """One SDPA call: q (b, heads, s_q, d), k/v (b, kv_heads, s_kv, d / d_v)."""

    b: int
    heads: int
    s_q: int
    s_kv: int
    d: int
    d_v: int
    kv_heads: int
    causal: bool = False
    dropout: float = 0.0
    mask: bool = False          # an attn_mask tensor was given
    mask_bytes: float = 0.0

    @property
    def scores(self) -> float:
        """Elements of one score matrix over all batches and heads."""
        return float(self.b * self.heads * self.s_q * self.s_kv)

    def dims(self, backward: bool) -> dict[str, float]:
        return {"b": self.b, "heads": self.heads, "s_q": self.s_q, "s_kv": self.s_kv, "d": self.d,
                "d_v": self.d_v, "kv_heads": self.kv_heads, "causal": int(self.causal),
                "dropout": self.dropout, "mask": int(self.mask), "mask_bytes": self.mask_bytes,
                "backward": int(backward), "sdpa": 1}


def shape_from_spec(spec: OpSpec) -> SdpaShape | None:
    """The SDPA shape an ``attention`` op describes (recorded kernels or captured calls), else None."""
    d = spec.dims or {}
    try:
        b, heads, s_q, s_kv, hd = (int(d[k]) for k in ("b", "heads", "s_q", "s_kv", "d"))
    except (KeyError, TypeError, ValueError):
        return None
    if min(b, heads, s_q, s_kv, hd) <= 0:
        return None
    return SdpaShape(b, heads, s_q, s_kv, hd, int(d.get("d_v") or hd), int(d.get("kv_heads") or heads),
                     bool(d.get("causal")), float(d.get("dropout") or 0.0), bool(d.get("mask")),
                     float(d.get("mask_bytes") or 0.0))


def ran_backend(spec: OpSpec) -> str:
    """Which kernel a *recorded* attention op is ("flash", "efficient", "math")."""
    name = (spec.name or "").lower()
    if "efficient" in name:
        return "efficient"
    if "flash" in name or "cudnn" in name or (spec.dims or {}).get("sdpa"):
        return "flash"
    return "math"


def sdpa_backend(accelerator, dtype: str, shape: SdpaShape) -> str:
    """The kernel PyTorch's dispatcher picks for this call on `accelerator` (None: a CPU -> its fused kernel)."""
    if accelerator is None:
        return "flash"  # CPU: _scaled_dot_product_flash_attention_for_cpu
    half = dtype in ("float16", "bfloat16")
    head_ok = shape.d <= 256 and shape.d % 8 == 0 and shape.d_v == shape.d
    vendor = (getattr(accelerator, "vendor", "") or "").upper()
    if vendor == "AMD":
        arch = (getattr(accelerator, "architecture", "") or "").upper()
        if half and ("CDNA2" in arch or "CDNA3" in arch) and head_ok:
            return "efficient" if shape.mask else "flash"
        return "math"
    if vendor != "NVIDIA":
        return "math"
    try:
        cc = float(getattr(accelerator, "compute_capability", None) or 0.0)
    except ValueError:
        cc = 0.0
    if dtype == "bfloat16" and cc < 8.0:
        return "math"            # no bf16 fused kernel before Ampere (T4, V100)
    if half and cc >= 8.0 and head_ok and not shape.mask:
        return "flash"
    if cc >= 5.0 and dtype in ("float32", "float16", "bfloat16") and shape.d % (4 if dtype == "float32" else 8) == 0:
        return "efficient"
    return "math"


def _gemm(dtype: str, bh: float, m: float, n: float, k: float, name: str) -> OpSpec:
    s = _ESIZE.get(dtype, 4)
    return OpSpec("gemm", dtype, 2.0 * bh * m * n * k, (bh * m * k + bh * k * n) * s, bh * m * n * s,
                  {"b": bh, "m": m, "n": n, "k": k}, False, name)


def _pointwise(dtype: str, numel: float, inputs: int, name: str, extra_written: float = 0.0,
               extra_read: float = 0.0) -> OpSpec:
    s = _ESIZE.get(dtype, 4)
    return OpSpec("elementwise", dtype, numel, inputs * numel * s + extra_read, numel * s + extra_written,
                  {"numel": numel, "inputs": inputs}, False, name)


def _softmax(dtype: str, rows: float, cols: float, backward: bool) -> OpSpec:
    s = _ESIZE.get(dtype, 4)
    n = rows * cols
    return OpSpec("norm", dtype, (8.0 if backward else 5.0) * n, (2 if backward else 1) * n * s, n * s,
                  {"rows": rows, "cols": cols, "backward": int(backward)}, False,
                  "aten::_softmax_backward_data" if backward else "aten::_softmax")


def fused_spec(shape: SdpaShape, dtype: str, backward: bool, backend: str = "flash", tf32: bool = False) -> OpSpec:
    """One fused SDPA kernel (forward or backward) with its FLOPs and bytes."""
    s = _ESIZE.get(dtype, 4)
    q = shape.b * shape.heads * shape.s_q * shape.d * s
    k = shape.b * shape.kv_heads * shape.s_kv * shape.d * s
    v = shape.b * shape.kv_heads * shape.s_kv * shape.d_v * s
    out = shape.b * shape.heads * shape.s_q * shape.d_v * s
    lse = shape.b * shape.heads * shape.s_q * 4.0
    flops = 2.0 * shape.b * shape.heads * shape.s_q * shape.s_kv * (shape.d + shape.d_v)
    if backward:
        read, written, flops = q + k + v + 2 * out + lse + shape.mask_bytes, q + k + v, flops * 2.5
    else:
        read, written = q + k + v + shape.mask_bytes, out + lse
    name = f"aten::_{'flash' if backend == 'flash' else 'efficient'}_attention_{'backward' if backward else 'forward'}"
    return OpSpec("attention", dtype, flops, read, written, shape.dims(backward), tf32 and dtype == "float32", name)


def math_ops(shape: SdpaShape, dtype: str, backward: bool, tf32: bool = False) -> list[tuple[OpSpec, float]]:
    """The math path's kernels of one call (forward or backward), each once."""
    bh = shape.b * shape.heads
    n = shape.scores
    rows, cols = bh * shape.s_q, shape.s_kv
    ops: list[OpSpec] = []
    q_numel = bh * shape.s_q * shape.d
    k_numel = shape.b * shape.kv_heads * shape.s_kv * shape.d
    if not backward:
        ops += [_pointwise(dtype, q_numel, 1, "aten::mul"), _pointwise(dtype, k_numel, 1, "aten::mul"),
                _gemm(dtype, bh, shape.s_q, shape.s_kv, shape.d, "attention.math.qk")]
        if shape.mask or shape.causal:
            ops.append(_pointwise(dtype, n, 1, "aten::add", extra_read=shape.mask_bytes))
        ops.append(_softmax(dtype, rows, cols, False))
        if shape.dropout > 0:
            ops.append(_pointwise(dtype, n, 1, "aten::native_dropout", extra_written=n))
        ops.append(_gemm(dtype, bh, shape.s_q, shape.d_v, shape.s_kv, "attention.math.pv"))
    else:
        ops += [_gemm(dtype, bh, shape.s_q, shape.s_kv, shape.d_v, "attention.math.dp"),
                _gemm(dtype, bh, shape.s_kv, shape.d_v, shape.s_q, "attention.math.dv")]
        if shape.dropout > 0:
            ops.append(_pointwise(dtype, n, 1, "aten::native_dropout_backward", extra_read=n))
        ops += [_softmax(dtype, rows, cols, True),
                _gemm(dtype, bh, shape.s_q, shape.d, shape.s_kv, "attention.math.dq"),
                _gemm(dtype, bh, shape.s_kv, shape.d, shape.s_q, "attention.math.dk"),
                _pointwise(dtype, q_numel, 1, "aten::mul"), _pointwise(dtype, k_numel, 1, "aten::mul")]
    if tf32 and dtype == "float32":
        ops = [OpSpec(o.op_class, o.dtype, o.flops, o.bytes_read, o.bytes_written, o.dims, o.op_class == "gemm", o.name)
               for o in ops]
    return [(op, 1.0) for op in ops]


def ops_for(spec: OpSpec, backend: str) -> list[tuple[OpSpec, float]] | None:
    """The kernels a recorded/captured ``attention`` op becomes under `backend`; None: keep it as it is."""
    shape = shape_from_spec(spec)
    if shape is None:
        return None
    backward = bool((spec.dims or {}).get("backward"))
    if backend == "math":
        return math_ops(shape, spec.dtype, backward, spec.tf32)
    return [(fused_spec(shape, spec.dtype, backward, backend, spec.tf32), 1.0)]


def saved_bytes(shape: SdpaShape, dtype: str, backend: str) -> float:
    """Bytes one call keeps for backward beyond q, k, v and the output (which every backend keeps)."""
    s = _ESIZE.get(dtype, 4)
    if backend == "math":
        n = shape.scores
        return n * s + ((n + n * s) if shape.dropout > 0 else 0.0)
    return shape.b * shape.heads * shape.s_q * 4.0   # log-sum-exp
