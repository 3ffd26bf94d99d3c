"""Answers for the tensor values a model reads while it is captured on ``meta`` (`capture.py`).

``meta`` tensors have shapes and no values, so a model that asks for one (``.item()``, ``bool(t)``,
``.tolist()``, ``if mask.all():``) stops the capture. Hugging Face's mask helpers do exactly that with
the ``attention_mask`` (``padding_mask.all()`` decides whether SDPA runs causal without a mask). `MetaValues`
is a `TorchDispatchMode` that answers those reads instead, by the rules below, and records each answer:

- Uniform values are followed: a tensor whose elements are all one known value (``torch.ones``, ``full``,
  ``zeros_like``, a real input copied to ``meta`` whose elements are all equal, and the inputs declared
  uniform: an ``attention_mask`` is taken as all ones, a batch without padding) keeps that value through
  pointwise ops (computed on one-element CPU tensors, so dtype promotion is the real one), casts, copies,
  views and the reductions whose result stays uniform (``all``, ``any``, ``sum``, ``amax``, ``mean``, ...).
  ``(mask == 0).any()`` is then answered False, ``mask.sum(-1).max()`` the sequence length.
- A value no rule knows: ``t.all()`` is answered True and ``t.any()`` False (nothing out of the ordinary:
  no padding, no NaN, no ignored label); any other read raises, as before, and the capture says that the
  model needs real values.

Facts are kept per storage; every new storage an op returns overwrites its entry and a write to part of a
storage drops it, so a fact never outlives the values it describes. Answers that rest on a declared input
or on the default are kept apart (the estimate says so in a note, one for each); answers from tensors the
model built itself (``torch.ones`` inside it) are exact and not reported.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

aten = torch.ops.aten

MASK_NOTE = ("attention mask taken as all ones (a batch without padding): on 'meta' a tensor has no values, so "
             "the model's {count} read(s) of it ({examples}) were answered as for a batch without padding; a padded "
             "batch runs attention with an explicit mask, which a capture with real tensors (the model and the "
             "batch on the CPU) prices")
DEFAULT_NOTE = ("{count} check(s) of values the model computes on 'meta' ({examples}) answered as for an ordinary "
                "batch (no padding, no packed sequences, no NaN)")

_MAX_CPU_COPY = 1 << 20   # elements a uniform meta tensor may turn into on the host (.tolist(), .cpu())


@dataclass(frozen=True)
class _Fact:
    value: Any          # every element of the storage equals this Python scalar
    assumed: bool       # it rests on a declared input, not on the model's own constants


@dataclass
class ValueAnswers:
    """What a capture answered: each read as ``"op -> value"``, by what the answer rests on."""

    exact: list[str] = field(default_factory=list)      # the model's own constants, uniform real inputs
    assumed: list[str] = field(default_factory=list)    # a declared input: the attention mask taken as all ones
    default: list[str] = field(default_factory=list)    # all()/any() of values no rule knows: an ordinary batch

    def notes(self) -> list[str]:
        """The estimate's notes for answers that rest on an assumption (none when every answer was exact)."""
        found = []
        for template, answers in ((MASK_NOTE, self.assumed), (DEFAULT_NOTE, self.default)):
            if answers:
                examples = ", ".join(list(dict.fromkeys(answers))[:3])
                found.append(template.format(count=len(answers), examples=examples))
        return found


def is_mask_name(name: str) -> bool:
    """Input names declared all ones on meta: Hugging Face's ``attention_mask`` and its kin
    (``decoder_attention_mask``, ``encoder_attention_mask``)."""
    return name.endswith("attention_mask")


def _key(t: torch.Tensor) -> int | None:
    try:
        return t.untyped_storage()._cdata
    except Exception:  # noqa: BLE001 - tensor subclasses without storage: no facts for them
        return None


def _covers_storage(t: torch.Tensor) -> bool:
    try:
        return t.numel() * t.element_size() >= t.untyped_storage().nbytes()
    except Exception:  # noqa: BLE001
        return False


def _python(value: Any, dtype: torch.dtype) -> Any:
    if dtype == torch.bool:
        return bool(value)
    if dtype.is_floating_point:
        return float(value)
    if dtype.is_complex:
        return complex(value)
    return int(value)


def uniform_host_value(t: torch.Tensor) -> Any:
    """The one value of a real tensor whose elements are all equal (None otherwise, or when it is large)."""
    if t.is_meta or t.numel() == 0 or t.numel() > _MAX_CPU_COPY or t.is_complex():
        return None
    flat = t.detach().reshape(-1)
    first = flat[0]
    if bool((flat == first).all()):
        return first.item()
    return None


_VALUE_KEEPING = {aten.all.default, aten.all.dim, aten.any.default, aten.any.dim, aten.amax.default,
                  aten.amin.default, aten.max.default, aten.min.default, aten.mean.default, aten.mean.dim,
                  aten.clone.default, aten._to_copy.default, aten.alias.default, aten.lift_fresh_copy.default,
                  aten.expand_copy.default}
for _name in ("all.dims", "any.dims"):
    _packet, _, _overload = _name.partition(".")
    if hasattr(getattr(aten, _packet), _overload):
        _VALUE_KEEPING.add(getattr(getattr(aten, _packet), _overload))
_SUMS = {aten.sum.default, aten.sum.dim_IntList}
_FACTORIES: dict[Any, Callable[[tuple, dict], Any]] = {
    aten.ones.default: lambda a, k: 1, aten.zeros.default: lambda a, k: 0,
    aten.ones_like.default: lambda a, k: 1, aten.zeros_like.default: lambda a, k: 0,
    aten.new_ones.default: lambda a, k: 1, aten.new_zeros.default: lambda a, k: 0,
    aten.full.default: lambda a, k: a[1], aten.full_like.default: lambda a, k: a[1],
    aten.new_full.default: lambda a, k: a[2], aten.scalar_tensor.default: lambda a, k: a[0],
}
_INPLACE_FILLS: dict[Any, Callable[[tuple], Any]] = {
    aten.fill_.Scalar: lambda a: a[1], aten.zero_.default: lambda a: 0,
}
_READS = {aten._local_scalar_dense.default, aten.is_nonzero.default}


class MetaValues(TorchDispatchMode):
    """Answers value reads of ``meta`` tensors during a capture (see the module's docstring).

    Args:
        declared: tensors (the capture's ``meta`` inputs) with the value all their elements are taken to have;
            answers resting on them are ``assumed``.
        exact: tensors whose one value is known for certain (a uniform real input copied to ``meta``).
    """

    def __init__(self, declared: list[tuple[torch.Tensor, Any]] = (),
                 exact: list[tuple[torch.Tensor, Any]] = ()) -> None:
        super().__init__()
        self.facts: dict[int, _Fact] = {}
        self.origin: dict[int, str] = {}   # storages made by all()/any() of unknown values
        self.answers = ValueAnswers()
        self.keep: list[torch.Tensor] = []  # the declared tensors stay alive, so their storage keys do too
        for tensors, assumed in ((declared, True), (exact, False)):
            for tensor, value in tensors:
                key = _key(tensor)
                if key is not None:
                    self.facts[key] = _Fact(_python(value, tensor.dtype), assumed)
                    self.keep.append(tensor)

    # -- reading facts
    def fact(self, t: Any) -> _Fact | None:
        if not isinstance(t, torch.Tensor) or not t.is_meta:
            return None
        key = _key(t)
        return self.facts.get(key) if key is not None else None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _READS:
            return self._read(func, args[0])
        if func is aten._to_copy.default and args and isinstance(args[0], torch.Tensor) and args[0].is_meta \
                and kwargs.get("device") is not None and torch.device(kwargs["device"]).type != "meta":
            return self._to_host(args[0], kwargs)
        out = func(*args, **kwargs)
        try:
            self._follow(func, args, kwargs, out)
        except Exception:  # noqa: BLE001 - a rule that cannot apply leaves the value unknown
            for tensor in _fresh_outputs(func, out):
                self._forget(tensor)
        return out

    def _read(self, func, t: torch.Tensor) -> Any:
        if not t.is_meta:
            return func(t)
        found = self.fact(t)
        name = "bool(t)" if func is aten.is_nonzero.default else ".item()"
        if found is not None:
            value = bool(found.value) if func is aten.is_nonzero.default else _python(found.value, t.dtype)
            (self.answers.assumed if found.assumed else self.answers.exact).append(f"{name} -> {value}")
            return value
        origin = self.origin.get(_key(t))
        if origin in ("all", "any") and t.numel() == 1:
            value = origin == "all"
            self.answers.default.append(f".{origin}() -> {value}")
            return value if func is aten.is_nonzero.default or t.dtype == torch.bool else int(value)
        raise RuntimeError(f"{name} read the value of a meta tensor that no rule knows (data-dependent): "
                           "meta tensors have no data")

    def _to_host(self, t: torch.Tensor, kwargs: dict) -> torch.Tensor:
        found = self.fact(t)
        if found is None or t.numel() > _MAX_CPU_COPY:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        dtype = kwargs.get("dtype") or t.dtype
        (self.answers.assumed if found.assumed else self.answers.exact).append(f".tolist() -> [{found.value}, ...]")
        return torch.full(tuple(t.shape), found.value, dtype=dtype, device=kwargs["device"])

    # -- writing facts
    def _set(self, t: torch.Tensor, value: Any, assumed: bool) -> None:
        key = _key(t)
        if key is not None:
            self.facts[key] = _Fact(_python(value, t.dtype), assumed)
            self.origin.pop(key, None)

    def _forget(self, t: torch.Tensor) -> None:
        key = _key(t)
        if key is not None:
            self.facts.pop(key, None)
            self.origin.pop(key, None)

    def _follow(self, func, args: tuple, kwargs: dict, out: Any) -> None:
        written = _written_args(func, args, kwargs)
        fresh = _fresh_outputs(func, out)
        for tensor in fresh:          # a new storage: whatever was said of its address is stale
            self._forget(tensor)
        targets = written or fresh
        if len(targets) != 1 or not targets[0].is_meta:
            for tensor in written:
                self._forget(tensor)
            return
        target = targets[0]
        result = self._value_of(func, args, kwargs, target)
        if written and not _covers_storage(target):
            result = None
        if result is None:
            self._forget(target)
            if func in (aten.all.default, aten.all.dim, aten.any.default, aten.any.dim):
                key = _key(target)
                if key is not None and self.fact(args[0]) is None:
                    self.origin[key] = "all" if func in (aten.all.default, aten.all.dim) else "any"
            return
        self._set(target, *result)

    def _value_of(self, func, args: tuple, kwargs: dict, target: torch.Tensor) -> tuple[Any, bool] | None:
        if func in _FACTORIES:
            return _FACTORIES[func](args, kwargs), False
        if func in _INPLACE_FILLS:
            return _INPLACE_FILLS[func](args), False
        if func is aten.copy_.default:
            source = args[1]
            if isinstance(source, torch.Tensor) and not source.is_meta:
                value = uniform_host_value(source)
                return None if value is None else (value, False)
            found = self.fact(source)
            return None if found is None else (found.value, found.assumed)
        if func in _VALUE_KEEPING or func in _SUMS:
            source = args[0]
            if isinstance(source, torch.Tensor) and not source.is_meta:
                value = uniform_host_value(source)
                return None if value is None else (value, False)
            found = self.fact(source)
            if found is None:
                return None
            if func in _SUMS:
                ratio = source.numel() // max(target.numel(), 1)
                return found.value * ratio, found.assumed
            return found.value, found.assumed
        if torch.Tag.pointwise in getattr(func, "tags", ()):
            return self._pointwise(func, args, kwargs)
        return None

    def _pointwise(self, func, args: tuple, kwargs: dict) -> tuple[Any, bool] | None:
        assumed = False
        tensors, _ = tree_flatten((args, kwargs))
        for item in tensors:
            if isinstance(item, torch.Tensor):
                found = self.fact(item) if item.is_meta else None
                if found is None and not (not item.is_meta and item.numel() == 1):
                    return None
                assumed = assumed or bool(found and found.assumed)

        def small(x: Any) -> Any:
            if not isinstance(x, torch.Tensor):
                return x
            if not x.is_meta:
                return x.detach().reshape([1] * x.dim()) if x.dim() else x.detach()
            return torch.full([1] * x.dim(), self.fact(x).value, dtype=x.dtype)

        host_args, host_kwargs = tree_map(small, (args, kwargs))
        result = func(*host_args, **host_kwargs)
        if not isinstance(result, torch.Tensor) or result.numel() != 1:
            return None
        return result.item(), assumed


def _written_args(func, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensors an op writes into (in-place and ``out=`` arguments)."""
    written = []
    for index, argument in enumerate(func._schema.arguments):
        if argument.alias_info is not None and argument.alias_info.is_write:
            value = kwargs.get(argument.name) if argument.kwarg_only or index >= len(args) else args[index]
            written.extend(t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor))
    return written


def _fresh_outputs(func, out: Any) -> list[torch.Tensor]:
    """The outputs of an op that are new storages (not views or aliases of an input)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    fresh = []
    for result, ret in zip(outs, func._schema.returns):
        if isinstance(result, torch.Tensor) and ret.alias_info is None:
            fresh.append(result)
    return fresh

