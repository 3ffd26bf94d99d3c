"""Reading a report: its typed parts, and the facts every output words alike.

The panel (`render`), the HTML page (`html.view`, `html.facts`), TensorBoard (through the panel) and the
line printed when a run ends read the report through here, so that the fit/run word, the device's
label and the breakdown are decided once. Every function takes a `Report` or its plain dict
(``Report.to_dict()``, a parsed file); fields a report lacks come back as None or empty.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Union

from prenet_callbacks.report import Report
from prenet_callbacks.report_parts import Measured, Prediction, TargetRow

ReportLike = Union[Report, Mapping[str, Any]]

# The whole run's parts (they add up to the predicted total), with the page's and the panel's words;
# the panel says "setup" and "teardown" for runs without sanity checks and epochs (not Lightning).
BREAKDOWN_PARTS = (
    ("setup_s", "setup and sanity check"),
    ("train_s", "training steps"),
    ("validation_s", "validation"),
    ("checkpoints_s", "checkpoint saves"),
    ("epoch_boundaries_s", "epoch boundaries"),
)
OF_WHICH_PARTS = (("data_loading_s", "data loading"),)   # parts of train_s


def _data(report: ReportLike) -> Mapping[str, Any]:
    return report.to_dict() if isinstance(report, Report) else report


def number(value: Any) -> float | None:
    """A finite float, or None for missing, non-numeric, NaN and infinite values."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


# -- the parts -------------------------------------------------------------------------------------
def targets(report: ReportLike) -> list[TargetRow]:
    """The target rows, current device first (as the projection wrote them)."""
    return [TargetRow.from_dict(row) for row in _data(report).get("targets") or []]


def predictions(report: ReportLike) -> list[Prediction]:
    return [Prediction.from_dict(entry) for entry in _data(report).get("predictions") or []]


def latest_prediction(report: ReportLike) -> Prediction | None:
    entries = _data(report).get("predictions") or []
    return Prediction.from_dict(entries[-1]) if entries else None


def measured(report: ReportLike) -> Measured:
    return Measured.from_dict(dict(_data(report).get("measured") or {}))


# -- facts worded alike everywhere ---------------------------------------------------------------
def framework(report: ReportLike) -> str | None:
    data = _data(report)
    return (data.get("run") or {}).get("framework") or (data.get("current") or {}).get("framework")


def is_lightning(report: ReportLike) -> bool:
    """A Lightning run, or one that does not say (the callback's own reports before /2 runs named theirs)."""
    return framework(report) in (None, "lightning")


def run_word(report: ReportLike) -> str:
    """``fit`` for a Lightning report (a ``Trainer.fit`` call), ``run`` for the other frameworks."""
    return "fit" if is_lightning(report) else "run"


def device_label(report: ReportLike) -> str:
    """``CPU (AMD EPYC, 2 cores)``, ``H100-SXM5``, ``8x A100-SXM4-80GB``."""
    current = _data(report).get("current") or {}
    if current.get("device") == "cpu":
        cores = current.get("cpu_cores")
        name = f"CPU ({current.get('name') or 'unknown'}{f', {cores} cores' if cores else ''})"
    else:
        name = str(current.get("catalog_name") or current.get("name") or current.get("device") or "this device")
    devices = current.get("devices") or 1
    return f"{devices}x {name}" if devices > 1 else name


@dataclass(frozen=True)
class Breakdown:
    """Where a run's time goes: ``parts`` add up to ``total_s``; ``of_which`` are parts of ``train_s``.

    Keys are those of `BREAKDOWN_PARTS` / `OF_WHICH_PARTS`, in that order; parts the report lacks are left
    out. ``finished``: measured at the end of the run (else predicted).
    """

    parts: tuple[tuple[str, float], ...]
    of_which: tuple[tuple[str, float], ...]
    total_s: float | None
    finished: bool

    def rows(self) -> list[tuple[str, float, bool]]:
        """``(key, seconds, is_of_which)`` in reading order: each part, training's own parts after it."""
        out = []
        for key, seconds in self.parts:
            out.append((key, seconds, False))
            if key == "train_s":
                out += [(k, s, True) for k, s in self.of_which]
        return out


def _known(source: Mapping[str, Any] | None, names: tuple[tuple[str, str], ...]) -> tuple[tuple[str, float], ...]:
    source = source or {}
    values = ((key, number(source.get(key))) for key, _ in names)
    return tuple((key, seconds) for key, seconds in values if seconds is not None)


def prediction_breakdown(prediction: Prediction | None) -> Breakdown:
    """A prediction's breakdown (empty without one)."""
    if prediction is None:
        return Breakdown((), (), None, False)
    return Breakdown(_known(prediction.breakdown, BREAKDOWN_PARTS), _known(prediction.of_which, OF_WHICH_PARTS),
                     number(prediction.predicted_total_s), False)


def breakdown(report: ReportLike) -> Breakdown | None:
    """Where the time went (a finished run, measured) or goes (the latest prediction with a total), or None."""
    actual = _data(report).get("actual") or {}
    if actual.get("breakdown"):
        spent = actual["breakdown"]
        return Breakdown(_known(spent, BREAKDOWN_PARTS), _known(spent, OF_WHICH_PARTS), actual.get("fit_s"), True)
    latest = latest_prediction(report)
    if latest is not None and latest.breakdown and latest.predicted_total_s:
        return prediction_breakdown(latest)
    return None
