"""The profiled model's layers: names, types, owned parameters and per-layer call counters.

Index 0 is the root bucket (ops outside every submodule), 1 the optimizer pseudo-layer, then one
index per named submodule in ``named_modules`` order. Compiled submodules are one opaque layer;
their children get no index.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from prenet_callbacks.measure.profiling.attribution import ROOT
from prenet_callbacks.measure.profiling.compiled import compiled_kind, display_type
from prenet_callbacks.measure.profiling.table import OPTIMIZER_NAME, ROOT_NAME

OPTIMIZER = 1
_EMBEDDING_TYPES = (nn.Embedding, nn.EmbeddingBag)


def tensor_bytes(obj: Any, depth: int = 0) -> int:
    """Bytes of the tensors in a module's args/output (two levels of containers deep)."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if depth < 2:
        if isinstance(obj, (list, tuple)):
            return sum(tensor_bytes(x, depth + 1) for x in obj)
        if isinstance(obj, dict):
            return sum(tensor_bytes(x, depth + 1) for x in obj.values())
    return 0


@dataclass
class LayerRegistry:
    """Per-layer facts and counters, as parallel lists indexed by layer number."""

    names: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    params: list[int] = field(default_factory=list)
    weight_bytes: list[int] = field(default_factory=list)
    opaque: list[bool] = field(default_factory=list)
    embedding: list[bool] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    in_bytes: list[int] = field(default_factory=list)
    out_bytes: list[int] = field(default_factory=list)
    param_owner: dict[int, int] = field(default_factory=dict)   # id(parameter) -> layer index

    @classmethod
    def for_model(cls, model: nn.Module) -> "LayerRegistry":
        reg = cls()
        reg.add(ROOT_NAME, type(model).__name__, isinstance(model, _EMBEDDING_TYPES))
        reg.add(OPTIMIZER_NAME, "Optimizer", False)
        return reg

    def add(self, name: str, type_name: str, embedding: bool) -> int:
        self.names.append(name)
        self.types.append(type_name)
        for column in (self.params, self.weight_bytes, self.calls, self.in_bytes, self.out_bytes):
            column.append(0)
        self.opaque.append(False)
        self.embedding.append(embedding)
        return len(self.names) - 1

    def walk(self, model: nn.Module) -> list[tuple[int, nn.Module, str | None]]:
        """Register every layer; returns ``(index, module, compiled kind or None)`` to hook."""
        seen: set[int] = set()
        root_kind = compiled_kind(model)
        if root_kind:
            self.own_params(ROOT, model, recurse=True, seen=seen)
            return [(ROOT, model, root_kind)]
        self.own_params(ROOT, model, recurse=False, seen=seen)
        out: list[tuple[int, nn.Module, str | None]] = [(ROOT, model, None)]
        skip: list[str] = []
        for name, module in model.named_modules():
            if not name or any(name.startswith(p) for p in skip):
                continue
            idx = self.add(name, display_type(module), isinstance(module, _EMBEDDING_TYPES))
            kind = compiled_kind(module)
            if kind:
                skip.append(name + ".")
            self.own_params(idx, module, recurse=bool(kind), seen=seen)
            out.append((idx, module, kind))
        return out

    def mark_opaque(self, idx: int) -> None:
        self.opaque[idx] = True
        self.types[idx] += " (compiled)"

    def own_params(self, idx: int, module: nn.Module, *, recurse: bool, seen: set[int]) -> None:
        # shared/tied parameters belong to the first module that owns them (named_modules order)
        for p in module.parameters(recurse=recurse):
            if id(p) in seen:
                continue
            seen.add(id(p))
            self.param_owner[id(p)] = idx
            self.params[idx] += p.numel()
            self.weight_bytes[idx] += p.numel() * p.element_size()

    def fold_unused_params(self, keep: set[int]) -> None:
        """Parameters of modules never called (e.g. MultiheadAttention.out_proj, used
        functionally by its parent) go to the nearest kept ancestor, so none is lost."""
        index = {name: i for i, name in enumerate(self.names) if i > OPTIMIZER}
        for idx in range(OPTIMIZER + 1, len(self.names)):
            if idx in keep or not self.params[idx]:
                continue
            name, target = self.names[idx], ROOT
            while "." in name:
                name = name.rsplit(".", 1)[0]
                if index.get(name) in keep:
                    target = index[name]
                    break
            self.params[target] += self.params[idx]
            self.weight_bytes[target] += self.weight_bytes[idx]
            self.params[idx] = self.weight_bytes[idx] = 0
