"""`PagePublisher`: the session's hook that keeps the page beside the report up to date."""
from __future__ import annotations

import pytest

from prenet_callbacks.html import PagePublisher
from prenet_callbacks.report import Report, ReportError
from tests.html_fixtures import variant


def test_first_page_is_drawn_in_the_background_from_a_snapshot_and_the_end_page_in_the_caller(tmp_path):
    report = Report.from_dict(variant("finished"))
    publisher = PagePublisher(tmp_path / "run.html")
    publisher(report, "first")
    report.targets.clear()  # the session goes on changing the report while the page is drawn
    publisher.wait()
    first = (tmp_path / "run.html").read_text()
    assert 'data-chart="hardware"' in first
    publisher(report, "end")
    assert 'data-missing="hardware"' in (tmp_path / "run.html").read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]


def test_a_background_failure_surfaces_at_the_next_call_once(tmp_path):
    publisher = PagePublisher(tmp_path)  # a directory: the write fails in the thread
    publisher(Report.from_dict(variant("finished")), "first")
    with pytest.raises(ReportError, match="is a directory"):
        publisher(Report.from_dict(variant("finished")), "end")
    publisher.wait()  # reported once, not again


def test_no_page_before_the_first_prediction_and_stages_are_checked(tmp_path):
    publisher = PagePublisher(tmp_path / "run.html", background=False)
    publisher(Report.from_dict({**variant("finished"), "predictions": []}), "end")
    assert not (tmp_path / "run.html").exists()
    with pytest.raises(ValueError, match="stage='middle'"):
        publisher(Report.from_dict(variant("finished")), "middle")


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
