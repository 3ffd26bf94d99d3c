"""`OpCall`: one captured aten call reduced to what the cost model needs. Hashable, JSON-friendly."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

Shape = tuple[int, ...]


@dataclass(frozen=True)
class OpCall:
    """A captured aten call reduced to what `costs.op_spec_from_call` needs. Hashable, JSON-friendly.

    Args:
        name: op packet name, e.g. ``"aten::addmm"``.
        input_shapes / input_dtypes: every tensor argument in schema order (lists flattened;
            a ``None`` inside a tensor list is skipped).
        output_shapes / output_dtypes: every output tensor (undefined outputs are ``None``/``""``).
        scalars: sorted ``(name, value)`` pairs of the kept scalar arguments (`record.KEPT_SCALARS`).
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
                   scalars=tuple(sorted((k, freeze(v)) for k, v in d.get("scalars", {}).items())),
                   context=d.get("context", ""))


def freeze(v: Any) -> Any:
    """A scalar argument as a hashable, JSON-friendly value (lists become tuples, SymInts ints)."""
    if isinstance(v, (list, tuple)):
        return tuple(freeze(x) for x in v)
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, torch.SymInt):
        return int(v)
    return str(v)
