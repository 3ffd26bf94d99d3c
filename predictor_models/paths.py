"""Checks that an output path can be written, before any work is done (shared by the CLIs and callbacks)."""
from __future__ import annotations

import os
import tempfile
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
            if not os.access(parent, os.W_OK | os.X_OK) or not _can_create_in(parent):
                raise ValueError(f"{option} {str(path)!r}: the folder {str(parent)!r} is not writable; "
                                 "choose another location")
            break
    if not directory and path.is_file() and not os.access(path, os.W_OK):
        raise ValueError(f"{option} {str(path)!r} exists and is read-only; choose another file or make it writable")
    return path


def _can_create_in(folder: Path) -> bool:
    """Whether a file can really be created in `folder` (as root `os.access` says yes on a read-only
    file system or in /proc): a probe file, removed at once."""
    try:
        handle, name = tempfile.mkstemp(prefix=".prenet-probe-", dir=folder)
    except OSError:
        return False
    os.close(handle)
    try:
        os.unlink(name)
    except OSError:
        pass
    return True
