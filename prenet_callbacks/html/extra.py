"""The optional plotting extra: is matplotlib installed, and the error that names the extra when it is not."""
from __future__ import annotations

import importlib.util

EXTRA = "html"
INSTALL = "pip install 'prenet-callbacks[html]'"


class MissingExtraError(ImportError):
    """The HTML page or a chart was asked for without the plotting extra; the message says what to install."""


def plotting_available() -> bool:
    """True when matplotlib, which draws the charts, can be imported."""
    return importlib.util.find_spec("matplotlib") is not None


def require_plotting(what: str = "the HTML report") -> None:
    """Raise `MissingExtraError` naming the extra when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as error:
        raise MissingExtraError(f"{what} needs matplotlib, which is not installed: run {INSTALL} "
                                f"(the '{EXTRA}' extra)") from error
