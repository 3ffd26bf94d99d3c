"""`PagePublisher`: the session's hook that keeps the page beside the report up to date."""
from __future__ import annotations

import os

import pytest

from prenet_callbacks.html import PagePublisher, ReportPageError
from prenet_callbacks.report import Report
from tests.html_fixtures import variant


def test_pages_are_drawn_by_another_process_from_a_snapshot_in_order(tmp_path):
    report = Report.from_dict(variant("finished"))
    publisher = PagePublisher(tmp_path / "run.html")
    publisher(report, "first")
    assert publisher._process is not None and publisher._process.pid != os.getpid()
    report.targets.clear()  # the session goes on changing the report while the page is drawn
    publisher.wait()
    first = (tmp_path / "run.html").read_text()
    assert 'data-chart="hardware"' in first
    publisher(report, "end")
    publisher.wait()
    assert 'data-missing="hardware"' in (tmp_path / "run.html").read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]  # no snapshot or error file left


def test_a_failure_in_the_drawing_process_surfaces_at_the_next_call_once(tmp_path, monkeypatch):
    import prenet_callbacks.html.publisher as publisher_module

    real_write = publisher_module.write_atomic
    # the child gets a truncated snapshot: it fails, and says why on its stderr
    monkeypatch.setattr(publisher_module, "write_atomic", lambda path, text, **kw: real_write(path, text[:50], **kw))
    publisher = PagePublisher(tmp_path / "run.html")
    publisher(Report.from_dict(variant("finished")), "first")
    publisher._process.wait()  # it has failed by the time the run ends
    with pytest.raises(ReportPageError, match="could not be drawn: ReportError: .*not valid JSON"):
        publisher(Report.from_dict(variant("finished")), "end")
    publisher.wait()  # reported once, not again
    assert not (tmp_path / "run.html").exists()


def test_a_directory_as_the_page_fails_in_the_caller(tmp_path):
    with pytest.raises(ReportPageError, match="is a directory"):
        PagePublisher(tmp_path)(Report.from_dict(variant("finished")), "first")


def test_no_page_before_the_first_prediction_and_stages_are_checked(tmp_path):
    publisher = PagePublisher(tmp_path / "run.html", mode="inline")
    publisher(Report.from_dict({**variant("finished"), "predictions": []}), "end")
    assert not (tmp_path / "run.html").exists()
    with pytest.raises(ValueError, match="stage='middle'"):
        publisher(Report.from_dict(variant("finished")), "middle")
    with pytest.raises(ValueError, match="mode='thread'"):
        PagePublisher(tmp_path / "run.html", mode="thread")


def test_drawing_in_two_threads_leaves_the_users_matplotlib_settings_alone():
    """A page drawn in the background and a TensorBoard image drawn in the training thread overlap;
    the one that started first finishing first must not leave the default style behind."""
    import threading
    import time

    import matplotlib

    from prenet_callbacks.html.charts import drawing

    entered, release = threading.Event(), threading.Event()

    def background() -> None:
        with drawing():
            entered.set()
            release.wait(5)

    with matplotlib.rc_context({"lines.linewidth": 7.0, "text.parse_math": True}):
        thread = threading.Thread(target=background)
        thread.start()
        entered.wait(5)
        threading.Timer(0.2, release.set).start()   # the background drawer finishes while we would draw
        with drawing():
            time.sleep(0.4)
        thread.join()
        assert matplotlib.rcParams["lines.linewidth"] == 7.0 and matplotlib.rcParams["text.parse_math"] is True


def test_the_end_page_supersedes_a_first_page_still_being_drawn(tmp_path, wait_for_end_pages):
    report = Report.from_dict(variant("finished"))
    publisher = PagePublisher(tmp_path / "run.html")
    publisher(report, "first")
    first = publisher._process
    publisher(report, "end")          # the first page is still drawing (a process takes seconds to start)
    assert first.returncode is not None and first.returncode != 0   # stopped, not waited for
    assert 'data-chart="history"' in (tmp_path / "run.html").read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]  # no temporary file of the stopped page


def test_the_end_page_is_complete_when_the_call_returns(tmp_path, wait_for_end_pages):
    """fit()/train()/close() publish the end page last: it is there, whole, when they return."""
    publisher = PagePublisher(tmp_path / "run.html")
    publisher(Report.from_dict(variant("finished")), "end")
    assert publisher._process is None                      # drawn and collected, no wait() needed
    assert (tmp_path / "run.html").read_text().rstrip().endswith("</html>")
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]


def test_a_page_drawn_during_the_run_leaves_no_empty_error_file(tmp_path):
    publisher = PagePublisher(tmp_path / "run.html")
    publisher(Report.from_dict(variant("finished")), "first")
    publisher._process.wait()          # the run goes on; nobody has called wait() yet
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]
    publisher.wait()


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_reports_and_pages_follow_the_process_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        report = Report.from_dict(variant("finished"))
        path = report.save(tmp_path / "r.json")
        PagePublisher(tmp_path / "r.html", mode="inline")(report, "end")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == mode
    assert (tmp_path / "r.html").stat().st_mode & 0o777 == mode
