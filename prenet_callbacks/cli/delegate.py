"""Sub-commands that are thin fronts for a `predictor_models` module with ``add_arguments``/``run``."""
from __future__ import annotations

import functools
import importlib
from typing import Any

from prenet_callbacks.extras import require_extra


def register_delegate(subparsers: Any, command: str, module_name: str, help_text: str,
                      needs: tuple[str, str] | None = None) -> None:
    """Add ``prenet COMMAND``: its options and behaviour come from ``predictor_models.MODULE``.

    ``needs``: ``(module, extra)`` the command cannot run without; checked when it runs (``--help`` works
    without it), failing with the extra to install."""
    impl = importlib.import_module(f"predictor_models.{module_name}")
    parser = subparsers.add_parser(command, help=help_text, description=(impl.__doc__ or help_text).strip().splitlines()[0])
    impl.add_arguments(parser)
    run = impl.run if needs is None else functools.partial(_run_with, needs, f"prenet {command}", impl.run)
    parser.set_defaults(func=run)


def _run_with(needs: tuple[str, str], what: str, run: Any, args: Any) -> Any:
    require_extra(*needs, what)
    return run(args)
