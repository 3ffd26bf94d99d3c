"""Optional extras: find out whether one is installed, and say how to install it when it is not."""
from __future__ import annotations

import importlib.util


def has_module(module: str) -> bool:
    """True when ``module`` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require_extra(module: str, extra: str, what: str) -> None:
    """Raise `ImportError` naming the extra to install when ``module`` is missing (found without importing it)."""
    if not has_module(module):
        raise ImportError(f"{what} needs {module}, which is not installed: pip install 'prenet-callbacks[{extra}]'")
