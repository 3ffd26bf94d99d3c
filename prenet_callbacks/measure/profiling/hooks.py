"""Count every hook and dispatch mode a profiler could leave behind (for tests and checks)."""
from __future__ import annotations

import torch
import torch.optim.optimizer as _optim
from torch import nn

_MODULE_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                 "_forward_hooks_always_called", "_forward_hooks_with_kwargs",
                 "_forward_pre_hooks_with_kwargs", "_state_dict_hooks", "_load_state_dict_pre_hooks")
_GLOBAL_DICTS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                 "_global_backward_pre_hooks", "_global_forward_hooks_always_called")
_OPTIM_DICTS = ("_global_optimizer_pre_hooks", "_global_optimizer_post_hooks")


def hook_snapshot(model: nn.Module) -> dict[str, int]:
    """Sizes of every hook dict on `model`'s modules and globally, plus the dispatch stack."""
    counts: dict[str, int] = {}
    for attr in _MODULE_DICTS:
        counts[attr] = sum(len(getattr(m, attr, {}) or {}) for m in model.modules())
    mod = torch.nn.modules.module
    for attr in _GLOBAL_DICTS:
        counts[attr] = len(getattr(mod, attr, {}) or {})
    for attr in _OPTIM_DICTS:
        counts[attr] = len(getattr(_optim, attr, {}) or {})
    counts["compiled_call_wrappers"] = sum(
        1 for m in model.modules()
        if getattr(getattr(m, "_compiled_call_impl", None), "__wrapped__", None) is not None)
    counts["dispatch_modes"] = torch._C._len_torch_dispatch_stack()
    return counts
