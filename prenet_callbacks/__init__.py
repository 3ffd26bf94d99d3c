"""PreNeT callbacks: how long will this training run take here, and elsewhere?

Public API::

    from prenet_callbacks import PreNeTCallback, estimate, Report, list_hardware, lookup_hardware
    from prenet_callbacks import PreNeTTrainerCallback, Tracker

Names are resolved lazily so that ``import prenet_callbacks`` stays cheap and does not import
Lightning, DeepSpeed or transformers; `PreNeTCallback` comes from `integrations.lightning` (the
``lightning`` or ``pytorch-lightning`` extra), `PreNeTTrainerCallback` from `integrations.transformers`
(the ``transformers`` extra), `Tracker` from `integrations.loop` (no extra). Without its extra, a name
raises an `ImportError` that says which extra to install.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "PreNeTCallback": "integrations.lightning",
    "PreNeTTrainerCallback": "integrations.transformers",
    "Tracker": "integrations.loop",
    "Report": "prenet_callbacks.report",
    "estimate": "prenet_callbacks.projection.estimation",
    "Estimate": "prenet_callbacks.projection.estimation",
    "list_hardware": "prenet_callbacks.hardware",
    "lookup_hardware": "prenet_callbacks.hardware",
    "current_device": "prenet_callbacks.hardware",
}

# Need an optional extra ([lightning] or [pytorch-lightning], [transformers]): resolvable by name, but not
# pulled in by `import *`.
_OPTIONAL = {"PreNeTCallback", "PreNeTTrainerCallback"}
__all__ = sorted(set(_LAZY) - _OPTIONAL) + ["__version__"]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'prenet_callbacks' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(_LAZY) + ["__version__"]
