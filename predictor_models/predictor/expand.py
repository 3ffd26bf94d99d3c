"""Ops of classes without their own measurements, expressed as ops of classes that have them.

- conv backward: data-grad and weight-grad convolutions, each about the forward's work.
- a 1x1, stride-1, ungrouped forward convolution: the GEMM it is (pixels x c_out x c_in), since the measured
  convolutions are all 3x3 and the GEMM model has the shapes (its backward stays two forward-sized
  convolutions: as data-grad and weight-grad GEMMs it came out 2-4.6x too fast on the H200).
- attention kernels (flash / efficient / cuDNN SDPA): their GEMMs (QK^T and PV forward; recompute,
  dV, dP, dQ, dK backward = 2.5x forward), causal halving the work.
- recurrent layers: per layer and direction, one input-projection GEMM over the sequence, then per
  step a recurrent GEMM and the gate pointwise math (backward twice the forward).
- pooling, optimizer updates, data movement, embedding gather and its backward: streaming pointwise kernels
  (no clean single-kernel embedding measurement exists in the data).
- where the predictor has a network for a convolution's mode, and for every depthwise convolution: the kernels
  cuDNN runs (`conv_kernels`: forward, data gradient, weight gradient; a depthwise one as a streaming kernel).
Each entry is ``(op, multiplicity)``; a parent's time is the sum of multiplicity x predicted time.
"""
from __future__ import annotations

from dataclasses import replace

from predictor_models.op_spec import OpSpec

_ESIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "float8": 1}


def _gemm(op: OpSpec, b, m, n, k, *, name: str) -> OpSpec:
    s = _ESIZE.get(op.dtype, 4)
    return OpSpec("gemm", op.dtype, 2.0 * b * m * n * k, (b * m * k + b * k * n) * s, b * m * n * s,
                  {"b": b, "m": m, "n": n, "k": k}, op.tf32, name)


def _cube_gemm(op: OpSpec) -> OpSpec:
    side = max((max(op.flops, 2.0) / 2.0) ** (1.0 / 3.0), 1.0)
    g = _gemm(op, 1, side, side, side, name=op.name)
    return replace(g, bytes_read=op.bytes_read, bytes_written=op.bytes_written)


def _pointwise(op: OpSpec, numel: float, inputs: float, *, keep_bytes: bool = True) -> OpSpec:
    s = _ESIZE.get(op.dtype, 4)
    if not numel > 0:
        numel = max(op.bytes_written / s, op.bytes_read / s, 1.0)
    read = op.bytes_read if keep_bytes else inputs * numel * s
    written = op.bytes_written if keep_bytes else numel * s
    return OpSpec("elementwise", op.dtype, max(op.flops, numel), read, written,
                  {"numel": numel, "inputs": max(inputs, 1.0)}, False, op.name)


def _conv_backward(op: OpSpec):
    half = replace(op, flops=op.flops / 2, bytes_read=op.bytes_read / 2, bytes_written=op.bytes_written / 2,
                   dims={**op.dims, "backward": 0})
    return [(half, 2.0)]


def is_pointwise_conv(op: OpSpec) -> bool:
    """A 1x1, stride-1, ungrouped, untransposed forward convolution: one GEMM over the output pixels."""
    d = op.dims
    return (op.op_class == "conv" and not d.get("backward", 0) and d.get("kh") == 1 and d.get("kw", 1) == 1 and d.get("stride", 1) == 1
            and d.get("groups", 1) == 1 and not d.get("transposed", 0)
            and all(d.get(k, 0) > 0 for k in ("n", "c_in", "c_out", "h_out")))


def _pointwise_conv(op: OpSpec):
    d = op.dims
    pixels = d["n"] * d["h_out"] * d.get("w_out", 1) * d.get("d_out", 1)
    return [(_gemm(op, 1, pixels, d["c_out"], d["c_in"], name="conv1x1"), 1.0)]


def _attention(op: OpSpec):
    d = op.dims
    bh = d.get("b", 0) * d.get("heads", 0)
    sq, skv, hd = d.get("s_q", 0), d.get("s_kv", 0), d.get("d", 0)
    if not (bh > 0 and sq > 0 and skv > 0 and hd > 0):
        return [(_cube_gemm(op), 1.0)]
    kv = skv / 2.0 if d.get("causal", 0) else skv
    mult = 2.5 if d.get("backward", 0) else 1.0
    return [(_gemm(op, bh, sq, kv, hd, name="attention.qk"), mult), (_gemm(op, bh, sq, hd, kv, name="attention.pv"), mult)]


def _recurrent(op: OpSpec):
    d = op.dims
    seq, batch, inp, hid = d.get("seq", 0), d.get("batch", 0), d.get("input", 0), d.get("hidden", 0)
    if not (seq > 0 and batch > 0 and inp > 0 and hid > 0):
        return [(_cube_gemm(op), 1.0)]
    layers, dirs, gates = max(d.get("layers", 1), 1), max(d.get("directions", 1), 1), max(d.get("gates", 4), 1)
    mult = 2.0 if d.get("backward", 0) else 1.0
    out = []
    for layer in range(int(layers)):
        width = inp if layer == 0 else hid * dirs
        out.append((_gemm(op, 1, seq * batch, gates * hid, width, name="rnn.input"), mult * dirs))
        out.append((_gemm(op, 1, batch, gates * hid, hid, name="rnn.hidden"), mult * dirs * seq))
        out.append((_pointwise(op, batch * gates * hid, 2, keep_bytes=False), mult * dirs * seq))
    return out


def expand(op: OpSpec, modelled: frozenset[str]) -> list[tuple[OpSpec, float]] | None:
    """The modelled ops an op is predicted as; None when nothing models it (bound + default utilisation)."""
    cls, d = op.op_class, op.dims
    if is_pointwise_conv(op) and "gemm" in modelled:
        return _pointwise_conv(op)
    if cls == "conv" and d.get("backward", 0):
        return _conv_backward(op) if "conv" in modelled else None
    if cls == "embedding" and d.get("backward", 0):
        cls = "embedding_backward"
    if cls in modelled:
        return [(op, 1.0)]
    if cls == "attention" and "gemm" in modelled:
        return _attention(op)
    if cls == "recurrent" and "gemm" in modelled and "elementwise" in modelled:
        return _recurrent(op)
    if "elementwise" not in modelled:
        return None
    if cls == "pooling":
        n_in, n_out = d.get("numel_in", 0), d.get("numel_out", 0)
        return [(_pointwise(op, n_out, n_in / n_out if n_out > 0 else 1.0), 1.0)]
    if cls == "optimizer":
        inputs = {0: 2.0, 1: 3.0, 2: 4.0}.get(int(d.get("kind", 2)), 4.0)
        return [(_pointwise(op, d.get("numel", 0), inputs), 1.0)]
    if cls == "data_movement":
        return [(_pointwise(op, d.get("numel", 0), 1.0), 1.0)]
    if cls == "embedding_backward":
        return [(_pointwise(op, d.get("indices", 0) * d.get("dim", 0), 2.0), 1.0)]
    if cls == "embedding":
        return [(_pointwise(op, d.get("indices", 0) * d.get("dim", 0), 1.0), 1.0)]
    return None


PROXIED = {"attention": "gemm", "recurrent": "gemm+elementwise", "pooling": "elementwise", "embedding": "elementwise",
           "optimizer": "elementwise", "data_movement": "elementwise"}


# -- convolutions as the kernels they run (`Predictor._kernels`) ---------------------------------------------
# a convolution whose groups hold this many input channels or fewer runs as a memory-bound (streaming) kernel:
# a depthwise convolution reads each input once and does a few multiply-adds per output, which no
# tensor-core tile can use; priced as a slice of a dense convolution it came out 2-3x too slow
DEPTHWISE_CHANNELS = 2.0


def is_depthwise(op: OpSpec) -> bool:
    d = op.dims
    groups = max(float(d.get("groups", 1) or 1), 1.0)
    return op.op_class == "conv" and groups > 1 and float(d.get("c_in", 0) or 0) / groups <= DEPTHWISE_CHANNELS


def _conv_kernel(op: OpSpec, grad: int) -> OpSpec:
    """One convolution kernel of a (forward or backward) conv op: forward (0), data gradient (1), weight
    gradient (2), each with its own FLOPs and bytes (DeepBench's three samples per layer are the same split)."""
    d = op.dims
    s = _ESIZE.get(op.dtype, 4)
    g = max(float(d.get("groups", 1) or 1), 1.0)
    n, c_in, c_out = (max(float(d.get(k, 1) or 1), 1.0) for k in ("n", "c_in", "c_out"))
    taps = max(float(d.get("kh", 1) or 1), 1.0) * max(float(d.get("kw", 1) or 1), 1.0)
    x = n * c_in * max(float(d.get("h_in", 1) or 1), 1.0) * max(float(d.get("w_in", 1) or 1), 1.0)
    y = n * c_out * max(float(d.get("h_out", 1) or 1), 1.0) * max(float(d.get("w_out", 1) or 1), 1.0)
    w = c_out * c_in / g * taps
    flops = 2.0 * y * c_in / g * taps
    read, written = {0: (x + w, y), 1: (y + w, x), 2: (x + y, w)}[grad]
    dims = {**d, "backward": int(grad > 0), "grad": grad}
    if is_depthwise(op):   # streaming: the elements it writes (the weight gradient: the input it reduces)
        numel = {0: y, 1: x, 2: x}[grad]
        return OpSpec("elementwise", op.dtype, flops, read * s, written * s, {"numel": numel, "inputs": 2.0},
                      False, f"{op.name}:depthwise")
    return replace(op, flops=flops, bytes_read=read * s, bytes_written=written * s, dims=dims)


def conv_kernels(op: OpSpec) -> list[tuple[OpSpec, float]]:
    """The kernels of a convolution op: its forward, or the data and weight gradients its backward computes."""
    d = op.dims
    if not d.get("backward", 0):
        return [(_conv_kernel(op, 0), 1.0)]
    grads = [g for g, key in ((1, "grad_input"), (2, "grad_weight")) if int(d.get(key, 1))]
    return [(_conv_kernel(op, g), 1.0) for g in grads] or [(_conv_kernel(op, 2), 1.0)]

