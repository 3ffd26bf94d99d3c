"""Checks that an output path can be written, before any work is done (shared by the CLIs and callbacks)."""
from __future__ import annotations

import os
from pathlib import Path


def check_output_path(path: str | Path, option: str, *, directory: bool, example: str = "evaluation.json") -> Path:
    """`path` can be written (a folder when `directory`, else a file); checked before any work is done.

    Raises `ValueError` naming ``option``, the path and the fix; ``example`` is the file name the
    message suggests.
    """
    path = Path(path).expanduser()
    if str(path).strip() in ("", "."):
        if not directory:
            raise ValueError(f"{option} is empty; pass a file path such as results/{example}")
    if path.exists():
        if directory and not path.is_dir():
            raise ValueError(f"{option} {str(path)!r} is a file; pass a folder to write into")
        if not directory and path.is_dir():
            raise ValueError(f"{option} {str(path)!r} is a directory; pass a file path such as "
                             f"{str(path / example)!r}")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{option} {str(path)!r} lies inside {str(parent)!r}, which is a file; "
                                 "choose a path inside a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ValueError(f"{option} {str(path)!r}: the folder {str(parent)!r} is not writable; "
                                 "choose another location")
            break
    return path
