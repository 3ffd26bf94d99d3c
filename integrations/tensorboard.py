"""The report in TensorBoard: the panel as text and the hardware chart as an image.

    from integrations.tensorboard import publish
    publish(callback.report, trainer.logger.experiment, step=trainer.global_step, stage="end")

`experiment` is a ``SummaryWriter`` (``torch.utils.tensorboard`` or ``tensorboardX``, e.g. Lightning's
``TensorBoardLogger.experiment``) or anything with ``add_text`` and ``add_image`` (or ``add_figure``).
The callbacks call it once after the first prediction (``stage="first"``) and once at the end
(``stage="end"``); both land under the same tags, at their optimizer step. Without the ``html`` extra
(matplotlib) only the text is published.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from prenet_callbacks.html import plotting_available
from prenet_callbacks.render import render_text
from prenet_callbacks.report import Report

STAGES = {"first": "first prediction", "end": "end of the run"}
TEXT_TAG = "prenet/report"
IMAGE_TAG = "prenet/hardware"


def publish(report: Report, experiment: Any, *, step: int, stage: str) -> None:
    """Add the panel (text) and, when the report has targets and matplotlib is installed, the
    hardware chart (image) to `experiment` at `step`.

    Raises:
        ValueError: `stage` is not ``"first"`` or ``"end"``, or `experiment` has no ``add_text``.
    """
    if stage not in STAGES:
        raise ValueError(f"stage={stage!r} is not one of {sorted(STAGES)}")
    if not callable(getattr(experiment, "add_text", None)):
        raise ValueError(f"experiment={type(experiment).__name__} has no add_text; pass a TensorBoard SummaryWriter "
                         "(e.g. TensorBoardLogger.experiment)")
    panel = render_text(report, width=110, live=stage == "first")
    # TensorBoard renders text as Markdown: indenting every line keeps the panel a monospace block.
    body = "\n".join("    " + line for line in panel.rstrip("\n").splitlines())
    experiment.add_text(TEXT_TAG, f"**PreNeT, {STAGES[stage]}** (optimizer step {step:,})\n\n{body}", global_step=step)
    if report.targets and plotting_available():
        _publish_chart(report, experiment, step)


def _publish_chart(report: Report, experiment: Any, step: int) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from prenet_callbacks.html.charts import drawing, hardware_chart

    with drawing():
        figure = hardware_chart(report.to_dict())
        if figure is None:
            return
        if callable(getattr(experiment, "add_image", None)):
            canvas = FigureCanvasAgg(figure)
            canvas.draw()
            pixels = np.asarray(canvas.buffer_rgba())[..., :3].copy()
            experiment.add_image(IMAGE_TAG, pixels, global_step=step, dataformats="HWC")
        elif callable(getattr(experiment, "add_figure", None)):
            experiment.add_figure(IMAGE_TAG, figure, global_step=step)
