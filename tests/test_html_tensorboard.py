"""`integrations.tensorboard.publish`: the panel as text (the charts are on the HTML page)."""
from __future__ import annotations

import pytest

from integrations.tensorboard import TEXT_TAG, publish
from prenet_callbacks.outputs.render import render_text
from prenet_callbacks.report import Report
from prenet_callbacks.outputs.terminal import LOG_WIDTH
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


def test_first_and_end_publish_the_panel_with_its_hardware_table_and_no_image():
    report = Report.from_dict(variant("finished"))
    writer = RecordingWriter()
    publish(report, writer, step=9, stage="first")
    publish(report, writer, step=192, stage="end")
    assert [(tag, step) for tag, _, step in writer.texts] == [(TEXT_TAG, 9), (TEXT_TAG, 192)]
    first_line = render_text(report, width=LOG_WIDTH).splitlines()[1].strip()
    assert "first prediction" in writer.texts[0][1] and "end of the run" in writer.texts[1][1]
    assert first_line in writer.texts[0][1]
    assert all(line.startswith("    ") for line in writer.texts[0][1].splitlines()[2:])  # a Markdown code block
    assert "T4" in writer.texts[1][1] and "8x H100" in writer.texts[1][1]   # the targets are in the text
    assert writer.images == []   # an image would cost the run a plotting stack's import and drawing


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
    assert any(tag.startswith(TEXT_TAG) for tag in tags), tags
