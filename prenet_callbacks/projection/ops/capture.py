"""Capture the aten ops of one training step without timing, for `estimate` (``meta`` tensors welcome).

A `TorchDispatchMode` records every non-view aten call of the forward and the backward as an
`OpCall` (shapes and dtypes only), in order; saved-tensor hooks measure the activations autograd
keeps for backward. `F.scaled_dot_product_attention` is recorded once per call as an ``attention``
op (see `attention.py`): on ``meta`` and CPU it would otherwise be priced as whatever fallback ran
here, not as the fused kernel a GPU target runs. On ``meta`` tensors nothing is computed and no memory is used, so a ResNet-50 at batch
1024 captures in about a second. (`prenet_callbacks.measure.profiling` times ops during real runs; this
is the untimed counterpart, kept separate so that it can run where the profiler's hooks cannot.)
"""
from __future__ import annotations

import contextlib
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from predictor_models.aten_ops import OpCall, is_free_op, op_base_name, record_call

from prenet_callbacks.projection.ops.attention import SdpaShape, fused_spec
from prenet_callbacks.projection.ops.autocast import CUDA_POLICY, AutocastEmulation, AutocastPolicy
from prenet_callbacks.projection.ops.fp8 import Fp8LinearMode
from prenet_callbacks.projection.ops.layout import channels_last_flag
from prenet_callbacks.projection.ops.meta_values import MetaValues, ValueAnswers, is_mask_name, uniform_host_value

_DATA_DEPENDENT_HINTS = ("data-dependent", "data dependent", "meta tensor", "meta device", "nonzero",
                         "item()", "_local_scalar_dense", "cannot copy out of meta", "not implemented for 'meta'",
                         "could not run", "meta")


class CaptureError(RuntimeError):
    """The model could not run one step for capture; the message says why and what to try."""


@dataclass
class Capture:
    """Ops of one forward + backward, per phase, with counts; activation bytes; the model's size."""

    ops: dict[str, Counter] = field(default_factory=lambda: {"fwd": Counter(), "bwd": Counter()})
    # the same calls in the order they ran (an `OpCall`, or an `OpSpec` for a whole SDPA call)
    sequence: dict[str, list] = field(default_factory=lambda: {"fwd": [], "bwd": []})
    saved_bytes: float = 0.0           # activations kept for backward (unique storages, no parameters)
    params: int = 0
    param_tensors: list[int] = field(default_factory=list)   # numel of each trainable parameter
    param_dtype: str = "float32"
    batch_size: int | None = None
    on_meta: bool = True
    input_bytes: float = 0.0           # bytes of the example input (one host-to-device copy per step)
    loss_source: str = "loss_fn"       # "loss_fn", "output.loss" or "sum of the output" (no loss given)
    autocast: str | None = None        # "float16"/"bfloat16": captured under autocast's policy (dtypes are real)
    layer_spans: list = field(default_factory=list)   # [start, end) of each repeated layer in sequence["fwd"]
    layer_saved_bytes: float = 0.0     # of saved_bytes, what was saved inside those layers
    layer_input_bytes: float = 0.0     # the layers' inputs (what activation checkpointing keeps)
    fp8_linears: int | None = None     # FP8 capture: Linear calls routed through torchao's FP8 ops (`fp8.py`)
    fp8_skipped: list = field(default_factory=list)   # weight shapes of Linears left in bf16
    # on meta: the tensor values the model read and how they were answered (`meta_values.py`)
    value_answers: ValueAnswers = field(default_factory=ValueAnswers)


class _Recorder(TorchDispatchMode):
    def __init__(self, capture: Capture, context: Callable[[], str]) -> None:
        super().__init__()
        self.capture = capture
        self.phase = "fwd"
        self.context = context
        self.quiet = 0
        self.channels_last_seen = False   # a convolution of this capture took a channels-last input or weight

    def add(self, item: Any) -> None:
        self.capture.ops[self.phase][item] += 1
        self.capture.sequence[self.phase].append(item)

    @contextlib.contextmanager
    def suppressed(self) -> Iterator[None]:
        """Ops run inside (an SDPA call's own fallback) are not recorded."""
        self.quiet += 1
        try:
            yield
        finally:
            self.quiet -= 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not self.quiet and not is_free_op(func):
            extra = ()
            base = op_base_name(func)
            if "convolution" in base and len(args) > 2:
                # PyTorch runs cuDNN channels-last when the input or the weight is
                x, w = (args[1], args[2]) if "backward" in base else (args[0], args[1])
                seen = bool(channels_last_flag(x) or channels_last_flag(w))
                self.channels_last_seen |= seen
                # meta kernels (convolutions, norms, activations) return NCHW strides whatever their input's,
                # and a 1x1 weight's strides are the same in both formats: on meta, once the model has shown
                # channels-last (its input, or a larger kernel's weight), its convolutions stay channels-last,
                # as a GPU's kernels keep the format from layer to layer
                on_meta = getattr(x, "device", None) is not None and x.device.type == "meta"
                extra = (("channels_last", int(seen or (on_meta and self.channels_last_seen))),)
            self.add(record_call(func, args, kwargs, out, context=self.context(), extra_scalars=extra))
        return out


_SDPA_FUNCS = {torch.nn.functional.scaled_dot_product_attention,
               getattr(torch._C._nn, "scaled_dot_product_attention", None)} - {None}


def _sdpa_shape(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Any, dropout: float,
                causal: bool) -> SdpaShape:
    def lead(t: torch.Tensor) -> tuple[int, int, int, int]:
        dims = tuple(int(x) for x in t.shape)
        if len(dims) < 3:
            dims = (1,) * (3 - len(dims)) + dims
        batch = math.prod(dims[:-3]) if len(dims) > 3 else 1
        heads = dims[-3] if len(dims) > 3 else dims[0]
        batch = batch if len(dims) > 3 else 1
        return batch, heads, dims[-2], dims[-1]

    b, heads, s_q, d = lead(q)
    _, kv_heads, s_kv, _ = lead(k)
    d_v = int(v.shape[-1])
    mask_bytes = float(mask.numel() * mask.element_size()) if isinstance(mask, torch.Tensor) else 0.0
    return SdpaShape(b, heads, s_q, s_kv, d, d_v, kv_heads, bool(causal), float(dropout or 0.0),
                     isinstance(mask, torch.Tensor), mask_bytes)


class _SdpaOnce(torch.autograd.Function):
    """SDPA recorded as one fused op per phase; computed by PyTorch's own kernel, unrecorded."""

    @staticmethod
    def forward(ctx, q, k, v, mask, options, recorder):  # noqa: ANN001
        with recorder.suppressed():
            out = _fused_layout(torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, **options))
        shape = _sdpa_shape(q, k, v, mask, options.get("dropout_p", 0.0), options.get("is_causal", False))
        recorder.add(fused_spec(shape, _dtype_name(q), backward=False))
        ctx.shape, ctx.options, ctx.recorder = shape, options, recorder
        ctx.save_for_backward(q, k, v, mask if isinstance(mask, torch.Tensor) else None, out)
        return out

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001
        q, k, v, mask, _ = ctx.saved_tensors
        ctx.recorder.add(fused_spec(ctx.shape, _dtype_name(q), backward=True))
        wanted = [t.detach().requires_grad_(need) for t, need in zip((q, k, v), ctx.needs_input_grad[:3])]
        with ctx.recorder.suppressed(), torch.enable_grad():
            out = torch.nn.functional.scaled_dot_product_attention(*wanted, attn_mask=mask, **ctx.options)
            inputs = [t for t in wanted if t.requires_grad]
            grads = iter([_fused_layout(g) for g in torch.autograd.grad(out, inputs, grad)] if inputs else ())
        return (*(next(grads) if t.requires_grad else None for t in wanted), None, None, None)


def _fused_layout(t: torch.Tensor) -> torch.Tensor:
    """A meta tensor of SDPA's (batch, heads, seq, dim) laid out as the fused kernels (flash, memory-efficient, cuDNN)
    lay out their output and gradients: (batch, seq, heads, dim) in memory. Meta SDPA returns them contiguous, so the
    model's ``.transpose(1, 2).contiguous()`` after attention (and the views' backward before it) recorded a copy the
    GPU never makes. Real tensors are returned as computed."""
    if t.device.type != "meta" or t.dim() != 4:
        return t
    return t.transpose(1, 2).contiguous().transpose(1, 2)


def _dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


# recurrent layers as `nn.RNN`/`nn.LSTM`/`nn.GRU` call them, with cuDNN's mode number (`costs._RNN_GATES`)
_RNN_MODES = {"rnn_relu": 0, "rnn_tanh": 1, "lstm": 2, "gru": 3}


def _rnn_call(func, args: tuple) -> bool:
    """A recurrent layer's unpacked call on meta (``input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first``; a packed sequence's call has its batch sizes second and is left to decompose)."""
    if not (getattr(func, "__name__", "") in _RNN_MODES and len(args) == 9 and isinstance(args[3], bool)
            and isinstance(args[0], torch.Tensor) and args[0].device.type == "meta"):
        return False
    # weights as `_rnn_ops` reads them (an LSTM with projections, proj_size > 0, has a fifth: left to decompose)
    _, _, params, has_biases, num_layers, _, _, bidirectional, _ = args
    return len(params) == int(num_layers) * (2 if bidirectional else 1) * (4 if has_biases else 2)


def _rnn_ops(name: str, x: torch.Tensor, params: Sequence[torch.Tensor], options: tuple, mode: int) -> list[OpCall]:
    """The fused layer ops a GPU runs (cuDNN's ``_cudnn_rnn``, forward or backward), one per layer, each described
    with its own input width (the first layer's input, then the layer below's hidden x directions)."""
    has_biases, num_layers, _, _, bidirectional, batch_first = options
    directions = 2 if bidirectional else 1
    per_direction = 4 if has_biases else 2
    shape = list(x.shape)
    ops = []
    for layer in range(int(num_layers)):
        w_ih = params[layer * directions * per_direction]
        hidden = int(params[layer * directions * per_direction + 1].shape[-1])
        ops.append(OpCall(name, input_shapes=(tuple(shape), tuple(w_ih.shape)),
                          input_dtypes=(_dtype_name(x), _dtype_name(w_ih)),
                          scalars=(("batch_first", bool(batch_first)), ("bidirectional", bool(bidirectional)),
                                   ("hidden_size", hidden), ("mode", mode), ("num_layers", 1))))
        shape[-1] = hidden * directions
    return ops


def _rnn_run(func, x: torch.Tensor, tensors: Sequence[torch.Tensor], n_hx: int, options: tuple):
    """The layer's call from its flattened tensors: ``tensors`` is hx (one tensor, or an LSTM's h and c) then the
    weights."""
    hx = tensors[:n_hx]
    return func(x, tuple(hx) if n_hx > 1 else hx[0], list(tensors[n_hx:]), *options)


class _RnnOnce(torch.autograd.Function):
    """A recurrent layer recorded as one fused op per phase, as cuDNN runs it on a GPU. On meta `aten::lstm` and its
    kin decompose into a GEMM and the gates' pointwise ops per time step, each a host-issued kernel that a GPU never
    launches from Python (an LSTM of 2 layers over 16 steps: ~1,000 recorded ops instead of 4). Computed by PyTorch's
    own decomposition, unrecorded."""

    @staticmethod
    def forward(ctx, func, options, recorder, n_hx, x, *tensors):  # noqa: ANN001
        mode = _RNN_MODES[func.__name__]
        with recorder.suppressed():
            outs = _rnn_run(func, x, tensors, n_hx, options)
        for op in _rnn_ops("aten::_cudnn_rnn", x, tensors[n_hx:], options, mode):
            recorder.add(op)
        ctx.func, ctx.options, ctx.recorder, ctx.n_hx, ctx.mode = func, options, recorder, n_hx, mode
        ctx.set_materialize_grads(False)   # outputs the loss does not use (h_n, c_n) get no zero-filled gradient
        ctx.save_for_backward(x, *tensors)
        return outs

    @staticmethod
    def backward(ctx, *grads):  # noqa: ANN001
        x, *tensors = ctx.saved_tensors
        n_hx = ctx.n_hx
        for op in _rnn_ops("aten::_cudnn_rnn_backward", x, tensors[n_hx:], ctx.options, ctx.mode):
            ctx.recorder.add(op)
        wanted = [t.detach().requires_grad_(need) for t, need in zip([x, *tensors], ctx.needs_input_grad[4:])]
        with ctx.recorder.suppressed(), torch.enable_grad():
            outs = _rnn_run(ctx.func, wanted[0], wanted[1:], n_hx, ctx.options)
            pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
            inputs = [t for t in wanted if t.requires_grad]
            found = iter(torch.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True)
                         if inputs and pairs else [None] * len(inputs))
        return (None, None, None, None, *(next(found) if t.requires_grad else None for t in wanted))


class _FusedOpsMode(TorchFunctionMode):
    """Routes `F.scaled_dot_product_attention` through `_SdpaOnce`, and a recurrent layer's call on meta through
    `_RnnOnce`, while capturing."""

    def __init__(self, recorder: _Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if not kwargs and _rnn_call(func, args):
            x, hx, params, *options = args
            hx = tuple(hx) if isinstance(hx, (tuple, list)) else (hx,)
            return _RnnOnce.apply(func, tuple(options), self.recorder, len(hx), x, *hx, *params)
        if func not in _SDPA_FUNCS:
            return func(*args, **kwargs)
        names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale")
        bound = dict(zip(names, args))
        bound.update(kwargs)
        q, k, v = bound.pop("query"), bound.pop("key"), bound.pop("value")
        mask = bound.pop("attn_mask", None)
        return _SdpaOnce.apply(q, k, v, mask, bound, self.recorder)


def _to_meta(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj if obj.is_meta else torch.empty_like(obj, device="meta")
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_meta(x) for x in obj)
    if isinstance(obj, dict):
        return {k: _to_meta(v) for k, v in obj.items()}
    return obj


def _value_seeds(given: Any, meta: Any, name: str = "") -> tuple[list, list]:
    """What the ``meta`` inputs' values are taken to be (`MetaValues`): an ``attention_mask`` all ones (declared:
    a batch without padding) unless it was real and uniform; any other real input whose elements are all equal
    keeps that value (exact)."""
    declared: list = []
    exact: list = []
    if isinstance(given, torch.Tensor) and isinstance(meta, torch.Tensor):
        value = None if given.is_meta or given.is_floating_point() else uniform_host_value(given)
        if value is not None:
            exact.append((meta, value))
        elif is_mask_name(name):
            declared.append((meta, 1))
    elif isinstance(given, dict) and isinstance(meta, dict):
        for key in given:
            more = _value_seeds(given[key], meta.get(key), str(key))
            declared += more[0]
            exact += more[1]
    elif isinstance(given, (list, tuple)) and isinstance(meta, (list, tuple)):
        for item, item_meta in zip(given, meta):
            more = _value_seeds(item, item_meta, name)
            declared += more[0]
            exact += more[1]
    return declared, exact


def _first_tensor(obj: Any) -> torch.Tensor | None:
    if isinstance(obj, torch.Tensor):
        return obj
    if isinstance(obj, (list, tuple)):
        for x in obj:
            t = _first_tensor(x)
            if t is not None:
                return t
    if isinstance(obj, dict):
        for x in obj.values():
            t = _first_tensor(x)
            if t is not None:
                return t
    return None


def _loss(output: Any) -> tuple[torch.Tensor, str]:
    """A scalar to call backward on: ``output.loss`` / ``output["loss"]``, else the sum of the first float
    output; and which of the two it was."""
    loss = getattr(output, "loss", None)
    if loss is None and isinstance(output, dict):
        loss = output.get("loss")
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        return (loss if loss.dim() == 0 else loss.sum()), "output.loss"
    candidates = [output] if isinstance(output, torch.Tensor) else list(
        output.values() if isinstance(output, dict) else output if isinstance(output, (list, tuple)) else [])
    for item in candidates:
        if isinstance(item, torch.Tensor) and item.is_floating_point() and item.requires_grad:
            return item.float().sum(), "sum of the output"
    raise CaptureError("the model's output has no floating-point tensor that requires grad to call backward on; "
                       "pass loss_fn=lambda output: ... to estimate()")


def _split_input(example_input: Any) -> tuple[tuple, dict]:
    if isinstance(example_input, dict):
        return (), dict(example_input)
    if isinstance(example_input, (list, tuple)):
        return tuple(example_input), {}
    return (example_input,), {}


def capture_step(model: torch.nn.Module, example_input: Any, *,
                 loss_fn: Callable[[Any], torch.Tensor] | None = None, batch_size: int | None = None,
                 autocast: str | None = None, autocast_policy: AutocastPolicy = CUDA_POLICY,
                 layers: Sequence[torch.nn.Module] = (), fp8: bool = False,
                 fused_casts: bool = False) -> Capture:
    """Run one forward and backward of `model` on `example_input` under op capture.

    Model or input on ``meta``: everything runs on ``meta`` (parameters are swapped for ``meta``
    copies with `torch.func.functional_call`; the model itself is not changed). Both real: the step
    really runs, on their device (use a small input). ``autocast="bfloat16"`` / ``"float16"``: the
    forward and the loss run under `AutocastEmulation` (CUDA autocast's policy by default), so the ops
    captured are the ones a mixed-precision step runs, casts included. ``layers``: modules whose
    forward spans and saved activations are recorded (`Capture.layer_spans`), for activation
    checkpointing (`recompute.apply_recompute`). ``fp8``: eligible ``nn.Linear`` calls run torchao's
    float8 tensorwise ops (`fp8.Fp8LinearMode`; with ``autocast="bfloat16"`` for everything else),
    their casts as torch.compile fuses them when ``fused_casts``.
    """
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    first = _first_tensor(example_input)
    on_meta = (first is not None and first.is_meta) or any(p.is_meta for p in params.values())
    if autocast not in (None, "float16", "bfloat16"):
        raise ValueError(f"autocast must be None, 'float16' or 'bfloat16', got {autocast!r}")
    capture = Capture(on_meta=on_meta, autocast=autocast)
    emulation = AutocastEmulation(getattr(torch, autocast), autocast_policy) if autocast else None
    _count_parameters(capture, params, first, batch_size)
    meta_input = _to_meta(example_input) if on_meta else example_input
    args, kwargs = _split_input(meta_input)
    values = MetaValues(*_value_seeds(example_input, meta_input)) if on_meta else None
    if values is not None:
        capture.value_answers = values.answers
    state = _meta_state(params, buffers) if on_meta else None
    state_tensors = list(params.values()) + list(buffers.values()) + list((state or {}).values())
    activations = _SavedActivations(capture, {_storage_key(t) for t in state_tensors})
    embedding_depth = [0]
    hooks = _install_hooks(model, layers, activations, embedding_depth)

    def context() -> str:
        if emulation is not None and emulation.casting:
            return "autocast"
        return "embedding" if embedding_depth[0] > 0 else ""

    recorder = _Recorder(capture, context)
    fp8_mode = Fp8LinearMode(recorder, fused=fused_casts) if fp8 else None
    capture.input_bytes = float(_input_bytes(example_input))
    modes = (_FusedOpsMode(recorder), emulation, fp8_mode, values)
    try:
        output = _run_step(model, state, args, kwargs, loss_fn, capture, recorder, modes, activations.pack)
    except CaptureError:
        raise
    except Exception as error:  # noqa: BLE001 - turned into advice below
        raise _explain(error, on_meta) from error
    finally:
        _release(model, state, hooks)
    if fp8_mode is not None:
        capture.fp8_linears, capture.fp8_skipped = fp8_mode.linears, sorted(fp8_mode.skipped)
    out = _first_tensor(output)
    capture.saved_bytes = float(sum(activations.saved.values()) + (_nbytes(out) if out is not None else 0))
    return capture


def _count_parameters(capture: Capture, params: dict[str, torch.Tensor], first: torch.Tensor | None,
                      batch_size: int | None) -> None:
    """The trainable parameters (count, per-tensor sizes, dtype) and the batch size, into ``capture``."""
    trainable = [p for p in params.values() if p.requires_grad]
    capture.params = sum(p.numel() for p in trainable)
    capture.param_tensors = [p.numel() for p in trainable]
    if trainable:
        capture.param_dtype = str(trainable[0].dtype).replace("torch.", "")
    capture.batch_size = batch_size or (int(first.shape[0]) if first is not None and first.dim() > 0 else None)


def _meta_state(params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``meta`` copies of the model's parameters and buffers (those already on ``meta`` as they are)."""
    return {k: (v if v.is_meta else torch.empty_like(v, device="meta").requires_grad_(v.requires_grad))
            for k, v in {**params, **buffers}.items()}


class _SavedActivations:
    """What autograd saves during the capture (``saved_tensors_hooks``' pack), and the repeated layers' spans
    and saved bytes (`Capture.layer_spans`)."""

    def __init__(self, capture: Capture, param_storages: set[Any]) -> None:
        self.capture = capture
        self.param_storages = param_storages   # parameters and buffers: saved, but not activations
        self.saved: dict[Any, int] = {}
        self.keep: list[torch.Tensor] = []
        self.layer_depth = 0

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        key = _storage_key(t)
        if key not in self.param_storages and key not in self.saved:
            self.saved[key] = _nbytes(t)
            if self.layer_depth > 0:
                self.capture.layer_saved_bytes += self.saved[key]
            self.keep.append(t)  # hold it so the storage key stays unique while capturing
        return t

    def layer_start(self, _module: Any, inputs: Any) -> None:
        self.layer_depth += 1
        self.capture.layer_spans.append([len(self.capture.sequence["fwd"])])
        self.capture.layer_input_bytes += float(_input_bytes(inputs))

    def layer_end(self, *_: Any) -> None:
        self.layer_depth -= 1
        self.capture.layer_spans[-1].append(len(self.capture.sequence["fwd"]))


def _install_hooks(model: torch.nn.Module, layers: Sequence[torch.nn.Module], activations: _SavedActivations,
                   embedding_depth: list[int]) -> list[Any]:
    """The repeated layers' span hooks, and hooks that count how deep the forward is inside an embedding."""
    hooks = []
    for layer in layers:
        hooks.append(layer.register_forward_pre_hook(activations.layer_start))
        hooks.append(layer.register_forward_hook(activations.layer_end))
    for module in model.modules():
        if isinstance(module, (torch.nn.Embedding, torch.nn.EmbeddingBag)):
            hooks.append(module.register_forward_pre_hook(lambda *_: embedding_depth.__setitem__(0, embedding_depth[0] + 1)))
            hooks.append(module.register_forward_hook(lambda *_: embedding_depth.__setitem__(0, embedding_depth[0] - 1)))
    return hooks


def _run_step(model: torch.nn.Module, state: dict[str, torch.Tensor] | None, args: tuple, kwargs: dict,
              loss_fn: Callable[[Any], torch.Tensor] | None, capture: Capture, recorder: _Recorder,
              modes: tuple[Any, Any, Any, Any], pack: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """The forward and the loss under the capture's modes (SDPA, autocast emulation, FP8, meta values), then the
    backward; returns the model's output."""
    sdpa, emulation, fp8_mode, values = modes
    with recorder, sdpa, emulation or contextlib.nullcontext(), \
            fp8_mode or contextlib.nullcontext(), values or contextlib.nullcontext(), \
            torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        if state is not None:
            output = torch.func.functional_call(model, state, args, kwargs)
        else:
            output = model(*args, **kwargs)
        if loss_fn is not None:
            loss = loss_fn(output)
        else:
            loss, capture.loss_source = _loss(output)
    recorder.phase = "bwd"
    with recorder, values or contextlib.nullcontext():
        loss.backward()
    return output


def _release(model: torch.nn.Module, state: dict[str, torch.Tensor] | None, hooks: list[Any]) -> None:
    """Remove the capture's hooks and the gradients it left."""
    for hook in hooks:
        hook.remove()
    if state is None:
        model.zero_grad(set_to_none=True)
    else:   # a model built on meta trains its own meta parameters: leave no .grad for the next capture
        for tensor in state.values():
            if tensor.is_meta:
                tensor.grad = None


def _input_bytes(obj: Any) -> int:
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, (list, tuple)):
        return sum(_input_bytes(x) for x in obj)
    if isinstance(obj, dict):
        return sum(_input_bytes(x) for x in obj.values())
    return 0


def _storage_key(t: torch.Tensor) -> Any:
    try:
        return t.untyped_storage()._cdata
    except Exception:  # noqa: BLE001 - tensor subclasses without storage: identity is good enough
        return id(t)


def _nbytes(t: torch.Tensor) -> int:
    try:
        return int(t.untyped_storage().nbytes())
    except Exception:  # noqa: BLE001
        return t.numel() * t.element_size()


def _explain(error: Exception, on_meta: bool) -> CaptureError:
    text = f"{type(error).__name__}: {error}".splitlines()[0][:300].rstrip(". ")
    if on_meta and _needs_values(error):
        return CaptureError(
            "this model cannot run on the 'meta' device, probably because an output shape depends on tensor "
            f"values (nonzero, masked_select, .item(), data-dependent control flow): {text}. "
            "Pass a real model and a small real input instead, e.g. estimate(model, torch.randn(2, ...)); "
            "it then runs one real step on that input.")
    return CaptureError(f"one training step of the model failed on the example input: {text}. Check that the "
                        "input's shape and dtype are what the model expects (the first dimension is the batch)")


_VALUE_HINTS = ("meta", "data-dependent", "data dependent", "no data", "_local_scalar_dense", "item()", "nonzero")


def _needs_values(error: Exception) -> bool:
    """Whether `error` says that an op needed tensor values, which ``meta`` tensors do not have."""
    if isinstance(error, NotImplementedError):
        return True
    text = str(error).lower()
    return any(hint in text for hint in _VALUE_HINTS)
