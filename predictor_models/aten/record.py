"""The profiler's hot path: a live aten call -> `OpCall` (names, shapes, dtypes, a few scalars).

No tensor reference survives the call, and the per-overload work (which schema positions hold
the scalars we keep) is done once per overload, so recording costs little beside the op itself.
"""
from __future__ import annotations

from typing import Any

import torch

from predictor_models.aten.call import OpCall, Shape, freeze

# Scalar arguments worth keeping (by schema name): they change cost or name the shape features.
KEPT_SCALARS: frozenset[str] = frozenset({
    "stride", "padding", "dilation", "transposed", "output_padding", "groups", "output_mask",
    "is_causal", "kernel_size", "dim", "normalized_shape", "train", "training", "num_layers",
    "bidirectional", "batch_first", "hidden_size", "mode", "has_biases", "N", "C", "HxW", "group",
    "reverse", "proj_size", "momentum", "maximize", "amsgrad", "padding_idx", "num_weights",
})
# c10d namespaces whose ops take a process group (its size is kept as the "ranks" scalar)
_GROUP_NAMESPACES = ("c10d", "_c10d_functional", "c10d_functional")

# where one group of a call key (arguments, keyword arguments, outputs) ends: equal to no argument
_GROUP_END = object()

_BINDERS: dict[Any, tuple[tuple[int, str, bool, Any], ...]] = {}
_DTYPE_NAMES: dict[torch.dtype, str] = {}


def _binder(func: Any) -> tuple[tuple[int, str, bool, Any], ...]:
    """Positions of the kept scalar arguments in `func`'s schema, computed once per overload."""
    found = _BINDERS.get(func)
    if found is None:
        entries = []
        for i, arg in enumerate(func._schema.arguments):
            if arg.name in KEPT_SCALARS:
                default = arg.default_value if arg.has_default_value() else None
                entries.append((i, arg.name, arg.kwarg_only, default))
        found = _BINDERS[func] = tuple(entries)
    return found


def _dtype_name(dtype: torch.dtype) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).replace("torch.", "")
    return name


def _add_tensors(obj: Any, shapes: list, dtypes: list) -> None:
    if isinstance(obj, torch.Tensor):
        shapes.append(tuple(obj.shape))
        dtypes.append(_dtype_name(obj.dtype))
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            if isinstance(x, torch.Tensor):
                shapes.append(tuple(x.shape))
                dtypes.append(_dtype_name(x.dtype))


def record_call(func: Any, args: tuple, kwargs: dict | None, outputs: Any, *,
                context: str = "", extra_scalars: tuple[tuple[str, Any], ...] = (),
                shared: dict[tuple, tuple] | None = None) -> OpCall:
    """Reduce a live aten call to an `OpCall` (no tensor references are kept).

    ``extra_scalars`` adds facts the call itself cannot show, e.g. ``("opt_kind", 2)`` for an
    op of an Adam step. ``shared``: a dict the caller keeps across its calls, through which equal tuples (shapes,
    dtypes, scalars) are one object, so that hundreds of recorded calls hold a few hundred tuples, not thousands.
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
        scalars.append((name, freeze(v)))
    scalars.extend(extra_scalars)
    if getattr(func, "namespace", "") in _GROUP_NAMESPACES:
        ranks = _group_size(args, kwargs)
        if ranks:
            scalars.append(("ranks", ranks))
    packet = func._overloadpacket
    table = {} if shared is None else shared
    one = lambda t: table.setdefault(t, t)   # noqa: E731 - equal tuples as one object
    return OpCall(name=getattr(packet, "_qualified_op_name", str(packet)),
                  input_shapes=one(tuple(one(t) for t in in_shapes)), input_dtypes=one(tuple(in_dtypes)),
                  output_shapes=one(tuple(None if t is None else one(t) for t in out_shapes)),
                  output_dtypes=one(tuple(out_dtypes)), scalars=one(tuple(one(p) for p in sorted(scalars))),
                  context=context, overload=getattr(func, "_overloadname", "default"))


def call_key(func: Any, args: tuple, kwargs: dict | None, outputs: Any, prefix: tuple = ()) -> tuple | None:
    """A hashable key that is equal for two calls exactly when `record_call` would reduce them to the same
    `OpCall` (same overload, tensors of the same shapes and dtypes, equal other arguments), built without the
    call's reduction: a profiler sees the same few hundred calls in every step of its window. None when a
    collective's process group or an unhashable argument would make the key unsafe.

    The key is one flat tuple of atoms (``prefix``, then the overload, then each argument: a tensor as its dtype,
    rank and sizes, a list as its length and items, then a marker ending the group), so a profiler that keeps a key per
    distinct call keeps one object, not a tuple and a ``torch.Size`` per tensor: fewer objects for Python's
    collector to count and carry. Each argument's schema type fixes how it reads back, so equal keys mean equal
    calls."""
    if getattr(func, "namespace", "") in _GROUP_NAMESPACES:
        return None
    key: list[Any] = [*prefix, func]
    for group in (args, kwargs.items() if kwargs else (),
                  outputs if isinstance(outputs, (list, tuple)) else (outputs,)):
        for a in group:
            if isinstance(a, torch.Tensor):   # `_add_atoms`, inlined for the common case: this runs for every op
                shape = a.shape
                key.append(a.dtype)
                key.append(len(shape))
                key.extend(shape)
            else:
                _add_atoms(key, a)
        key.append(_GROUP_END)
    frozen = tuple(key)
    try:
        hash(frozen)
    except TypeError:
        return None
    return frozen


def _add_atoms(key: list[Any], a: Any) -> None:
    if isinstance(a, torch.Tensor):
        shape = a.shape
        key.append(a.dtype)
        key.append(len(shape))
        key.extend(shape)
    elif isinstance(a, (list, tuple)):
        key.append(len(a))
        for x in a:
            _add_atoms(key, x)
    else:
        key.append(a)


def _group_size(args: tuple, kwargs: dict | None) -> int:
    """World size of a c10d op's process group, when one of its arguments exposes it."""
    for a in list(args) + list((kwargs or {}).values()):
        size = getattr(a, "size", None)
        if callable(size) and not isinstance(a, torch.Tensor):
            try:
                return int(size())
            except Exception:  # noqa: BLE001 - a ScriptObject without size(): unknown, not an error
                continue
    return 0
