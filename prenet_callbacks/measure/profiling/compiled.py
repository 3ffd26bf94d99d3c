"""Recognise modules that torch.compile runs, whose insides the profiler must not touch.

Module hooks inside a compiled region would be traced by Dynamo (recompiles, graph breaks), and
an active dispatch mode makes Dynamo fall back to eager, which can change numerics. So compiled
modules are profiled as one opaque block: timed around the call (and around the compiled backward
node), nothing captured inside.
"""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import torch
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


def wrap_compiled_call(module: nn.Module, pre: Callable[[nn.Module, Any], None],
                       post: Callable[[nn.Module, Any, Any], None]) -> Callable[[], None]:
    """Call `pre`/`post` around a ``module.compile()``'d call (hooks would run inside the compiled
    code); returns the function that restores the original call."""
    inner = module._compiled_call_impl

    @functools.wraps(inner)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        pre(module, args)
        out = None
        try:
            out = inner(*args, **kwargs)
            return out
        finally:
            post(module, args, out)

    module._compiled_call_impl = wrapped

    def restore() -> None:
        if module.__dict__.get("_compiled_call_impl") is wrapped:
            module._compiled_call_impl = inner
    return restore


def compiled_backward_nodes(output: Any) -> list[Any]:
    """The autograd nodes of a compiled region's backward behind its output tensor(s)."""
    nodes: dict[int, Any] = {}
    outs = output if isinstance(output, (list, tuple)) else [output]
    for t in outs:
        node = t.grad_fn if isinstance(t, torch.Tensor) else None
        for _ in range(4):  # compiled outputs may sit behind a view or alias node
            if node is None:
                break
            if "CompiledFunction" in node.name():
                nodes[id(node)] = node
                break
            nxt = [n for n, _ in node.next_functions if n is not None]
            node = nxt[0] if nxt else None
    return list(nodes.values())
