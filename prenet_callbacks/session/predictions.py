"""A fit's predictions: each one added to the report's history, the first projected onto other hardware.

The session decides when to predict (its schedule) and how (`eta.predict_fit`, through the
``predict`` callable it passes); `Predictions` records the result, projects the first one and hands
every one to the outputs (the report on disk; logger metrics go on their own rhythm, `latest`).

A refinement (a new prediction, the report's ``measured`` block brought up to date, the report saved when its
interval has passed) comes every ``refine_every_n_steps`` optimizer steps while refinements cost at most
`REFINEMENT_SHARE` of the run: the latest one's own cost against the time since it (`allows_refinement`). A
refinement costs 1-5 ms on a CPU host, more with a report write; every 50 steps of a 9-ms step that was ~0.5%
of the run. Logged metrics between refinements count the latest prediction's ETA down to now.
"""
from __future__ import annotations

import math

from typing import Any, Callable

from prenet_callbacks.forecast.eta import Prediction
from prenet_callbacks.report import Report
from prenet_callbacks.report_parts import Prediction as PredictionEntry
from prenet_callbacks.session.config import SessionConfig
from prenet_callbacks.outputs.session_outputs import SessionOutputs

# Refinements' own cost stays within this share of the run's time (`Predictions.allows_refinement`).
REFINEMENT_SHARE = 0.001


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
        self.new_fit()

    def new_fit(self) -> None:
        self.first_made = False
        self.first_entry: dict[str, Any] | None = None  # this fit's first prediction (history may thin it)
        self.last_step = -1          # the optimizer step of the latest prediction
        self.latest: Prediction | None = None
        self.refined_at: float | None = None   # session time when the latest refinement ended
        self.refinement_cost_s = 0.0           # what it cost (session time)

    def allows_refinement(self, now: float) -> bool:
        """Whether a refinement at session time ``now`` keeps refinements within `REFINEMENT_SHARE` of the run:
        the latest one's cost is at most that share of the time since it ended."""
        return self.refined_at is None or self.refinement_cost_s <= REFINEMENT_SHARE * (now - self.refined_at)

    def refinement_allowed_at(self) -> float:
        """The session time from which `allows_refinement` holds."""
        if self.refined_at is None:
            return -math.inf
        return self.refined_at + self.refinement_cost_s / REFINEMENT_SHARE

    def refined(self, started: float, ended: float) -> None:
        """A refinement ran from ``started`` to ``ended`` (session time): the next one waits on its cost."""
        self.refined_at, self.refinement_cost_s = ended, max(0.0, ended - started)

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
                from prenet_callbacks.projection.pricing.predictor_source import pricing_scope

                # the second projection reads the first one's op times back
                with pricing_scope(self.config.predictor):
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
