"""The built-in catalog's two TOML files as parsed, kept beside them as JSON: read in 0.5 ms where `tomllib` takes
14 ms, once in every process that projects (a training run's first prediction, every ``prenet`` command).

The JSON is a cache, never the source: it records the SHA-256 of each TOML file it was parsed from, and
`parsed_builtin` uses it only when both still match; otherwise (a TOML file edited, the cache missing or
unreadable) the TOML files are parsed as before. So a stale cache costs time, never a wrong catalog.
`build_data` rewrites it with the TOML files; after editing one by hand::

    python -m predictor_models.hardware.build_data --cache-only
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

CACHE_NAME = "builtin_catalog.json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def parsed_builtin(accelerators: Path, prices: Path,
                   parse: Callable[[Path], dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parsed contents of the two TOML files: from the cache beside them when it matches both, else ``parse``."""
    try:
        cache = json.loads((accelerators.parent / CACHE_NAME).read_text(encoding="utf-8"))
        if cache["sha256"] == {accelerators.name: _digest(accelerators), prices.name: _digest(prices)}:
            return cache["files"][accelerators.name], cache["files"][prices.name]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return parse(accelerators), parse(prices)


def write_cache(accelerators: Path, prices: Path, parse: Callable[[Path], dict[str, Any]]) -> Path:
    """Parse the two TOML files and write the cache beside them; returns its path."""
    out = accelerators.parent / CACHE_NAME
    files = {path.name: parse(path) for path in (accelerators, prices)}
    doc = {"note": "written by `python -m predictor_models.hardware.build_data --cache-only` from the TOML files beside it",
           "sha256": {path.name: _digest(path) for path in (accelerators, prices)}, "files": files}
    out.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    return out
