"""A saved run's repeated blocks, read from its per-layer table (``measured.layers.layers``).

What `recompute.find_layers` finds in a model (its largest ``nn.ModuleList`` of modules of one type), found
without the model: the layers' module paths. A family is every ``<prefix>.<n>`` path with the same
prefix ("model.h.0" ... "model.h.11"); its members are of one type when each has the same module types
and parameter counts at the same relative paths. The largest such family (at least two members) is the
blocks. The table does not say which container held them, so an ``nn.Sequential`` of identical blocks
counts too (``torch.utils.checkpoint`` wraps either alike).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_INDEX = re.compile(r"(?:^|\.)(\d+)(?=\.|$)")
_NOT_MODULES = ("(root)", "optimizer")


@dataclass(frozen=True)
class ReportBlocks:
    """The repeated blocks: their module paths in table order and, per block, its layers' names."""

    names: tuple[str, ...]                 # "model.h.0", "model.h.1", ...
    layers: tuple[tuple[str, ...], ...]    # per block: the table's layers inside it, in table order
    calls: tuple[float, ...]               # per block: its calls per optimizer step
    input_bytes: float                     # the blocks' inputs per step (what full checkpointing keeps)

    def describe(self) -> str:
        """"12 blocks model.h.0 ... model.h.11"."""
        return f"{len(self.names)} blocks {self.names[0]} ... {self.names[-1]}"


def _families(names: list[str]) -> dict[str, dict[int, list[str]]]:
    """prefix -> index -> the layer names under ``prefix.index`` (a path may belong to several families)."""
    families: dict[str, dict[int, list[str]]] = {}
    for name in names:
        for match in _INDEX.finditer(name):
            prefix = name[:match.start()]
            families.setdefault(prefix, {}).setdefault(int(match.group(1)), []).append(name)
    return families


def _block_path(prefix: str, index: int) -> str:
    return f"{prefix}.{index}" if prefix else str(index)


def _signature(block: str, members: list[str], by_name: dict[str, dict[str, Any]]) -> tuple:
    """The block's layers by relative path, with their module types and parameter counts."""
    return tuple(sorted((name[len(block):], str(by_name[name].get("module_type", "")),
                         float(by_name[name].get("params") or 0)) for name in members))


def find_blocks(layers: list[dict[str, Any]]) -> ReportBlocks | None:
    """The largest family of identical ``<prefix>.<n>`` blocks in a per-layer table; None when there is none."""
    by_name = {str(layer.get("name", "")): layer for layer in layers}
    names = [name for name in by_name if name not in _NOT_MODULES]
    best: ReportBlocks | None = None
    for prefix, members in _families(names).items():
        if len(members) < 2 or (best is not None and len(members) <= len(best.names)):
            continue
        paths = {i: _block_path(prefix, i) for i in members}
        signatures = {_signature(paths[i], members[i], by_name) for i in members}
        if len(signatures) == 1:
            order = sorted(members)
            # the block's own record, or, where it ran no op of its own, its first layer's: same calls, same input
            records = [by_name.get(paths[i]) or by_name[members[i][0]] for i in order]
            calls = tuple(float(r.get("calls_per_step") or 1.0) for r in records)
            inputs = sum(float((r.get("features") or {}).get("cm_input_bytes") or 0.0) * c
                         for r, c in zip(records, calls))
            best = ReportBlocks(tuple(paths[i] for i in order), tuple(tuple(members[i]) for i in order), calls,
                                inputs)
    return best
