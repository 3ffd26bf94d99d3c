"""The ``prenet`` command line.

Each sub-command lives in its own module with ``register(subparsers)`` that adds a parser whose
``func(args) -> int`` runs it. Bad input exits with code 2 and one line on stderr.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

# module name (under prenet_callbacks.cli) for each sub-command; missing ones are skipped so that a
# half-built tree still gives a working CLI.
_SUBCOMMAND_MODULES = ("hardware", "estimate", "report", "train", "evaluate", "collect")


class UsageError(Exception):
    """Bad input on the command line: printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="prenet", description="Predict training time and cost across hardware.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(f"prenet_callbacks.cli.{name}")
        except ModuleNotFoundError as error:
            if error.name == f"prenet_callbacks.cli.{name}":
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except (UsageError, ValueError, FileNotFoundError, KeyError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"prenet {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
