"""All loaders by name, and `load_all` to gather them (missing sources are reported, not fatal)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from . import deepbench, justus, neusight, prenet_h200, vidur, xla_tables
from .common import LoadReport, Sample

SOURCES: dict[str, Callable[[str | Path], tuple[list[Sample], LoadReport]]] = {
    "neusight": neusight.load,
    "xla": xla_tables.load,
    "vidur": vidur.load,
    "justus": justus.load,
    "deepbench": deepbench.load,
    "prenet-h200": prenet_h200.load,
}
# Justus et al. is TensorFlow 1.x with session overhead on 2014-2017 GPUs; kept for the record
# but not in the default training set (see the model card). The project's own H200 op table
# ("prenet-h200") is also an evaluation set: loadable by name, not trained on by default.
DEFAULT_SOURCES: tuple[str, ...] = ("neusight", "xla", "vidur", "deepbench")


def load_all(data_dir: str | Path, sources: Sequence[str] = DEFAULT_SOURCES) -> tuple[list[Sample], list[LoadReport]]:
    """Load the named sources from ``data_dir``; a source whose files are absent is reported and skipped."""
    samples: list[Sample] = []
    reports: list[LoadReport] = []
    for name in sources:
        if name not in SOURCES:
            raise ValueError(f"unknown data source {name!r}; known: {', '.join(SOURCES)}")
        try:
            got, report = SOURCES[name](data_dir)
        except FileNotFoundError as error:
            report = LoadReport(name)
            report.notes.append(f"not loaded: {error}")
            got = []
        samples.extend(got)
        reports.append(report)
    return samples, reports
