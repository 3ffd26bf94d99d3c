"""How a benchmark writes its result file: the command that made it, the date, then what it measured."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence


def write_result(path: str | Path, benchmark: str, argv: Sequence[str] | None, **fields: Any) -> dict[str, Any]:
    """Write ``{"benchmark", "command", "date", **fields}`` as JSON to ``path`` (folders made); returns it.
    ``argv``: the script's arguments as given (None: ``sys.argv[1:]``), so the command reruns it."""
    args = list(argv if argv is not None else sys.argv[1:])
    result = {"benchmark": benchmark, "command": " ".join([f"python benchmarks/{benchmark}.py", *args]),
              "date": time.strftime("%Y-%m-%d %H:%M"), **fields}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(result, indent=1) + "\n")
    return result


def show_and_record(result: dict[str, Any], path: str | Path | None, benchmark: str, argv: Sequence[str] | None) -> int:
    """Print ``result`` and, when ``path`` is given, write it with the command and date (`write_result`); exit 0."""
    print(json.dumps(result, indent=1))
    if path:
        write_result(path, benchmark, argv, **result)
    return 0


def show_and_write(result: dict[str, Any], path: str | Path | None) -> int:
    """Print ``result`` and write it as JSON to ``path`` when given (a trial's figures); the exit code."""
    text = json.dumps(result, indent=1)
    print(text)
    if path:
        Path(path).write_text(text + "\n")
    return 0
