"""Shared test set-up: quiet, single-threaded torch, so the suite runs fast and repeatably on 2 cores."""
from __future__ import annotations

import os
import warnings

os.environ.setdefault("DS_ACCELERATOR", "cpu")
os.environ.setdefault("PL_DISABLE_FORK", "1")

import pytest
import torch

torch.set_num_threads(1)
warnings.filterwarnings("ignore", message=".*does not have many workers.*")
warnings.filterwarnings("ignore", message=".*tensorboardX.*")
warnings.filterwarnings("ignore", message=".*LeafSpec.*")


@pytest.fixture
def tmp_report(tmp_path):
    return tmp_path / "report.json"


@pytest.fixture(autouse=True)
def _stop_page_renders(monkeypatch):
    """Stop the HTML pages still being drawn when a test ends.

    A fit hands its page to a low-priority process and returns without waiting (as in real runs); across
    a suite of fits those processes pile up (a dozen at once was seen) and take the CPU that the tests
    judging wall time need. Tests that look at a page wait for it themselves (`wait_for_end_pages`)."""
    from prenet_callbacks.html.publisher import PagePublisher

    started: list[PagePublisher] = []
    original = PagePublisher._start

    def tracked(self, report):
        started.append(self)
        return original(self, report)

    monkeypatch.setattr(PagePublisher, "_start", tracked)
    # A run's end waits for its last page (docs/html-report.md); across the suite's ~150 fits that is minutes
    # of drawing that the tests of fits do not look at. Those that do (test_html_publisher.py) set it back.
    import prenet_callbacks.html.publisher as publisher_module

    monkeypatch.setattr(publisher_module, "_WAIT_END_S", 0.0)
    yield
    for publisher in started:
        publisher._supersede()


@pytest.fixture
def wait_for_end_pages(monkeypatch):
    """The production behaviour: a run's end waits (bounded) for its last page."""
    import prenet_callbacks.html.publisher as publisher_module

    monkeypatch.setattr(publisher_module, "_WAIT_END_S", 60.0)
