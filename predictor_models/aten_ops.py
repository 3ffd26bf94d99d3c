"""Turn one captured aten call into an `OpSpec` (class, FLOPs, bytes, shape features).

Two steps keep what the profiler stores small: `record_call` reduces a live call to an `OpCall`
(names, shapes, dtypes and the few scalar arguments the features need; no tensor references), and
`op_spec_from_call` turns that record into an `OpSpec` later, once per distinct signature.

FLOPs of matmuls, convolutions and attention come from `torch.utils.flop_counter.flop_registry`
(a multiply-add counts 2). Other classes use small per-element counts (see `_PER_ELEMENT_FLOPS`):
elementwise 1 per output element (4 for transcendental functions), norm 5 forward / 8 backward,
pooling one per window element, recurrent layers their gate GEMMs, optimizer ops 2 per element
(fused Adam 12, fused SGD 4), data movement and communication 0. Bytes are ours: every tensor
argument read once, every output written once (numel x itemsize); views and metadata ops cost 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch

from predictor_models.op_spec import OpSpec

Shape = tuple[int, ...]

# Views and metadata ops: no kernel, no bytes. The profiler does not even record them.
FREE_OPS: frozenset[str] = frozenset({
    "view", "_unsafe_view", "_reshape_alias", "reshape", "t", "t_", "transpose", "transpose_",
    "permute", "expand", "expand_as", "as_strided", "as_strided_", "detach", "detach_", "alias",
    "unsqueeze", "unsqueeze_", "squeeze", "squeeze_", "select", "slice", "split", "split_with_sizes",
    "unsafe_split", "unsafe_split_with_sizes", "unbind", "chunk", "narrow", "diagonal", "unfold",
    "view_as", "view_as_real", "view_as_complex", "real", "imag", "lift_fresh", "lift", "empty",
    "empty_like", "empty_strided", "new_empty", "new_empty_strided", "set_", "resize_",
    "resize_as_", "size", "sym_size", "stride", "sym_stride", "numel", "sym_numel", "dim",
    "storage_offset", "sym_storage_offset", "is_contiguous", "is_same_size", "is_nonzero",
    "is_strides_like_format", "is_non_overlapping_and_dense", "_has_compatible_shallow_copy_type",
    "_record_function_enter", "_record_function_enter_new", "_record_function_exit",
    "record_stream", "_conj", "conj", "_neg_view", "resolve_conj", "resolve_neg", "movedim",
    "swapaxes", "swapdims", "flatten", "unflatten", "_nested_tensor_size", "prim_layout", "device",
})

_GEMM = frozenset({"mm", "addmm", "bmm", "baddbmm", "_scaled_mm", "addbmm", "addmv", "mv", "dot",
                   "_int_mm", "matmul", "linear", "mkldnn_linear"})
_NORM = frozenset({
    "native_batch_norm", "native_batch_norm_backward", "_native_batch_norm_legit",
    "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
    "_batch_norm_with_update", "_batch_norm_with_update_functional", "_batch_norm_no_update",
    "batch_norm_backward", "cudnn_batch_norm", "cudnn_batch_norm_backward", "miopen_batch_norm",
    "miopen_batch_norm_backward", "native_layer_norm", "native_layer_norm_backward",
    "native_group_norm", "native_group_norm_backward", "_fused_rms_norm", "_fused_rms_norm_backward",
    "rms_norm", "_softmax", "_softmax_backward_data", "_log_softmax", "_log_softmax_backward_data",
    "_safe_softmax", "softmax", "log_softmax",
})
_EMBEDDING = frozenset({"embedding", "embedding_dense_backward", "embedding_backward",
                        "_embedding_bag", "_embedding_bag_forward_only", "_embedding_bag_backward",
                        "_embedding_bag_dense_backward", "_embedding_bag_per_sample_weights_backward",
                        "embedding_renorm_"})
# index ops count as embedding only when the profiler says they ran inside an Embedding module.
_EMBEDDING_IF_CONTEXT = frozenset({"index_select", "gather", "index", "_unsafe_index",
                                   "index_add", "index_add_", "index_put", "index_put_"})
_RECURRENT_LAYER = frozenset({"mkldnn_rnn_layer", "mkldnn_rnn_layer_backward", "_cudnn_rnn",
                              "_cudnn_rnn_backward", "miopen_rnn", "miopen_rnn_backward", "lstm",
                              "gru", "rnn_tanh", "rnn_relu", "mkldnn_rnn"})
_RECURRENT_CELL = frozenset({"_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl",
                             "_thnn_fused_lstm_cell_backward", "_thnn_fused_gru_cell",
                             "_thnn_fused_gru_cell_backward", "_thnn_differentiable_lstm_cell_backward",
                             "_thnn_differentiable_gru_cell_backward", "lstm_cell", "gru_cell",
                             "rnn_tanh_cell", "rnn_relu_cell"})
_DATA_MOVEMENT = frozenset({
    "copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "to", "cat", "stack", "clone",
    "contiguous", "index", "_unsafe_index", "index_put", "index_put_", "_index_put_impl_",
    "index_select", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_",
    "scatter_reduce", "index_add", "index_add_", "index_copy", "index_copy_", "index_fill_",
    "constant_pad_nd", "repeat", "repeat_interleave", "flip", "roll", "narrow_copy",
    "slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter", "masked_select",
    "masked_scatter", "nonzero", "expand_copy", "permute_copy", "transpose_copy", "view_copy",
    "_unsafe_view_copy", "select_backward", "slice_backward", "unsqueeze_copy", "squeeze_copy",
    "t_copy", "split_with_sizes_copy", "split_copy", "unbind_copy", "tril", "triu",
    "reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d",
    "upsample_nearest2d", "upsample_nearest2d_backward", "pixel_shuffle", "im2col", "col2im",
    "_pin_memory", "_local_scalar_dense",
})
_TRANSCENDENTAL = frozenset({
    "exp", "exp_", "exp2", "expm1", "log", "log_", "log2", "log10", "log1p", "sqrt", "sqrt_",
    "rsqrt", "rsqrt_", "pow", "pow_", "tanh", "tanh_", "tanh_backward", "sigmoid", "sigmoid_",
    "sigmoid_backward", "gelu", "gelu_", "gelu_backward", "silu", "silu_", "silu_backward", "erf",
    "erfinv", "sin", "cos", "softplus", "softplus_backward", "mish", "mish_backward", "elu",
    "elu_backward", "logsumexp", "log_sigmoid_forward", "log_sigmoid_backward",
    "binary_cross_entropy", "binary_cross_entropy_backward",
    "binary_cross_entropy_with_logits", "atan", "atan2", "reciprocal",
})
_ELEMENTWISE_PREFIXES = (
    "add", "sub", "mul", "div", "neg", "abs", "sign", "sgn", "clamp", "clip", "where", "masked_fill",
    "relu", "threshold", "hardtanh", "leaky_relu", "hardswish", "hardsigmoid", "prelu", "glu",
    "dropout", "native_dropout", "bernoulli", "uniform", "normal", "rand", "fill", "zero", "zeros",
    "ones", "full", "arange", "linspace", "sum", "mean", "amax", "amin", "max", "min", "argmax",
    "argmin", "prod", "norm", "linalg_vector_norm", "var", "std", "any", "all", "cumsum", "cumprod",
    "eq", "ne", "lt", "gt", "le", "ge", "logical", "bitwise", "isnan", "isinf", "nan_to_num",
    "remainder", "fmod", "floor", "ceil", "round", "trunc", "frac", "maximum", "minimum", "lerp",
    "addcmul", "addcdiv", "square", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "soft_margin", "kl_div", "cross_entropy", "_log_softmax", "topk", "sort", "scalar_tensor",
    "_fused_dropout", "_masked_scale", "masked", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt",
    "pow", "gelu", "silu", "erf", "softplus", "mish", "elu", "logsumexp", "reciprocal", "sin", "cos",
    "copysign", "signbit", "amp_",
)
_POOL_KEYWORDS = ("pool",)
_OPTIMIZER_PREFIXES = ("_foreach_", "_fused_adam", "_fused_adamw", "_fused_sgd", "_fused_adagrad")
_ADAM_HINTS = ("addcdiv", "addcmul", "lerp", "sqrt", "_fused_adam")

# Per-element FLOP counts for the classes `torch.utils.flop_counter` does not cover.
_PER_ELEMENT_FLOPS = {"elementwise": 1.0, "transcendental": 4.0, "norm": 5.0, "norm_backward": 8.0,
                      "optimizer": 2.0, "fused_adam": 12.0, "fused_sgd": 4.0, "recurrent_cell": 4.0}

# Scalar arguments worth keeping (by schema name): they change cost or name the shape features.
_KEPT_SCALARS = frozenset({
    "stride", "padding", "dilation", "transposed", "output_padding", "groups", "output_mask",
    "is_causal", "kernel_size", "dim", "normalized_shape", "train", "training", "num_layers",
    "bidirectional", "batch_first", "hidden_size", "mode", "has_biases", "N", "C", "HxW", "group",
    "reverse", "proj_size", "momentum", "maximize", "amsgrad", "padding_idx", "num_weights",
})


@dataclass(frozen=True)
class OpCall:
    """A captured aten call reduced to what `op_spec_from_call` needs. Hashable, JSON-friendly.

    Args:
        name: op packet name, e.g. ``"aten::addmm"``.
        input_shapes / input_dtypes: every tensor argument in schema order (lists flattened;
            a ``None`` inside a tensor list is skipped).
        output_shapes / output_dtypes: every output tensor (undefined outputs are ``None``/``""``).
        scalars: sorted ``(name, value)`` pairs of the kept scalar arguments (`_KEPT_SCALARS`).
        context: ``"optimizer"`` inside an optimizer step, ``"embedding"`` inside an Embedding
            module, else ``""``; it changes the class of otherwise ambiguous ops.
        overload: the overload name, e.g. ``"default"``.
    """

    name: str
    input_shapes: tuple[Shape, ...] = ()
    input_dtypes: tuple[str, ...] = ()
    output_shapes: tuple[Shape | None, ...] = ()
    output_dtypes: tuple[str, ...] = ()
    scalars: tuple[tuple[str, Any], ...] = ()
    context: str = ""
    overload: str = "default"

    @property
    def base(self) -> str:
        """Op name without namespace: ``"aten::addmm"`` -> ``"addmm"``."""
        return self.name.rsplit("::", 1)[-1]

    @property
    def namespace(self) -> str:
        return self.name.split("::", 1)[0] if "::" in self.name else ""

    def scalar(self, key: str, default: Any = None) -> Any:
        for k, v in self.scalars:
            if k == key:
                return v
        return default

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "overload": self.overload,
                "input_shapes": [list(s) for s in self.input_shapes],
                "input_dtypes": list(self.input_dtypes),
                "output_shapes": [None if s is None else list(s) for s in self.output_shapes],
                "output_dtypes": list(self.output_dtypes),
                "scalars": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.scalars},
                "context": self.context}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "OpCall":
        return cls(name=d["name"], overload=d.get("overload", "default"),
                   input_shapes=tuple(tuple(s) for s in d.get("input_shapes", ())),
                   input_dtypes=tuple(d.get("input_dtypes", ())),
                   output_shapes=tuple(None if s is None else tuple(s)
                                       for s in d.get("output_shapes", ())),
                   output_dtypes=tuple(d.get("output_dtypes", ())),
                   scalars=tuple(sorted((k, _freeze(v)) for k, v in d.get("scalars", {}).items())),
                   context=d.get("context", ""))


# ----------------------------------------------------------------------------- capture side

def op_base_name(func: Any) -> str:
    """``aten.addmm.default`` -> ``"addmm"`` (works for any OpOverload)."""
    return func._overloadpacket.__name__ if hasattr(func, "_overloadpacket") else str(func)


def is_free_op(func_or_name: Any) -> bool:
    """True for views and metadata ops, which launch no kernel and move no bytes."""
    if isinstance(func_or_name, str):
        name = func_or_name
        ns = name.split("::", 1)[0] if "::" in name else "aten"
        base = name.rsplit("::", 1)[-1]
    else:
        ns = getattr(func_or_name, "namespace", "aten")
        base = op_base_name(func_or_name)
    return ns in ("profiler", "prim") or base in FREE_OPS


_BINDERS: dict[Any, tuple[tuple[int, str, bool, Any], ...]] = {}


def _binder(func: Any) -> tuple[tuple[int, str, bool, Any], ...]:
    """Positions of the kept scalar arguments in `func`'s schema, computed once per overload."""
    found = _BINDERS.get(func)
    if found is None:
        entries = []
        for i, arg in enumerate(func._schema.arguments):
            if arg.name in _KEPT_SCALARS:
                default = arg.default_value if arg.has_default_value() else None
                entries.append((i, arg.name, arg.kwarg_only, default))
        found = _BINDERS[func] = tuple(entries)
    return found


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, torch.SymInt):
        return int(v)
    return str(v)


def _add_tensors(obj: Any, shapes: list, dtypes: list) -> None:
    if isinstance(obj, torch.Tensor):
        shapes.append(tuple(obj.shape))
        dtypes.append(_dtype_name(obj.dtype))
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            if isinstance(x, torch.Tensor):
                shapes.append(tuple(x.shape))
                dtypes.append(_dtype_name(x.dtype))


_DTYPE_NAMES: dict[torch.dtype, str] = {}


def _dtype_name(dtype: torch.dtype) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).replace("torch.", "")
    return name


def record_call(func: Any, args: tuple, kwargs: dict | None, outputs: Any, *,
                context: str = "", extra_scalars: tuple[tuple[str, Any], ...] = ()) -> OpCall:
    """Reduce a live aten call to an `OpCall` (no tensor references are kept).

    ``extra_scalars`` adds facts the call itself cannot show, e.g. ``("opt_kind", 2)`` for an
    op of an Adam step.
    """
    in_shapes: list[Shape] = []
    in_dtypes: list[str] = []
    for a in args:
        _add_tensors(a, in_shapes, in_dtypes)
    if kwargs:
        for a in kwargs.values():
            _add_tensors(a, in_shapes, in_dtypes)
    out_shapes: list[Shape | None] = []
    out_dtypes: list[str] = []
    outs = outputs if isinstance(outputs, (list, tuple)) else (outputs,)
    for o in outs:
        if isinstance(o, torch.Tensor):
            out_shapes.append(tuple(o.shape))
            out_dtypes.append(_dtype_name(o.dtype))
        elif isinstance(o, (list, tuple)):
            _add_tensors(o, out_shapes, out_dtypes)  # type: ignore[arg-type]
        elif o is None and isinstance(outputs, tuple):
            out_shapes.append(None)
            out_dtypes.append("")
    scalars = []
    for i, name, kwarg_only, default in _binder(func):
        if not kwarg_only and i < len(args):
            v = args[i]
        elif kwargs and name in kwargs:
            v = kwargs[name]
        else:
            v = default
        scalars.append((name, _freeze(v)))
    scalars.extend(extra_scalars)
    if getattr(func, "namespace", "") in ("c10d", "_c10d_functional", "c10d_functional"):
        ranks = _group_size(args, kwargs)
        if ranks:
            scalars.append(("ranks", ranks))
    packet = func._overloadpacket
    return OpCall(name=getattr(packet, "_qualified_op_name", str(packet)),
                  input_shapes=tuple(in_shapes), input_dtypes=tuple(in_dtypes),
                  output_shapes=tuple(out_shapes), output_dtypes=tuple(out_dtypes),
                  scalars=tuple(sorted(scalars)), context=context,
                  overload=getattr(func, "_overloadname", "default"))


def _group_size(args: tuple, kwargs: dict | None) -> int:
    """World size of a c10d op's process group, when one of its arguments exposes it."""
    for a in list(args) + list((kwargs or {}).values()):
        size = getattr(a, "size", None)
        if callable(size) and not isinstance(a, torch.Tensor):
            try:
                return int(size())
            except Exception:  # a ScriptObject without size(): unknown, not an error
                continue
    return 0


def describe_aten_op(func: Any, args: tuple, kwargs: dict | None, outputs: Any, *, tf32: bool,
                     context: str = "") -> OpSpec:
    """`OpSpec` of one live aten call (shortcut for `record_call` + `op_spec_from_call`)."""
    return op_spec_from_call(record_call(func, args, kwargs, outputs, context=context), tf32=tf32)


# ----------------------------------------------------------------------------- classification

def classify(call: OpCall) -> str:
    """One of `OP_CLASSES` for `call` (``"other"`` also for free ops)."""
    base, ns = call.base, call.namespace
    if ns in ("c10d", "_c10d_functional", "c10d_functional", "_dtensor"):
        return "communication"
    if is_free_op(call.name):
        return "other"
    if base.startswith(_OPTIMIZER_PREFIXES):
        return "optimizer"
    if call.context == "optimizer":
        return "optimizer"
    if base in _GEMM:
        return "gemm"
    if "conv" in base and "convert" not in base:
        return "conv"
    if ("scaled_dot_product" in base or "flash_attention" in base or "efficient_attention" in base
            or "cudnn_attention" in base):
        return "attention"
    if base in _NORM:
        return "norm"
    if base in _EMBEDDING or (call.context == "embedding" and base in _EMBEDDING_IF_CONTEXT):
        return "embedding"
    if base in _RECURRENT_LAYER or base in _RECURRENT_CELL:
        return "recurrent"
    if any(k in base for k in _POOL_KEYWORDS):
        return "pooling"
    if base in _DATA_MOVEMENT:
        return "data_movement"
    if base in _TRANSCENDENTAL or base.lstrip("_").startswith(_ELEMENTWISE_PREFIXES):
        return "elementwise"
    return "other"


# ----------------------------------------------------------------------------- features

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


def op_spec_from_call(call: OpCall, *, tf32: bool = False) -> OpSpec:
    """Class, FLOPs, bytes and shape features of a recorded call."""
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
    except (ValueError, IndexError, TypeError, AssertionError, KeyError, ZeroDivisionError):
        # A shape we did not foresee: keep the bytes, drop the shape features rather than fail.
        flops, dims = 0.0, {}
    dtype = _spec_dtype(call)
    uses_tf32 = bool(tf32 and dtype == "float32" and op_class in ("gemm", "conv", "attention",
                                                                  "recurrent"))
    return OpSpec(op_class, dtype, float(flops), read, written, dims, uses_tf32, name)


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
    return float(flops), {"n": x[0], "c_in": c_in, "c_out": c_out, "h_in": h_in, "w_in": w_in,
                          "h_out": h_out, "w_out": w_out, "kh": kh, "kw": kw,
                          "stride": int(stride[0]) if stride else 1, "groups": groups,
                          "transposed": int(transposed), "backward": int(backward),
                          "spatial_dims": spatial}


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
    per = _PER_ELEMENT_FLOPS["transcendental" if call.base in _TRANSCENDENTAL else "elementwise"]
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
    if base in _RECURRENT_CELL:
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
    layers = int(call.scalar("num_layers", 1) or 1)
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
