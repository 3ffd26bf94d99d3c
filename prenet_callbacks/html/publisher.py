"""A session publisher that keeps the HTML page beside the JSON report up to date.

    session.outputs.publishers.append(PagePublisher(report_path.with_suffix(".html")))

A page is a few dozen SVG shapes written from the report's data (`prenet_callbacks.html.plot`): it takes
milliseconds, so it is drawn in the caller's thread, once after the first prediction and once at the
end, and it is complete when ``fit()``/``train()``/``close()`` returns. No process is started, nothing
is imported that the run did not already have, and nothing is left to wait for. A failure raises to
the session, which turns it into its usual single warning (training unchanged).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from prenet_callbacks.html.page import write_report_page
from prenet_callbacks.report import Report

STAGES = ("first", "end")


class PagePublisher:
    """Write the page to ``path`` after the first prediction and at the end of the run.

    Args:
        path: the page (``prenet_report.html`` beside the JSON report).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.seconds: list[float] = []   # what each page took to draw and write (docs/overhead.md)

    def __call__(self, report: Report, stage: str) -> None:
        if stage not in STAGES:
            raise ValueError(f"stage={stage!r} is not one of {', '.join(STAGES)}")
        if not report.predictions:
            return  # nothing to chart: a run that ended before its first prediction gets no page
        started = time.perf_counter()
        write_report_page(report, self.path)
        self.seconds.append(time.perf_counter() - started)
