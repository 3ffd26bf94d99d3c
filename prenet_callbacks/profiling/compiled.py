"""Recognise modules that torch.compile runs, whose insides the profiler must not touch.

Module hooks inside a compiled region would be traced by Dynamo (recompiles, graph breaks), and
an active dispatch mode makes Dynamo fall back to eager, which can change numerics. So compiled
modules are profiled as one opaque block.
"""
from __future__ import annotations

import sys

from torch import nn


def is_optimized_module(module: nn.Module) -> bool:
    """`torch.compile(module)` wrapper (`torch._dynamo.eval_frame.OptimizedModule`)."""
    # Importing dynamo costs seconds; if nobody imported it, nothing can be compiled.
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    optimized = getattr(eval_frame, "OptimizedModule", None)
    return optimized is not None and isinstance(module, optimized)


def has_compiled_call(module: nn.Module) -> bool:
    """`module.compile()` was called: its whole `__call__` (hooks included) is compiled."""
    return getattr(module, "_compiled_call_impl", None) is not None


def has_compiled_forward(module: nn.Module) -> bool:
    """`module.forward = torch.compile(module.forward)` (what Lightning does for compiled models)."""
    fwd = module.__dict__.get("forward")
    return fwd is not None and hasattr(fwd, "_torchdynamo_orig_callable")


def compiled_kind(module: nn.Module) -> str | None:
    """How `module` is compiled ("module", "call", "forward"), or None."""
    if is_optimized_module(module):
        return "module"
    if has_compiled_call(module):
        return "call"
    if has_compiled_forward(module):
        return "forward"
    return None


def display_type(module: nn.Module) -> str:
    inner = getattr(module, "_orig_mod", module)
    return type(inner).__name__
