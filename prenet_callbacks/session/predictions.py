"""A fit's predictions: each one added to the report's history, the first projected onto other hardware.

The session decides when to predict (its schedule) and how (`eta.predict_fit`, through the
``predict`` callable it passes); `Predictions` records the result, projects the first one and hands
every one to the outputs (the report on disk; logger metrics go on their own rhythm, `latest`).
"""
from __future__ import annotations

from typing import Any, Callable

from prenet_callbacks.forecast.eta import Prediction
from prenet_callbacks.report import Report
from prenet_callbacks.report_parts import Prediction as PredictionEntry
from prenet_callbacks.session.config import SessionConfig
from prenet_callbacks.outputs.session_outputs import SessionOutputs


class Predictions:
    """This fit's prediction history. See the module docstring.

    Args:
        config: the user's choices (``targets``, ``predictor``, ``batch_convention``, ``provider``).
        outputs: where every prediction goes (metrics, the report on disk, the first one's panel).
    """

    def __init__(self, config: SessionConfig, outputs: SessionOutputs) -> None:
        self.config = config
        self.outputs = outputs
        self.first_made = False
        self.first_entry: dict[str, Any] | None = None  # this fit's first prediction (history may thin it)
        self.last_step = -1          # the optimizer step of the latest prediction
        self.latest: Prediction | None = None

    def new_fit(self) -> None:
        self.first_made = False
        self.first_entry = None
        self.last_step = -1
        self.latest = None

    def add(self, report: Report, predict: Callable[[], Prediction | None], *, at_step: int, first: bool,
            update_measured: Callable[[], None]) -> Prediction | None:
        """Predict now (None: nothing to predict from yet) and record it; the first is projected.

        ``update_measured`` brings the report's ``measured`` block up to date before the projection reads it.
        """
        prediction = predict()
        if prediction is None:
            return None
        report.add_prediction(self._entry(report, prediction))
        self.last_step = at_step
        update_measured()
        if first:
            self.first_made = True
            if self.config.projects:
                self.project(report, at_step)
                # projecting took time inside this run: predict again so that it counts, and
                # project again so that the table and the headline rest on the same prediction
                prediction = predict() or prediction
                report.predictions[-1] = self._entry(report, prediction)
                self.project(report, at_step)
            self.first_entry = report.predictions[-1]
        self.latest = prediction
        self.outputs.prediction(report, first=first)
        return prediction

    def project(self, report: Report, at_step: int) -> None:
        """Cross-hardware projection of the measured run onto the configured targets."""
        from prenet_callbacks import projection

        projection.project_report(report, self.config.targets, predictor=self.config.predictor,
                                  batch_convention=self.config.batch_convention, provider=self.config.provider)
        report.projection["at_step"] = at_step

    @staticmethod
    def _entry(report: Report, prediction: Prediction) -> dict[str, Any]:
        return PredictionEntry.from_eta(prediction, fit=report.fit_number or 1).to_dict()
