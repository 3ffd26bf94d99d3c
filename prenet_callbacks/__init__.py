"""PreNeT callbacks: how long will this training run take here, and elsewhere?

Public API::

    from prenet_callbacks import PreNeTCallback, estimate, Report, list_hardware, lookup_hardware
    from prenet_callbacks import PreNeTTrainerCallback, Tracker

Names are resolved lazily so that ``import prenet_callbacks`` stays cheap and does not import
Lightning, DeepSpeed or transformers. The engine's own names come from its modules. The framework
adapters (`PreNeTCallback`: the ``lightning`` or ``pytorch-lightning`` extra, `PreNeTTrainerCallback`: the
``transformers`` extra, `Tracker`: no extra) live in the package above the engine, which declares them in
the package metadata (entry-point group ``prenet_callbacks.adapters`` in pyproject.toml); they are looked up
there (or, in a checkout used without installing it, in that pyproject.toml's table), so that the engine never
names the package above it. Without its extra, an adapter raises an
`ImportError` that says which extra to install.
"""
from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

__version__ = "0.1.0"

ADAPTER_GROUP = "prenet_callbacks.adapters"

_ENGINE = {
    "Report": "prenet_callbacks.report",
    "estimate": "prenet_callbacks.projection.estimation",
    "Estimate": "prenet_callbacks.projection.estimation",
    "list_hardware": "prenet_callbacks.hardware",
    "lookup_hardware": "prenet_callbacks.hardware",
    "current_device": "prenet_callbacks.hardware",
}
_ADAPTERS = ("PreNeTCallback", "PreNeTTrainerCallback", "Tracker")

# Need an optional extra ([lightning] or [pytorch-lightning], [transformers]): resolvable by name, but not
# pulled in by `import *`.
_OPTIONAL = {"PreNeTCallback", "PreNeTTrainerCallback"}
__all__ = sorted((set(_ENGINE) | set(_ADAPTERS)) - _OPTIONAL) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _ENGINE:
        value = getattr(importlib.import_module(_ENGINE[name]), name)
    elif name in _ADAPTERS:
        value = _adapter(name)
    else:
        raise AttributeError(f"module 'prenet_callbacks' has no attribute {name!r}")
    globals()[name] = value
    return value


def _adapter(name: str) -> Any:
    """The adapter the installed package declares under ``name`` (loading it imports its framework)."""
    found = list(entry_points(group=ADAPTER_GROUP, name=name))
    if found:
        return found[0].load()
    target = _checkout_declarations().get(name)
    if target is None:
        raise ImportError(f"prenet_callbacks.{name} is declared in the package's metadata (entry point group "
                          f"{ADAPTER_GROUP!r}), which this environment does not have: install the package "
                          "(pip install prenet-callbacks, or pip install -e . in a checkout)")
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _checkout_declarations() -> dict[str, str]:
    """The adapters' declarations in the checkout's pyproject.toml, for a source tree used without installing
    it (``PYTHONPATH=.``): the same table the package metadata is built from."""
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        table = tomllib.loads(pyproject.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    declared = table.get("project", {}).get("entry-points", {}).get(ADAPTER_GROUP, {})
    return {str(key): str(value) for key, value in declared.items()}


def __dir__() -> list[str]:
    return sorted(set(_ENGINE) | set(_ADAPTERS)) + ["__version__"]
