"""`PagePublisher`: the session's hook that keeps the page beside the report up to date, in the caller's
thread, in milliseconds, with nothing left running or waiting when it returns."""
from __future__ import annotations

import os
import sys

import pytest

from prenet_callbacks.html import PagePublisher, ReportPageError
from prenet_callbacks.report import Report
from tests.html_fixtures import variant


def test_each_page_is_complete_when_the_call_returns_and_follows_the_report(tmp_path):
    report = Report.from_dict(variant("finished"))
    publisher = PagePublisher(tmp_path / "run.html")
    publisher(report, "first")
    assert 'data-chart="hardware"' in (tmp_path / "run.html").read_text()
    report.targets.clear()  # the session goes on changing the report; the end page shows what it holds then
    publisher(report, "end")
    page = (tmp_path / "run.html").read_text()
    assert 'data-missing="hardware"' in page and page.rstrip().endswith("</html>")
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]  # no snapshot, temp or error file
    assert len(publisher.seconds) == 2 and all(s > 0 for s in publisher.seconds)


def test_a_page_starts_no_process_and_imports_no_plotting_package(tmp_path, monkeypatch):
    import subprocess

    def refuse(*args, **kwargs):
        raise AssertionError("the page started a process")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "fork", refuse)
    monkeypatch.setitem(sys.modules, "matplotlib", None)   # an import of it would raise
    PagePublisher(tmp_path / "run.html")(Report.from_dict(variant("on_gpu")), "end")
    assert "Roofline on A100-SXM4-80GB" in (tmp_path / "run.html").read_text()


def test_a_directory_as_the_page_fails_in_the_caller(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        PagePublisher(tmp_path)(Report.from_dict(variant("finished")), "first")


def test_a_failure_leaves_the_previous_page_and_no_temporary_file(tmp_path, monkeypatch):
    publisher = PagePublisher(tmp_path / "run.html")
    publisher(Report.from_dict(variant("finished")), "first")
    before = (tmp_path / "run.html").read_text()

    def broken(data):
        raise RuntimeError("no drawing today")

    monkeypatch.setattr("prenet_callbacks.html.charts.history_chart", broken)
    with pytest.raises(RuntimeError, match="no drawing today"):
        publisher(Report.from_dict(variant("finished")), "end")
    assert (tmp_path / "run.html").read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]


def test_no_page_before_the_first_prediction_and_stages_are_checked(tmp_path):
    publisher = PagePublisher(tmp_path / "run.html")
    publisher(Report.from_dict({**variant("finished"), "predictions": []}), "end")
    assert not (tmp_path / "run.html").exists()
    with pytest.raises(ValueError, match="stage='middle'"):
        publisher(Report.from_dict(variant("finished")), "middle")
    with pytest.raises(ReportPageError):   # the page's own error is still a ValueError with a reason
        from prenet_callbacks.html import render_report_page
        render_report_page(Report.from_dict({**variant("finished"), "predictions": []}))


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_reports_and_pages_follow_the_process_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        report = Report.from_dict(variant("finished"))
        path = report.save(tmp_path / "r.json")
        PagePublisher(tmp_path / "r.html")(report, "end")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == mode
    assert (tmp_path / "r.html").stat().st_mode & 0o777 == mode
