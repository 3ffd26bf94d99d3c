"""The callbacks hand their report to the HTML page and TensorBoard (issue 14), on real Lightning fits."""
from __future__ import annotations

import pytest

import lightning.pytorch as pl

from prenet_callbacks import PreNeTCallback
from prenet_callbacks.html import PagePublisher
from tests.lightning_helpers import TinyModule, loaders, trainer

FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, metrics_every_n_steps=5, targets=["A100"], print_report=False)


class RecordingWriter:
    """A SummaryWriter stand-in: keeps what is added."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, int]] = []
        self.images: list[tuple[str, int]] = []

    def add_text(self, tag, text, global_step=None):
        self.texts.append((tag, global_step))

    def add_image(self, tag, image, global_step=None, dataformats="CHW"):
        self.images.append((tag, global_step))


class TensorBoardLogger(pl.loggers.Logger):
    """Named like Lightning's, with a recording `experiment`."""

    def __init__(self) -> None:
        super().__init__()
        self._writer = RecordingWriter()

    name, version = "tb", 0

    @property
    def experiment(self):
        return self._writer

    def log_hyperparams(self, *args, **kwargs):
        pass

    def log_metrics(self, metrics, step=None):
        pass


def test_the_page_is_written_beside_the_report_and_tensorboard_gets_the_panel(tmp_path):
    logger = TensorBoardLogger()
    callback = PreNeTCallback(report_path=tmp_path / "run.json", html=True, **FAST)
    trainer(tmp_path, [callback], max_epochs=2, logger=logger).fit(TinyModule(), *loaders(train_batches=20))
    # complete when fit() returns: no wait, no renderer left, no file but the report and the page
    page = next(p for p in callback.session.outputs.publishers if isinstance(p, PagePublisher))
    assert len(page.seconds) == 2   # first prediction and end, each drawn in the caller's thread
    assert sorted(p.name for p in tmp_path.glob("run*")) == ["run.html", "run.json"]
    assert not list(tmp_path.glob(".run.html*"))
    html = (tmp_path / "run.html").read_text()
    assert 'data-chart="history"' in html and "took" in html  # the end page, drawn after the run ended
    writer = logger.experiment
    assert [tag for tag, _ in writer.texts] == ["prenet/report", "prenet/report"]  # first prediction, end
    assert writer.images == []


def test_html_false_writes_no_page(tmp_path):
    callback = PreNeTCallback(report_path=tmp_path / "run.json", html=False, **FAST)
    trainer(tmp_path, [callback], max_epochs=2).fit(TinyModule(), *loaders(train_batches=20))
    assert (tmp_path / "run.json").exists() and not (tmp_path / "run.html").exists()
    assert not any(isinstance(p, PagePublisher) for p in callback.session.outputs.publishers)


def test_the_page_is_on_by_default_and_html_is_checked():
    assert PreNeTCallback().session.config.html is None   # None: write it (no extra needed)
    with pytest.raises(ValueError, match="html must be True, False or None"):
        PreNeTCallback(html="yes")


def test_a_page_that_cannot_be_drawn_warns_once_and_the_report_is_still_written(tmp_path, monkeypatch):
    import warnings

    from prenet_callbacks.session.machine import PreNeTWarning

    def fail(report, path):
        raise RuntimeError("no drawing today")

    monkeypatch.setattr("prenet_callbacks.html.publisher.write_report_page", fail)
    callback = PreNeTCallback(report_path=tmp_path / "run.json", html=True, **FAST)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer(tmp_path, [callback], max_epochs=2).fit(TinyModule(), *loaders(train_batches=20))
    prenet = [w for w in caught if issubclass(w.category, PreNeTWarning)]
    assert len(prenet) == 1 and "no drawing today" in str(prenet[0].message)
    assert not callback.session.guard.disabled and callback.report.actual is not None
    assert any("no drawing today" in line for line in callback.report.limitations)
    assert (tmp_path / "run.json").exists()
