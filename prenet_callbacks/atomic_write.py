"""Write a file so that readers see the old content or the new, never half of it."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: str | os.PathLike[str], text: str, *, what: str,
                     error: type[Exception] = OSError) -> Path:
    """Write `text` to a temp file beside `path`, then rename it over `path`; returns the path.

    A location that cannot be written (a directory, inside a file, read-only, full) raises `error`
    with a message naming `what` ("report", "page"), the file and the reason; on any failure the
    temp file is removed and an existing file at `path` is left as it was.
    """
    path = Path(path)
    if path.is_dir():
        raise error(f"cannot write {what} {str(path)!r}: it is a directory (pass a file path)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".prenet-", suffix=path.suffix, dir=path.parent)
    except OSError as failure:
        raise error(f"cannot write {what} {str(path)!r}: {failure.strerror or failure}") from failure
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException as failure:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(failure, OSError):
            raise error(f"cannot write {what} {str(path)!r}: {failure.strerror or failure}") from failure
        raise
    return path
