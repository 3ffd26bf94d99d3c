"""Which op class an aten op belongs to: one name -> class table, then a few rules for the rest.

`classify` decides in this order, and each step only sees what the steps before left:

1. a communication namespace (``c10d``, ...) -> ``"communication"``;
2. a free op (view or metadata, `FREE_OPS`) -> ``"other"``;
3. an optimizer kernel by prefix, or any op run inside an optimizer step -> ``"optimizer"``;
4. the name table `NAME_CLASS` (each name in exactly one class; a test checks it), where an op's
   context may override the class (`CONTEXT_CLASS`: index ops inside an Embedding module);
5. name rules for what no table lists: ``conv``, attention kernels, ``pool``, elementwise prefixes.

The table wins over the rules: a listed name goes where the table says, whatever its spelling
would match (``masked_select`` is data movement, not an elementwise ``masked*`` op).
"""
from __future__ import annotations

from typing import Any

from predictor_models.aten.call import OpCall

COMMUNICATION_NAMESPACES: frozenset[str] = frozenset({"c10d", "_c10d_functional", "c10d_functional",
                                                      "_dtensor"})
# namespaces whose ops are all bookkeeping (profiler ranges, prim metadata)
_FREE_NAMESPACES = ("profiler", "prim")

# Views and metadata ops: no kernel, no bytes. The profiler does not even record them.
FREE_OPS: frozenset[str] = frozenset({
    "view", "_unsafe_view", "_reshape_alias", "reshape", "t", "t_", "transpose", "transpose_",
    "permute", "expand", "expand_as", "as_strided", "as_strided_", "detach", "detach_", "alias",
    "unsqueeze", "unsqueeze_", "squeeze", "squeeze_", "select", "slice", "split",
    "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "unbind", "chunk", "narrow",
    "diagonal", "unfold", "view_as", "view_as_real", "view_as_complex", "real", "imag",
    "lift_fresh", "lift", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "set_", "resize_", "resize_as_", "size", "sym_size", "stride", "sym_stride", "numel",
    "sym_numel", "dim", "storage_offset", "sym_storage_offset", "is_contiguous", "is_same_size",
    "is_nonzero", "is_strides_like_format", "is_non_overlapping_and_dense",
    "_has_compatible_shallow_copy_type", "_record_function_enter", "_record_function_enter_new",
    "_record_function_exit", "record_stream", "_conj", "conj", "_neg_view", "resolve_conj",
    "resolve_neg", "movedim", "swapaxes", "swapdims", "flatten", "unflatten", "_nested_tensor_size",
    "prim_layout", "device",
})
GEMM_OPS: frozenset[str] = frozenset({
    "mm", "addmm", "bmm", "baddbmm", "_scaled_mm", "addbmm", "addmv", "mv", "dot", "_int_mm",
    "matmul", "linear", "mkldnn_linear",
})
NORM_OPS: frozenset[str] = frozenset({
    "native_batch_norm", "native_batch_norm_backward", "_native_batch_norm_legit",
    "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
    "_batch_norm_with_update", "_batch_norm_with_update_functional", "_batch_norm_no_update",
    "batch_norm_backward", "cudnn_batch_norm", "cudnn_batch_norm_backward", "miopen_batch_norm",
    "miopen_batch_norm_backward", "native_layer_norm", "native_layer_norm_backward",
    "native_group_norm", "native_group_norm_backward", "_fused_rms_norm",
    "_fused_rms_norm_backward", "rms_norm", "_softmax", "_softmax_backward_data", "_log_softmax",
    "_log_softmax_backward_data", "_safe_softmax", "softmax", "log_softmax",
})
EMBEDDING_OPS: frozenset[str] = frozenset({
    "embedding", "embedding_dense_backward", "embedding_backward", "_embedding_bag",
    "_embedding_bag_forward_only", "_embedding_bag_backward", "_embedding_bag_dense_backward",
    "_embedding_bag_per_sample_weights_backward", "embedding_renorm_",
})
RECURRENT_LAYER_OPS: frozenset[str] = frozenset({
    "mkldnn_rnn_layer", "mkldnn_rnn_layer_backward", "_cudnn_rnn", "_cudnn_rnn_backward",
    "miopen_rnn", "miopen_rnn_backward", "lstm", "gru", "rnn_tanh", "rnn_relu", "mkldnn_rnn",
})
RECURRENT_CELL_OPS: frozenset[str] = frozenset({
    "_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl",
    "_thnn_fused_lstm_cell_backward", "_thnn_fused_gru_cell", "_thnn_fused_gru_cell_backward",
    "_thnn_differentiable_lstm_cell_backward", "_thnn_differentiable_gru_cell_backward",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
})
DATA_MOVEMENT_OPS: frozenset[str] = frozenset({
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
TRANSCENDENTAL_OPS: frozenset[str] = frozenset({
    "exp", "exp_", "exp2", "expm1", "log", "log_", "log2", "log10", "log1p", "sqrt", "sqrt_",
    "rsqrt", "rsqrt_", "pow", "pow_", "tanh", "tanh_", "tanh_backward", "sigmoid", "sigmoid_",
    "sigmoid_backward", "gelu", "gelu_", "gelu_backward", "silu", "silu_", "silu_backward", "erf",
    "erfinv", "sin", "cos", "softplus", "softplus_backward", "mish", "mish_backward", "elu",
    "elu_backward", "logsumexp", "log_sigmoid_forward", "log_sigmoid_backward",
    "binary_cross_entropy", "binary_cross_entropy_backward", "binary_cross_entropy_with_logits",
    "atan", "atan2", "reciprocal",
})

# The name table. Transcendental functions are elementwise ops that cost more per element
# (`costs`); recurrent cells and layers differ only in how their FLOPs are counted.
CLASS_NAMES: dict[str, frozenset[str]] = {
    "gemm": GEMM_OPS,
    "norm": NORM_OPS,
    "embedding": EMBEDDING_OPS,
    "recurrent": RECURRENT_LAYER_OPS | RECURRENT_CELL_OPS,
    "data_movement": DATA_MOVEMENT_OPS,
    "elementwise": TRANSCENDENTAL_OPS,
}
NAME_CLASS: dict[str, str] = {name: op_class for op_class, names in CLASS_NAMES.items()
                              for name in names}

# Index ops are data movement, except inside an Embedding module (the profiler's context says so),
# where they are the embedding's gather and scatter-add.
EMBEDDING_IF_CONTEXT: frozenset[str] = frozenset({
    "index_select", "gather", "index", "_unsafe_index", "index_add", "index_add_", "index_put",
    "index_put_",
})
CONTEXT_CLASS: dict[tuple[str, str], str] = {("embedding", name): "embedding"
                                             for name in EMBEDDING_IF_CONTEXT}

# Name rules (step 5) and the optimizer prefixes (step 3).
ELEMENTWISE_PREFIXES: tuple[str, ...] = (
    "add", "sub", "mul", "div", "neg", "abs", "sign", "sgn", "clamp", "clip", "where",
    "masked_fill", "relu", "threshold", "hardtanh", "leaky_relu", "hardswish", "hardsigmoid",
    "prelu", "glu", "dropout", "native_dropout", "bernoulli", "uniform", "normal", "rand", "fill",
    "zero", "zeros", "ones", "full", "arange", "linspace", "sum", "mean", "amax", "amin", "max",
    "min", "argmax", "argmin", "prod", "norm", "linalg_vector_norm", "var", "std", "any", "all",
    "cumsum", "cumprod", "eq", "ne", "lt", "gt", "le", "ge", "logical", "bitwise", "isnan", "isinf",
    "nan_to_num", "remainder", "fmod", "floor", "ceil", "round", "trunc", "frac", "maximum",
    "minimum", "lerp", "addcmul", "addcdiv", "square", "nll_loss", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "soft_margin", "kl_div", "cross_entropy", "_log_softmax",
    "topk", "sort", "scalar_tensor", "_fused_dropout", "_masked_scale", "masked", "sigmoid", "tanh",
    "exp", "log", "sqrt", "rsqrt", "pow", "gelu", "silu", "erf", "softplus", "mish", "elu",
    "logsumexp", "reciprocal", "sin", "cos", "copysign", "signbit", "amp_",
)
POOL_KEYWORDS: tuple[str, ...] = ("pool",)
OPTIMIZER_PREFIXES: tuple[str, ...] = ("_foreach_", "_fused_adam", "_fused_adamw", "_fused_sgd",
                                       "_fused_adagrad")

_ATTENTION_WORDS = ("scaled_dot_product", "flash_attention", "efficient_attention", "cudnn_attention")


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
    return ns in _FREE_NAMESPACES or base in FREE_OPS


def class_by_rule(base: str) -> str:
    """The class the name rules give an op the table does not list (``"other"`` when none fits)."""
    if "conv" in base and "convert" not in base:
        return "conv"
    if any(word in base for word in _ATTENTION_WORDS):
        return "attention"
    if any(k in base for k in POOL_KEYWORDS):
        return "pooling"
    if base.lstrip("_").startswith(ELEMENTWISE_PREFIXES):
        return "elementwise"
    return "other"


def classify(call: OpCall) -> str:
    """One of `OP_CLASSES` for `call` (``"other"`` also for free ops)."""
    base = call.base
    if call.namespace in COMMUNICATION_NAMESPACES:
        return "communication"
    if is_free_op(call.name):
        return "other"
    if call.context == "optimizer" or base.startswith(OPTIMIZER_PREFIXES):
        return "optimizer"
    op_class = NAME_CLASS.get(base)
    if op_class is not None:
        return CONTEXT_CLASS.get((call.context, base), op_class)
    return class_by_rule(base)
