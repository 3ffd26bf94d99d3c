"""The report in TensorBoard: the panel as text.

    from integrations.tensorboard import publish
    publish(callback.report, trainer.logger.experiment, step=trainer.global_step, stage="end")

`experiment` is a ``SummaryWriter`` (``torch.utils.tensorboard`` or ``tensorboardX``, e.g. Lightning's
``TensorBoardLogger.experiment``) or anything with ``add_text``. The callbacks call it once after the
first prediction (``stage="first"``) and once at the end (``stage="end"``); both land under the same
tag, at their optimizer step. The charts are on the HTML page beside the report: an image for
TensorBoard would need a plotting package and about two CPU-seconds of the run's time per image.
"""
from __future__ import annotations

from typing import Any

from prenet_callbacks.outputs.render import render_text
from prenet_callbacks.outputs.terminal import LOG_WIDTH
from prenet_callbacks.report import Report

STAGES = {"first": "first prediction", "end": "end of the run"}
TEXT_TAG = "prenet/report"


def publish(report: Report, experiment: Any, *, step: int, stage: str) -> None:
    """Add the panel (text, with its hardware table when the report has targets) to `experiment` at `step`.

    Raises:
        ValueError: `stage` is not ``"first"`` or ``"end"``, or `experiment` has no ``add_text``.
    """
    if stage not in STAGES:
        raise ValueError(f"stage={stage!r} is not one of {sorted(STAGES)}")
    if not callable(getattr(experiment, "add_text", None)):
        raise ValueError(f"experiment={type(experiment).__name__} has no add_text; pass a TensorBoard SummaryWriter "
                         "(e.g. TensorBoardLogger.experiment)")
    panel = render_text(report, width=LOG_WIDTH, live=stage == "first")
    # TensorBoard renders text as Markdown: indenting every line keeps the panel a monospace block.
    body = "\n".join("    " + line for line in panel.rstrip("\n").splitlines())
    experiment.add_text(TEXT_TAG, f"**PreNeT, {STAGES[stage]}** (optimizer step {step:,})\n\n{body}", global_step=step)
