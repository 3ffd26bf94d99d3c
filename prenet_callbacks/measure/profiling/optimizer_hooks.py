"""Know when any torch optimizer's ``step()`` runs, and what kind of update it does.

Without phase hints from the framework, ops inside ``optimizer.step()`` belong to the optimizer
pseudo-layer; the optimizer's kind is a feature of its update ops.
"""
from __future__ import annotations

from typing import Any


def optimizer_kind(optimizer: Any) -> int | None:
    """The optimizer feature's kind: 2 for the Adam family, 1 SGD with momentum, 0 plain SGD."""
    name = type(optimizer).__name__.lower()
    if "adam" in name or "lamb" in name:
        return 2
    if "sgd" in name:
        groups = getattr(optimizer, "param_groups", None) or [{}]
        return 1 if any(g.get("momentum", 0) for g in groups) else 0
    return None


class OptimizerWatch:
    """Global optimizer step pre/post hooks: ``depth`` > 0 while a step runs."""

    def __init__(self) -> None:
        self.depth = 0
        self.kind: int | None = None   # of the last optimizer that stepped

    def install(self) -> list[Any]:
        """Register the hooks; returns their handles (``handle.remove()`` undoes each)."""
        try:
            from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                               register_optimizer_step_pre_hook)
        except ImportError:   # torch older than 2.0: no global optimizer hooks
            return []
        return [register_optimizer_step_pre_hook(self._on_pre),
                register_optimizer_step_post_hook(self._on_post)]

    def _on_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.depth += 1
        self.kind = optimizer_kind(optimizer)

    def _on_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.depth = max(0, self.depth - 1)
