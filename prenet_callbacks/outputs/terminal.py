"""Where printed output goes: the one width rule, and a line of its own beside progress bars.

The width (`output_width`) is the console's real one: rich's own detection on a terminal; where
stdout is not a terminal (a log file, a pipe), ``COLUMNS`` when it is set, else `LOG_WIDTH`. The
callbacks, the `Tracker` and the ``prenet`` commands all print through it.

A panel or line printed while a training loop draws a progress bar must not start on the bar's line
(`own_line`): a tqdm bar (Lightning's ``TQDMProgressBar``, the HF Trainer's) is cleared and redrawn
below the output, as ``tqdm.write`` does. A rich live display (Lightning's ``RichProgressBar``) puts a
proxy in place of stdout while it runs, which prints what it is given above the display; rich consoles
write past that proxy to the file under it (and so onto the bar's line), so a panel is rendered to text
first and the text handed to the proxy (`print_block`).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from rich.console import Console

LOG_WIDTH = 100  # not a terminal and no COLUMNS: wide enough for every column, narrow enough for a log viewer


def output_width(file: IO[str] | None = None) -> int:
    """Columns to render for `file` (default stdout): the terminal's, else ``COLUMNS``, else `LOG_WIDTH`."""
    console = Console(file=file)
    if console.is_terminal:
        return console.width
    columns = os.environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else LOG_WIDTH


def output_console(file: IO[str] | None = None) -> Console:
    """A rich console for `file` (default stdout, looked up at each print) at `output_width`."""
    console = Console(file=file)
    # on a terminal rich follows its size as it changes; elsewhere the rule's fixed width
    return console if console.is_terminal else Console(file=file, width=output_width(file))


def _tqdm_bars() -> list[Any]:
    """The tqdm bars open in this process (none when tqdm was never imported).

    ``tqdm.external_write_mode`` (public) walks the same set; reading it first keeps a process without
    open bars from creating tqdm's write lock (a multiprocessing lock) just to print.
    """
    module = sys.modules.get("tqdm.std")
    bars = getattr(getattr(module, "tqdm", None), "_instances", None) if module is not None else None
    return [bar for bar in list(bars or ()) if not getattr(bar, "disable", True)]


@contextmanager
def own_line(file: IO[str] | None = None) -> Iterator[None]:
    """What is printed to `file` (default stdout) inside starts on a line of its own, above any tqdm bar.

    Open tqdm bars are cleared first and redrawn after (``tqdm.external_write_mode``); where `file` is
    not a terminal the bar's last line has no end (tqdm writes ``\\r`` updates), so a newline comes first.
    """
    if not _tqdm_bars():
        yield
        return
    stream = file if file is not None else sys.stdout
    with sys.modules["tqdm.std"].tqdm.external_write_mode(file=stream):
        if not Console(file=stream).is_terminal:
            stream.write("\n")
        yield


def _live_proxy(stream: Any) -> bool:
    """Whether `stream` is rich's stand-in for stdout while a live display runs (``rich.file_proxy``)."""
    return getattr(stream, "rich_proxied_file", None) is not None


def print_block(renderable: Any, file: IO[str] | None = None) -> None:
    """Print a rich renderable (the panel) at `output_width`, on its own line beside progress bars."""
    stream = file if file is not None else sys.stdout
    with own_line(file):
        console = output_console(file)
        if not _live_proxy(stream):
            console.print(renderable)
            return
        with console.capture() as captured:   # rendered at the console's width and colours, then handed over
            console.print(renderable)
        stream.write(captured.get())
        stream.flush()


def print_line(text: str, file: IO[str] | None = None) -> None:
    """Print one plain line (the end line) on its own line beside progress bars."""
    with own_line(file):
        print(text, file=file if file is not None else sys.stdout, flush=True)
