"""Autocast's op stream on tensors autocast does not reach (``meta``): casts where CUDA autocast casts.

`estimate` captures a step on ``meta`` tensors, and PyTorch's autocast keys exist for real device
tensors only (``torch.autocast("meta")`` is refused, and a CUDA autocast region is switched off on a
machine without CUDA). So `AutocastEmulation` applies autocast's documented policy itself, as a
`TorchFunctionMode` above autograd, where PyTorch's own autocast sits:

- ops of the *lower-precision* list (GEMMs, convolutions, fused attention, RNN cells) get their
  floating inputs cast to the half dtype and produce half outputs;
- ops of the *fp32* list (norms, softmax/log-softmax, losses, exp/log/pow, sum) get half inputs cast
  to fp32, or, where the op takes a ``dtype`` (softmax, log_softmax, sum, cumsum, prod), are called
  with ``dtype=float32`` so that the kernel reads half and writes fp32 without a separate cast;
- ops of the *promote* list run in the widest input type; every other op runs in its inputs' dtypes,
  so a residual stream kept in fp32 (embeddings are not autocast) promotes the adds on it to fp32;
- a weight (a leaf that requires grad) is cast once per forward and the cast reused, as autocast's
  cast cache does.

Because the casts are real ``Tensor.to`` calls under autograd, the backward that is captured is the one
autocast produces: half gradients through the half ops, a cast back to fp32 for each weight gradient.

The lists are `CUDA_POLICY` (PyTorch's "CUDA Ops that can autocast to float16/float32" and
``autocast_mode.cpp``) and `CPU_POLICY` (the CPU lists, used by the tests to check this emulation
against a real CPU autocast step op for op). What the emulation does not see: an explicit
``torch.autocast(enabled=False)`` region inside the model (those ops are priced at autocast's policy),
and ops a Python-level function runs internally, except `multi_head_attention_forward`, whose inputs
are cast as its inner projections would cast them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode


@dataclass(frozen=True)
class AutocastPolicy:
    """Names (a torch function's ``__name__``, without dunders) in each of autocast's lists."""

    device: str
    lower: frozenset[str]        # cast to the half dtype
    fp32: frozenset[str]         # cast to fp32
    fp32_dtype_arg: frozenset[str]   # called with dtype=float32 (no separate cast kernel)
    promote: frozenset[str]      # widest input type


_CUDA_LOWER = frozenset({
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution", "_convolution", "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv",
    "linalg_vecdot", "vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot",
    "multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "lstm", "gru", "rnn_tanh", "rnn_relu",
    "scaled_dot_product_attention", "multi_head_attention_forward",
})
_CUDA_FP32 = frozenset({
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow", "rpow", "rdiv", "rtruediv", "softplus", "layer_norm", "native_layer_norm",
    "group_norm", "frobenius_norm", "nuclear_norm", "cosine_similarity", "poisson_nll_loss",
    "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "kl_div", "l1_loss",
    "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss",
    "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits",
    "cross_entropy", "dist", "pdist", "cdist", "renorm", "logsumexp", "norm", "normalize", "interpolate",
    "upsample", "upsample_nearest", "upsample_bilinear", "rms_norm",
})
_CUDA_FP32_DTYPE = frozenset({"softmax", "log_softmax", "cumprod", "cumsum", "sum", "prod", "softmin"})
_CUDA_PROMOTE = frozenset({"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "grid_sample",
                           "index_put", "scatter_add", "tensordot", "cat", "stack", "index_copy"})

CAST_NAME = "autocast::_to_copy"   # the spec name of a cast autocast makes (issued from C++, not Python)

CUDA_POLICY = AutocastPolicy("cuda", _CUDA_LOWER, _CUDA_FP32, _CUDA_FP32_DTYPE, _CUDA_PROMOTE)

# PyTorch's CPU lists (lower: GEMMs, convolutions, attention; fp32: the losses and a few others). Norms,
# softmax and pow are *not* cast to fp32 on the CPU: that is the main difference from CUDA.
CPU_POLICY = AutocastPolicy(
    "cpu",
    frozenset({"conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm", "linear",
               "_convolution", "matmul", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
               "prelu", "scaled_dot_product_attention"}),
    frozenset({"nll_loss", "nll_loss2d", "mse_loss", "cosine_embedding_loss", "hinge_embedding_loss",
               "poisson_nll_loss", "smooth_l1_loss", "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss",
               "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "kl_div", "multilabel_margin_loss",
               "binary_cross_entropy_with_logits", "cdist", "prod"}),
    frozenset(),
    frozenset({"stack", "cat", "index_copy"}),
)

_HALF = (torch.float16, torch.bfloat16)


def _name(func: Any) -> str:
    name = getattr(func, "__name__", "")
    return name.strip("_") if name.startswith("__") else name


class AutocastEmulation(TorchFunctionMode):
    """Applies `policy` with `dtype` (float16 / bfloat16) to every torch call made inside it.

    Enter it *after* (inside) other function modes that must see the cast inputs, e.g. the capture's
    fused-attention router. ``casts`` counts the casts it made (weights once per forward).
    """

    def __init__(self, dtype: torch.dtype, policy: AutocastPolicy = CUDA_POLICY) -> None:
        super().__init__()
        if dtype not in _HALF:
            raise ValueError(f"autocast dtype must be torch.float16 or torch.bfloat16, got {dtype}")
        self.dtype = dtype
        self.policy = policy
        self.casts = 0
        self.casting = False      # True while a cast runs: the capture labels those ops "autocast"
        self._cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def __exit__(self, *exc: Any) -> Any:
        self._cache.clear()   # autocast drops its cast cache when the region ends
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = _name(func)
        policy = self.policy
        if name in policy.lower:
            return func(*self._cast(args, self.dtype), **self._cast(kwargs, self.dtype))
        if name in policy.fp32_dtype_arg and kwargs.get("dtype") is None and _has_half(args):
            kwargs["dtype"] = torch.float32
            return func(*args, **kwargs)
        if name in policy.fp32:
            return func(*self._cast(args, torch.float32), **self._cast(kwargs, torch.float32))
        if name in policy.promote:
            widest = _widest(args, kwargs)
            if widest is not None:
                return func(*self._cast(args, widest), **self._cast(kwargs, widest))
        return func(*args, **kwargs)

    def _cast(self, obj: Any, dtype: torch.dtype) -> Any:
        if isinstance(obj, torch.Tensor):
            if not obj.is_floating_point() or obj.dtype in (dtype, torch.float64):
                return obj
            cacheable = obj.is_leaf and obj.requires_grad
            if cacheable:
                hit = self._cache.get(id(obj))
                if hit is not None and hit[0] is obj and hit[1].dtype == dtype:
                    return hit[1]
            self.casts += 1
            self.casting = True
            try:
                out = obj.to(dtype)
            finally:
                self.casting = False
            if cacheable:
                self._cache[id(obj)] = (obj, out)
            return out
        if isinstance(obj, (list, tuple)):
            return type(obj)(self._cast(x, dtype) for x in obj)
        if isinstance(obj, dict):
            return {k: self._cast(v, dtype) for k, v in obj.items()}
        return obj


def _tensors(obj: Any):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x)


def _has_half(args: Any) -> bool:
    return any(t.dtype in _HALF for t in _tensors(args))


def _widest(args: Any, kwargs: dict) -> torch.dtype | None:
    dtypes = {t.dtype for t in _tensors((args, kwargs)) if t.is_floating_point() and t.dtype != torch.float64}
    if len(dtypes) < 2:
        return None
    return torch.float32 if torch.float32 in dtypes else next(iter(dtypes))
