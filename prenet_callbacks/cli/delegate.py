"""Sub-commands that are thin fronts for a `predictor_models` module with ``add_arguments``/``run``."""
from __future__ import annotations

import importlib
from typing import Any


def register_delegate(subparsers: Any, command: str, module_name: str, help_text: str) -> None:
    """Add ``prenet COMMAND``: its options and behaviour come from ``predictor_models.MODULE``."""
    impl = importlib.import_module(f"predictor_models.{module_name}")
    parser = subparsers.add_parser(command, help=help_text, description=(impl.__doc__ or help_text).strip().splitlines()[0])
    impl.add_arguments(parser)
    parser.set_defaults(func=impl.run)
