"""Where a session's results go: logger metrics, the printed panel and closing line, publishers
(HTML page, TensorBoard) and the JSON report on disk.

Rank zero prints, logs and writes (`is_rank_zero`); every rank measures. An output that fails is
one stated limitation and one warning, and never silences the others.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Callable, Protocol

from prenet_callbacks.forecast.eta import Prediction
from prenet_callbacks.session.lifecycle import end_line
from prenet_callbacks.report import Report
from prenet_callbacks.session.config import SessionConfig
from prenet_callbacks.session.guard import PreNeTWarning
from prenet_callbacks.outputs.terminal import print_line

# Reports are rewritten at most this often during the run (and always at the end).
REPORT_WRITE_INTERVAL_S = 30.0


class MetricSink(Protocol):
    """Takes ``{"prenet/eta_s": ...}`` at an optimizer step (a trainer's loggers)."""

    def __call__(self, metrics: dict[str, float], step: int) -> None: ...


class Printer(Protocol):
    """Shows the first prediction's panel (`prenet_callbacks.outputs.render.print_report`)."""

    def __call__(self, report: Report) -> None: ...


class Publisher(Protocol):
    """Gets the report at ``stage`` "first" (the first prediction) and "end" (`html.PagePublisher`)."""

    def __call__(self, report: Report, stage: str) -> None: ...


class SessionOutputs:
    """A session's outputs. See the module docstring.

    Args:
        config: the user's choices (``report_path``, ``print_report``, ``html``); read at each output.
        is_rank_zero: only rank zero prints, logs and writes (an integration may set it later).
        now: the session's clock, for the report's write interval.
    """

    def __init__(self, config: SessionConfig, *, is_rank_zero: bool, now: Callable[[], float]) -> None:
        self.config = config
        self.is_rank_zero = is_rank_zero
        self.now = now
        self.logger_sinks: list[MetricSink] = []
        self.printer: Printer | None = None
        self.line_printer: Callable[[str], None] = print_line  # on a line of its own beside progress bars
        self.publishers: list[Publisher] = []
        self.last_report_write = -math.inf
        self.last_report: int | None = None   # the fingerprint of what was written last (`Report.save_if_changed`)

    def new_fit(self) -> None:
        """A fit starts: its first report is written at once."""
        self.last_report_write = -math.inf
        self.last_report = None

    def add_page_publisher(self) -> None:
        """The HTML page beside the JSON report (rank 0; once per session, also across resumes)."""
        from prenet_callbacks.html import PagePublisher

        wanted = self.config.html is not False
        path = self.config.report_path
        if (wanted and self.is_rank_zero and path is not None
                and not any(isinstance(p, PagePublisher) for p in self.publishers)):
            self.publishers.append(PagePublisher(Path(path).with_suffix(".html")))

    def prediction(self, report: Report, *, first: bool) -> None:
        """A prediction was made: save the report (the first at once), show the first."""
        # the report first: a location that cannot be written is one failure, not one per output
        self.write_report(report, force=first)
        if first:
            self.publish(report, "first")

    def end(self, report: Report, *, unit: str) -> None:
        """The run ended: its closing line, the final report and every publisher's last page."""
        self.print_end_line(report, unit=unit)
        self.write_report(report, force=True)
        self.publish(report, "end")

    def log(self, prediction: Prediction, step: int, elapsed_s: float) -> None:
        """The prediction's step time, total and the time left ``elapsed_s`` into the run to every logger sink
        (rank 0): between two predictions the time left counts down from the latest one's total."""
        if not self.is_rank_zero or not self.logger_sinks:
            return
        metrics = {"prenet/step_s": prediction.step_s}
        if prediction.predicted_total_s is not None:
            metrics["prenet/eta_s"] = max(0.0, prediction.predicted_total_s - elapsed_s)
            metrics["prenet/predicted_total_s"] = prediction.predicted_total_s
        for sink in self.logger_sinks:
            sink({k: float(v) for k, v in metrics.items() if v is not None}, step)

    def write_report(self, report: Report, *, force: bool = False) -> None:
        """Save the report (rank 0, where a path is set), at most every `REPORT_WRITE_INTERVAL_S` unless forced,
        and not when nothing in it changed since the last write."""
        path = self.config.report_path
        if not self.is_rank_zero or path is None:
            return
        now = self.now()
        if not force and now - self.last_report_write < REPORT_WRITE_INTERVAL_S:
            return
        self.last_report_write = now
        self.last_report = report.save_if_changed(path, self.last_report)

    def publish(self, report: Report, stage: str) -> None:
        """Print the panel ("first") and hand the report to every publisher, rank 0 only."""
        if not self.is_rank_zero:
            return
        if stage == "first" and self.config.print_report and self.printer is not None:
            self.printer(report)
        for publish in self.publishers:
            try:
                publish(report, stage)
            except Exception as error:  # noqa: BLE001 - an output that fails must not silence the others
                self._note_failure(report, error)

    def print_end_line(self, report: Report, *, unit: str) -> None:
        """The run's closing line, e.g. ``took 78.5 s; predicted ...`` (rank 0, when the user prints the report)."""
        if not self.is_rank_zero:
            return
        line = end_line(report, unit=unit)
        if line:
            self.print_line(line)

    def print_line(self, line: str) -> None:
        """One line for the user (rank 0, when the user prints the report), on a line of its own."""
        if self.is_rank_zero and self.config.print_report:
            self.line_printer(line)

    def _note_failure(self, report: Report, error: BaseException) -> None:
        note = f"an output could not be written ({type(error).__name__}: {error})"
        if note not in report.limitations:
            report.limitations.append(note)
            warnings.warn(f"PreNeT: {note}; training is unchanged.", PreNeTWarning, stacklevel=4)
