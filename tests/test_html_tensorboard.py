"""`integrations.tensorboard.publish`: the panel as text and the hardware chart as an image."""
from __future__ import annotations

import pytest

from integrations.tensorboard import IMAGE_TAG, TEXT_TAG, publish
from prenet_callbacks.render import render_text
from prenet_callbacks.report import Report
from tests.html_fixtures import variant


class RecordingWriter:
    """Records what a SummaryWriter would be given (add_text / add_image)."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, str, int]] = []
        self.images: list[tuple[str, object, int, str]] = []

    def add_text(self, tag, text_string, global_step=None):
        self.texts.append((tag, text_string, global_step))

    def add_image(self, tag, img_tensor, global_step=None, dataformats="CHW"):
        self.images.append((tag, img_tensor, global_step, dataformats))


class FigureWriter:
    """A writer that takes matplotlib figures only."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.figures: list[tuple[str, object, int]] = []

    def add_text(self, tag, text_string, global_step=None):
        self.texts.append(text_string)

    def add_figure(self, tag, figure, global_step=None):
        self.figures.append((tag, figure, global_step))


def test_first_and_end_publish_the_panel_and_the_hardware_image():
    report = Report.from_dict(variant("finished"))
    writer = RecordingWriter()
    publish(report, writer, step=9, stage="first")
    publish(report, writer, step=192, stage="end")
    assert [(tag, step) for tag, _, step in writer.texts] == [(TEXT_TAG, 9), (TEXT_TAG, 192)]
    first_line = render_text(report, width=110).splitlines()[1].strip()
    assert "first prediction" in writer.texts[0][1] and "end of the run" in writer.texts[1][1]
    assert first_line in writer.texts[0][1]
    assert all(line.startswith("    ") for line in writer.texts[0][1].splitlines()[2:])  # a Markdown code block
    assert [(tag, step, fmt) for tag, _, step, fmt in writer.images] == [(IMAGE_TAG, 9, "HWC"), (IMAGE_TAG, 192, "HWC")]
    pixels = writer.images[0][1]
    assert pixels.dtype.name == "uint8" and pixels.shape[2] == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 400
    assert pixels.min() < 100 < 200 < pixels.max()  # drawn on, not blank


def test_figure_only_writers_get_the_figure_and_reports_without_targets_get_text_only():
    writer = FigureWriter()
    publish(Report.from_dict(variant("not_fitting")), writer, step=5, stage="end")
    assert len(writer.texts) == 1 and writer.figures[0][0] == IMAGE_TAG and writer.figures[0][2] == 5
    assert any("does not fit" in text.get_text() for text in writer.figures[0][1].axes[0].texts)
    bare = RecordingWriter()
    publish(Report.from_dict(variant("no_targets")), bare, step=5, stage="first")
    assert len(bare.texts) == 1 and bare.images == []


def test_bad_stage_and_writer_are_named():
    report = Report.from_dict(variant("finished"))
    with pytest.raises(ValueError, match="stage='middle'"):
        publish(report, RecordingWriter(), step=1, stage="middle")
    with pytest.raises(ValueError, match="experiment=object has no add_text"):
        publish(report, object(), step=1, stage="end")


def test_a_real_summary_writer_stores_both(tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard is not installed: the real SummaryWriter cannot run here "
                                              "(the recording fakes above cover publish's calls)")
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(tmp_path))
    publish(Report.from_dict(variant("finished")), writer, step=9, stage="first")
    writer.close()
    tags = {value.tag for path in tmp_path.glob("events.out.tfevents.*")
            for event in EventFileLoader(str(path)).Load() for value in event.summary.value}
    assert IMAGE_TAG in tags and any(tag.startswith(TEXT_TAG) for tag in tags), tags
