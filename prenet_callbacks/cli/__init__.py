"""The ``prenet`` command line.

Each sub-command lives in its own module with ``register(subparsers)`` that adds a parser whose
``func(args) -> int`` runs it. Bad input exits with code 2 and one line on stderr.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

# module name (under prenet_callbacks.cli) for each sub-command
_SUBCOMMAND_MODULES = ("hardware", "estimate", "report", "train", "evaluate", "collect", "calibrate")  # not "delegate": a helper


class UsageError(Exception):
    """Bad input on the command line: printed as one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose errors are one line on stderr (``prenet <cmd>: error: ...``), exit code 2.

    `add_subparsers` makes the sub-command parsers of the same class.
    """

    def error(self, message: str):  # type: ignore[override]
        message = " ".join(str(message).split())
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="prenet", description="Predict training time and cost across hardware.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _SUBCOMMAND_MODULES:
        importlib.import_module(f"prenet_callbacks.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    commands = _commands(parser)
    if extra:  # reported by the sub-command's parser, so that the line names the command
        commands.get(getattr(args, "command", None), parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.error(f"no command given; choose one of: {', '.join(commands)}")
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # the reader went away (`prenet report --json | head`): not an error; keep Python's
        # flush at exit from raising again on the closed pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UsageError, ValueError, FileNotFoundError, KeyError, ImportError) as error:  # ImportError: an extra
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"prenet {args.command}: error: {message}", file=sys.stderr)
        return 2


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Sub-command name -> its parser."""
    for action in parser._actions:  # noqa: SLF001 - argparse keeps no public list of sub-parsers
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return dict(action.choices)
    return {}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
