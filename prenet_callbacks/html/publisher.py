"""A session publisher that keeps the HTML page beside the JSON report up to date.

    session.publishers.append(PagePublisher(report_path.with_suffix(".html")))

Drawing a page takes about two seconds of CPU (matplotlib), which a training run should not pay:
by default each page is drawn by a separate, low-priority process (``python -m
prenet_callbacks.html``) from a snapshot of the report written beside the page, so neither the
training thread nor Python's GIL waits for it; ``trainer.fit()`` waits not for the
first page, only for the last one (bounded: the page is complete when the run's end returns). The end page
supersedes a first page still being drawn (that process is stopped); a
failure surfaces at the next call or at `wait`, for the session's usual handling (one warning,
training unchanged). ``mode="inline"`` draws in the caller's thread (tests, `prenet report`).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prenet_callbacks.html.page import ReportPageError, write_report_page
from prenet_callbacks.report import Report, write_atomic

STAGES = ("first", "end")
MODES = ("process", "inline")
# how long the end of a run waits for the previous page to finish before starting the last one
_WAIT_PREVIOUS_S = 30.0
# how long the end of a run waits for its own page: training is over, and the page should be there when
# fit()/train()/close() returns (docs/html-report.md); bounded, so a stuck renderer cannot hold the process
_WAIT_END_S = 60.0


class PagePublisher:
    """Write the page to ``path`` after the first prediction and at the end of the run.

    Args:
        path: the page (``prenet_report.html`` beside the JSON report).
        mode: ``"process"`` (default: a separate low-priority process draws it) or ``"inline"``.
    """

    def __init__(self, path: str | os.PathLike[str], *, mode: str = "process") -> None:
        if mode not in MODES:
            raise ValueError(f"mode={mode!r} is not one of {', '.join(MODES)}")
        self.path = Path(path)
        self.mode = mode
        self._process: subprocess.Popen | None = None
        self._errors: Path | None = None

    def __call__(self, report: Report, stage: str) -> None:
        if stage not in STAGES:
            raise ValueError(f"stage={stage!r} is not one of {', '.join(STAGES)}")
        if stage == "end":
            self._supersede()  # the end page replaces a first page still being drawn: no waiting at the end
        self.wait(timeout=_WAIT_PREVIOUS_S)
        if not report.predictions:
            return  # nothing to chart: a run that ended before its first prediction gets no page
        if self.mode == "inline":
            write_report_page(report, self.path)
            return
        self._start(report)
        if stage == "end":
            self.wait(timeout=_WAIT_END_S)

    def _start(self, report: Report) -> None:
        if self.path.is_dir():
            raise ReportPageError(f"cannot write the page {str(self.path)!r}: it is a directory (pass a file path)")
        snapshot = self.path.with_name(f".{self.path.name}.report.json")
        write_atomic(snapshot, report.to_json(), what="report snapshot")  # the session keeps changing `report`
        self._errors = self.path.with_name(f".{self.path.name}.errors.txt")
        with open(self._errors, "w", encoding="utf-8") as errors:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "prenet_callbacks.html", str(snapshot), str(self.path), "--remove-input",
                 "--errors", str(self._errors)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors, env=_child_env(),
                preexec_fn=_lower_priority if os.name == "posix" else None)

    def _supersede(self) -> None:
        """Stop a page still being drawn (it cleans up its temporary file on SIGTERM)."""
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if self._errors is not None:
                self._errors.unlink(missing_ok=True)
            self.path.with_name(f".{self.path.name}.report.json").unlink(missing_ok=True)
            self._process = self._errors = None

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the page being drawn (at most ``timeout`` seconds); raise its failure, once."""
        process, errors = self._process, self._errors
        if process is None:
            return
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return  # still drawing: checked again at the next call
        self._process = self._errors = None
        message = ""
        if errors is not None and errors.exists():
            message = errors.read_text(encoding="utf-8", errors="replace").strip()
            errors.unlink(missing_ok=True)
        if code != 0:
            last = message.splitlines()[-1] if message else f"exit code {code}"
            raise ReportPageError(f"the page {str(self.path)!r} could not be drawn: {last}")


def _lower_priority() -> None:
    try:
        os.nice(10)
    except OSError:
        pass


def _child_env() -> dict[str, str]:
    """The child imports this very package: give it the parent's import path."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
    return env
