"""The cost model of a recorded call: an `OpCall` -> `OpSpec` (class, FLOPs, bytes, shape features).

FLOPs of matmuls, convolutions and attention come from `torch.utils.flop_counter.flop_registry`
(a multiply-add counts 2). Other classes use small per-element counts (see `_PER_ELEMENT_FLOPS`):
elementwise 1 per output element (4 for transcendental functions), norm 5 forward / 8 backward,
pooling one per window element, recurrent layers their gate GEMMs, optimizer ops 2 per element
(fused Adam 12, fused SGD 4), data movement and communication 0. Bytes are ours: every tensor
argument read once, every output written once (numel x itemsize); views and metadata ops cost 0.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import torch

from predictor_models.aten.call import OpCall, Shape
from predictor_models.aten.record import record_call
from predictor_models.aten.taxonomy import RECURRENT_CELL_OPS, TRANSCENDENTAL_OPS, classify, is_free_op
from predictor_models.aten.unmodelled import UnmodelledCalls
from predictor_models.op_spec import OpSpec

# Per-element FLOP counts for the classes `torch.utils.flop_counter` does not cover.
_PER_ELEMENT_FLOPS = {"elementwise": 1.0, "transcendental": 4.0, "norm": 5.0, "norm_backward": 8.0,
                      "optimizer": 2.0, "fused_adam": 12.0, "fused_sgd": 4.0, "recurrent_cell": 4.0}
# Names of an optimizer's ops that show it is an Adam step (when the profiler did not say which).
_ADAM_HINTS = ("addcdiv", "addcmul", "lerp", "sqrt", "_fused_adam")
# Classes whose fp32 kernels may run on TF32 tensor cores.
_TF32_CLASSES = frozenset({"gemm", "conv", "attention", "recurrent"})
# What a describer raises on a shape it does not foresee (anything else is a bug and propagates).
_SHAPE_ERRORS = (ValueError, IndexError, TypeError, AssertionError, KeyError, ZeroDivisionError)


def _numel(shape: Shape | None) -> int:
    return math.prod(shape) if shape else (1 if shape == () else 0)


_ITEMSIZE: dict[str, int] = {}


def _itemsize(dtype: str) -> int:
    size = _ITEMSIZE.get(dtype)
    if size is None:
        try:
            size = getattr(torch, dtype).itemsize if dtype else 0
        except AttributeError:
            size = 4
        _ITEMSIZE[dtype] = size
    return size


def _spec_dtype(call: OpCall) -> str:
    """Compute dtype, mapped onto `DTYPES` (first floating input, else first floating output)."""
    for d in call.input_dtypes + call.output_dtypes:
        if d.startswith("float8"):
            return "float8"
        if d in ("float32", "float16", "bfloat16", "float64"):
            return d
    return "float32"  # integer/bool-only ops: the dtype does not drive their cost model


def _flop_formula(base: str) -> Callable[..., int] | None:
    from torch.utils.flop_counter import flop_registry
    packet = getattr(torch.ops.aten, base, None)
    return flop_registry.get(packet) if packet is not None else None


def op_spec_from_call(call: OpCall, *, tf32: bool = False,
                      unmodelled: UnmodelledCalls | None = None) -> OpSpec:
    """Class, FLOPs, bytes and shape features of a recorded call.

    A call whose shapes its class's formula does not foresee keeps its class and bytes with 0
    FLOPs and no shape features (so the predictor prices it from the bytes alone); pass
    ``unmodelled`` to have such calls counted, with the reason, instead of passing unnoticed.
    """
    op_class = classify(call)
    name = call.name
    if op_class == "other" and is_free_op(call.name):
        return OpSpec("other", _spec_dtype(call), 0.0, 0.0, 0.0, {"free": 1}, False, name)
    read = float(sum(_numel(s) * _itemsize(d) for s, d in zip(call.input_shapes, call.input_dtypes)))
    written = float(sum(_numel(s) * _itemsize(d)
                        for s, d in zip(call.output_shapes, call.output_dtypes) if s is not None))
    if not call.output_shapes and call.base.endswith("_") and call.input_shapes:
        # in-place op returning nothing (e.g. _foreach_add_): it writes its first argument(s)
        written = _first_arg_bytes(call)
    describe = _DESCRIBERS.get(op_class, _describe_elementwise)
    try:
        flops, dims = describe(call)
    except _SHAPE_ERRORS as error:
        # A shape we did not foresee: keep the bytes, drop the shape features rather than fail.
        flops, dims = 0.0, {}
        if unmodelled is not None:
            unmodelled.add(name, f"{type(error).__name__}: {error}")
    dtype = _spec_dtype(call)
    uses_tf32 = bool(tf32 and dtype == "float32" and op_class in _TF32_CLASSES)
    return OpSpec(op_class, dtype, float(flops), read, written, dims, uses_tf32, name)


def describe_aten_op(func: Any, args: tuple, kwargs: dict | None, outputs: Any, *, tf32: bool,
                     context: str = "") -> OpSpec:
    """`OpSpec` of one live aten call (shortcut for `record_call` + `op_spec_from_call`)."""
    return op_spec_from_call(record_call(func, args, kwargs, outputs, context=context), tf32=tf32)


def _first_arg_bytes(call: OpCall) -> float:
    first = call.input_shapes[0]
    # Lists of tensors were flattened: take the tensors that share the first list's length by
    # assuming the first argument holds len(inputs)/n_lists tensors (foreach ops take equal lists).
    n_lists = max(1, sum(1 for s in call.input_shapes if s == first))
    per = max(1, len(call.input_shapes) // max(1, n_lists)) if n_lists > 1 else 1
    shapes = call.input_shapes[:per] if n_lists > 1 else (first,)
    return float(sum(_numel(s) for s in shapes) * _itemsize(call.input_dtypes[0]))


def _describe_gemm(call: OpCall) -> tuple[float, dict[str, float]]:
    base, shapes = call.base, call.input_shapes
    if base in ("addmm", "baddbmm", "addbmm", "addmv"):
        shapes = shapes[1:]
    a, b = shapes[0], shapes[1]
    if base in ("mv", "addmv"):
        m, k, n, bb = a[0], a[1], 1, 1
    elif base == "dot":
        m, k, n, bb = 1, a[0], 1, 1
    elif len(a) == 3:
        bb, m, k = a
        n = b[-1]
    else:
        bb, (m, k), n = 1, a[-2:], b[-1]
    formula = _flop_formula(base)
    if formula is not None and base in ("mm", "addmm", "bmm", "baddbmm", "_scaled_mm"):
        flops = formula(*call.input_shapes[:3] if base in ("addmm", "baddbmm")
                        else call.input_shapes[:2], out_val=None)
    else:
        flops = 2 * bb * m * n * k
    if base == "addbmm":
        flops = 2 * a[0] * m * n * k
    return float(flops), {"b": bb, "m": m, "n": n, "k": k}


def _describe_conv(call: OpCall) -> tuple[float, dict[str, float]]:
    base = call.base
    backward = "backward" in base
    transposed = bool(call.scalar("transposed", False))
    groups = int(call.scalar("groups", 1) or 1)
    stride = call.scalar("stride", (1,)) or (1,)
    if backward:
        grad_out, x, w = call.input_shapes[:3]
        out = grad_out
    else:
        x, w = call.input_shapes[:2]
        out = call.output_shapes[0]
    formula = _flop_formula(base)
    flops = 0.0
    if formula is not None:
        if backward:
            mask = call.scalar("output_mask", (True, True, True))
            outs = list(call.output_shapes) + [None] * 3
            flops = formula(grad_out, x, w, None, stride, call.scalar("padding"),
                            call.scalar("dilation"), transposed, call.scalar("output_padding"),
                            groups, mask, out_val=tuple(outs[:3]))
        else:
            flops = formula(x, w, None, stride, call.scalar("padding"), call.scalar("dilation"),
                            transposed, out_val=out)
    else:  # e.g. mkldnn_convolution: same count as aten.convolution
        flops = 2 * _numel(out[2:]) * _numel(w[2:]) * x[0] * w[0] * w[1]
    spatial = len(x) - 2
    h_in, w_in = _fold_spatial(x[2:])
    h_out, w_out = _fold_spatial(out[2:])
    kh, kw = _fold_spatial(w[2:])
    c_in, c_out = x[1], (w[1] * groups if transposed else w[0])
    dims = {"n": x[0], "c_in": c_in, "c_out": c_out, "h_in": h_in, "w_in": w_in,
            "h_out": h_out, "w_out": w_out, "kh": kh, "kw": kw,
            "stride": int(stride[0]) if stride else 1, "groups": groups,
            "transposed": int(transposed), "backward": int(backward),
            "spatial_dims": spatial}
    dilation = max(int(x) for x in (call.scalar("dilation", (1,)) or (1,)))
    if dilation > 1:   # only where it is not 1: a dilated 3x3 runs no Winograd kernel
        dims["dilation"] = dilation
    if backward:  # which gradients the backward computes (the first layer's needs no input gradient)
        mask = call.scalar("output_mask", (True, True, True)) or (True, True, True)
        dims["grad_input"], dims["grad_weight"] = int(bool(mask[0])), int(bool(mask[1]))
    return float(flops), dims


def _fold_spatial(dims: Shape) -> tuple[int, int]:
    """(h, w) of 1-3 spatial dims: 1d -> (L, 1); 3d folds depth into h (D*H, W)."""
    if not dims:
        return 1, 1
    if len(dims) == 1:
        return dims[0], 1
    return math.prod(dims[:-1]), dims[-1]


def _describe_attention(call: OpCall) -> tuple[float, dict[str, float]]:
    base = call.base
    backward = "backward" in base
    shapes = call.input_shapes
    if backward:
        grad_out, q, k, v = shapes[:4]
    else:
        q, k, v = shapes[:3]
    if base.startswith(("_flash_attention", "_efficient_attention")):
        # raw kernels take (batch, seq, heads, dim): bring them to (batch, heads, seq, dim)
        q, k, v = ((s[0], s[2], s[1], s[3]) for s in (q, k, v))
        if backward:
            grad_out = (grad_out[0], grad_out[2], grad_out[1], grad_out[3])
    from torch.utils.flop_counter import sdpa_backward_flop_count, sdpa_flop_count
    flops = (sdpa_backward_flop_count(grad_out, q, k, v) if backward
             else sdpa_flop_count(q, k, v))
    causal = call.scalar("is_causal", False)
    return float(flops), {"b": q[0], "heads": q[1], "s_q": q[2], "s_kv": k[2], "d": q[3],
                          "causal": int(bool(causal)), "backward": int(backward)}


def _describe_norm(call: OpCall) -> tuple[float, dict[str, float]]:
    base = call.base
    backward = "backward" in base
    # every norm/softmax op (and its backward: grad_out first) leads with an input-shaped tensor
    x = call.input_shapes[0]
    numel = _numel(x)
    if "softmax" in base:
        dim = call.scalar("dim", -1)
        cols = x[dim] if x else 1
    elif "layer_norm" in base or "rms_norm" in base:
        norm_shape = call.scalar("normalized_shape") or (x[-1:] if x else ())
        cols = _numel(tuple(norm_shape))
    elif "group_norm" in base:
        group = int(call.scalar("group", 1) or 1)
        cols = numel // max(1, x[0] * group)
    else:  # batch norm: one statistic per channel over N*H*W values
        cols = numel // max(1, x[1] if len(x) > 1 else 1)
    cols = max(1, int(cols))
    per = _PER_ELEMENT_FLOPS["norm_backward" if backward else "norm"]
    return per * numel, {"rows": numel // cols, "cols": cols, "backward": int(backward)}


def _describe_elementwise(call: OpCall) -> tuple[float, dict[str, float]]:
    numel = max([_numel(s) for s in call.output_shapes if s is not None] +
                [_numel(s) for s in call.input_shapes] + [0])
    per = _PER_ELEMENT_FLOPS["transcendental" if call.base in TRANSCENDENTAL_OPS else "elementwise"]
    return per * numel, {"numel": numel, "inputs": len(call.input_shapes)}


def _describe_pooling(call: OpCall) -> tuple[float, dict[str, float]]:
    backward = "backward" in call.base
    x = call.input_shapes[1] if backward and len(call.input_shapes) > 1 else call.input_shapes[0]
    out = call.input_shapes[0] if backward else call.output_shapes[0]
    kernel = call.scalar("kernel_size")
    if kernel:
        k = _numel(tuple(kernel)) if isinstance(kernel, tuple) else int(kernel) ** (len(x) - 2)
    else:  # adaptive pooling: window = input / output size
        k = max(1, _numel(x[2:]) // max(1, _numel(out[2:]))) if out else 1
    return float(_numel(out) * k), {"numel_in": _numel(x), "numel_out": _numel(out), "kernel": k}


def _describe_embedding(call: OpCall) -> tuple[float, dict[str, float]]:
    base = call.base
    backward = "backward" in base
    if base == "embedding_dense_backward":
        grad, indices = call.input_shapes[:2]
        dim = grad[-1] if grad else 1
        vocab = call.scalar("num_weights", call.output_shapes[0][0] if call.output_shapes else 0)
        n_idx = _numel(indices)
    elif base in ("embedding", "_embedding_bag", "_embedding_bag_forward_only"):
        weight, indices = call.input_shapes[:2]
        vocab, dim, n_idx = weight[0], weight[-1], _numel(indices)
    else:  # index_select/gather inside an Embedding module, or other bag variants
        weight = call.input_shapes[0]
        out = call.output_shapes[0] if call.output_shapes else weight
        vocab, dim = (weight[0] if weight else 0), (weight[-1] if weight else 1)
        n_idx = _numel(out) // max(1, dim)
    flops = float(n_idx * dim) if backward else 0.0  # backward scatter-adds one row per index
    return flops, {"indices": n_idx, "dim": dim, "vocab": vocab, "backward": int(backward)}


_RNN_GATES = {0: 1, 1: 1, 2: 4, 3: 3}  # cuDNN/mkldnn mode: RNN_RELU, RNN_TANH, LSTM, GRU


def _describe_recurrent(call: OpCall) -> tuple[float, dict[str, float]]:
    base = call.base
    backward = "backward" in base
    shapes = call.input_shapes
    if base in RECURRENT_CELL_OPS:
        # cells get pre-computed gate inputs [batch, gates*hidden]; the GEMMs ran separately
        gates_in = shapes[0] if not backward else call.output_shapes[0] or shapes[0]
        hidden = call.scalar("hidden_size") or (shapes[2][-1] if len(shapes) > 2 else 1)
        gates = 4 if "lstm" in base else 3 if "gru" in base else 1
        batch = gates_in[0] if gates_in else 1
        hidden = max(1, (gates_in[-1] // gates) if gates_in else hidden)
        flops = _PER_ELEMENT_FLOPS["recurrent_cell"] * gates * batch * hidden
        return flops, {"seq": 1, "batch": batch, "input": gates * hidden, "hidden": hidden,
                       "layers": 1, "directions": 1, "gates": gates, "backward": int(backward)}
    # layer ops (mkldnn, cuDNN, MIOpen; fwd and bwd) lead with the input, then the first weight
    x = shapes[0]
    hidden = int(call.scalar("hidden_size") or 0)
    # cuDNN's and MIOpen's call runs every layer; mkldnn's runs one (its num_layers is the whole stack's)
    layers = 1 if base.startswith("mkldnn_rnn_layer") else int(call.scalar("num_layers", 1) or 1)
    directions = 2 if call.scalar("bidirectional", False) else 1
    mode = call.scalar("mode")
    w = shapes[1] if len(shapes) > 1 else ()
    if hidden and w:
        gates = max(1, w[0] // hidden)
    else:
        gates = _RNN_GATES.get(int(mode), 4) if isinstance(mode, int) else 4
        hidden = hidden or (w[0] // gates if w else 1)
    batch_first = bool(call.scalar("batch_first", False))
    if base.startswith("mkldnn"):
        batch_first = False  # the mkldnn path transposes to time-major before the layer op
    if len(x) == 3:
        seq, batch, inp = (x[1], x[0], x[2]) if batch_first else x
    else:  # packed input: (total steps, input)
        seq, batch, inp = x[0], 1, x[-1]
    per_step = 2 * batch * gates * hidden * (inp + hidden)
    flops = per_step * seq * directions * layers * (2 if backward else 1)
    return float(flops), {"seq": seq, "batch": batch, "input": inp, "hidden": hidden,
                          "layers": layers, "directions": directions, "gates": gates,
                          "backward": int(backward)}


def _describe_optimizer(call: OpCall) -> tuple[float, dict[str, float]]:
    base = call.base
    if call.output_shapes and any(s is not None for s in call.output_shapes):
        shapes: Iterable[Shape] = [s for s in call.output_shapes if s is not None]
    else:
        shapes = call.input_shapes
    shapes = list(shapes)
    # foreach ops take several equally long lists: count the tensors of one list only
    first = call.input_shapes[0] if call.input_shapes else ()
    n_lists = max(1, sum(1 for s in call.input_shapes if s == first))
    tensors = max(1, len(call.input_shapes) // n_lists) if base.startswith("_foreach") else 1
    if base.startswith("_foreach") and not call.output_shapes:
        shapes = list(call.input_shapes[:tensors])
    numel = sum(_numel(s) for s in shapes[:max(tensors, 1)]) if base.startswith("_foreach") \
        else max([_numel(s) for s in shapes] + [0])
    if base.startswith(("_fused_adam", "_fused_adamw")):
        kind, per = 2, _PER_ELEMENT_FLOPS["fused_adam"]
        tensors = max(1, len(call.input_shapes) // 5)  # params, grads, exp_avgs, exp_avg_sqs, steps
        numel = sum(_numel(s) for s in call.input_shapes[:tensors])
    elif base.startswith("_fused_sgd"):
        has_momentum = len(call.input_shapes) >= 3 * max(1, n_lists)
        kind, per = (1 if has_momentum else 0), _PER_ELEMENT_FLOPS["fused_sgd"]
    elif call.scalar("opt_kind") is not None:  # the profiler saw which optimizer stepped
        kind, per = int(call.scalar("opt_kind")), _PER_ELEMENT_FLOPS["optimizer"]
    elif any(h in base for h in _ADAM_HINTS):
        kind, per = 2, _PER_ELEMENT_FLOPS["optimizer"]
    else:
        kind, per = 0, _PER_ELEMENT_FLOPS["optimizer"]
    return per * numel, {"numel": numel, "tensors": tensors, "kind": kind}


def _describe_data_movement(call: OpCall) -> tuple[float, dict[str, float]]:
    numel = max([_numel(s) for s in call.output_shapes if s is not None] +
                [_numel(s) for s in call.input_shapes[:1]] + [0])
    return 0.0, {"numel": numel}


def _describe_communication(call: OpCall) -> tuple[float, dict[str, float]]:
    nbytes = sum(_numel(s) * _itemsize(d) for s, d in zip(call.input_shapes, call.input_dtypes))
    return 0.0, {"bytes": nbytes, "ranks": int(call.scalar("ranks", 0) or 0)}


def _describe_other(call: OpCall) -> tuple[float, dict[str, float]]:
    return 0.0, {}


_DESCRIBERS: dict[str, Callable[[OpCall], tuple[float, dict[str, float]]]] = {
    "gemm": _describe_gemm, "conv": _describe_conv, "attention": _describe_attention,
    "norm": _describe_norm, "elementwise": _describe_elementwise, "pooling": _describe_pooling,
    "embedding": _describe_embedding, "recurrent": _describe_recurrent,
    "optimizer": _describe_optimizer, "data_movement": _describe_data_movement,
    "communication": _describe_communication, "other": _describe_other,
}
