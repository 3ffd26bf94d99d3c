"""A session publisher that keeps the HTML page beside the JSON report up to date.

    session.publishers.append(PagePublisher(report_path.with_suffix(".html")))

Drawing the page takes one to two seconds of CPU. After the first prediction, training is still
running, so that page is drawn in a background thread from a snapshot of the report; at the end
the page is drawn in the caller's thread, after any pending one, so it is complete when the run
returns. A failure in the background surfaces at the next call, for the session's usual handling
(one warning, training unchanged).
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from prenet_callbacks.html.page import write_report_page
from prenet_callbacks.report import Report

STAGES = ("first", "end")


class PagePublisher:
    """Write the page to `path` at each stage; ``background=False`` draws the first page in the
    caller's thread too (tests, or processes that must not start threads)."""

    def __init__(self, path: str | os.PathLike[str], *, background: bool = True) -> None:
        self.path = Path(path)
        self.background = background
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def __call__(self, report: Report, stage: str) -> None:
        if stage not in STAGES:
            raise ValueError(f"stage={stage!r} is not one of {', '.join(STAGES)}")
        self.wait()
        if not report.predictions:
            return  # nothing to chart: a run that ended before its first prediction gets no page
        snapshot = Report.from_dict(json.loads(report.to_json()))  # the session keeps changing `report`
        if stage == "first" and self.background:
            self._thread = threading.Thread(target=self._write, args=(snapshot,), name="prenet-html-page",
                                            daemon=True)
            self._thread.start()
        else:
            write_report_page(snapshot, self.path)

    def _write(self, report: Report) -> None:
        try:
            write_report_page(report, self.path)
        except BaseException as error:  # noqa: BLE001 - handed to the caller by wait()
            self._error = error

    def wait(self) -> None:
        """Block until a background page is written; re-raise its error, if any, once."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error
