"""One entry of the report's ``predictions`` history: a whole-run prediction and the fit it was made in.

`eta.Prediction` is what `eta.predict_fit` computes; `Prediction.from_eta` turns it into the entry the
report keeps (its fields, rounded, then ``fit``), and readers get entries back with `Prediction.from_dict`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from prenet_callbacks.report_parts._keyed import KeyedPart


@dataclass(frozen=True)
class Prediction(KeyedPart):
    """A history entry, fields in the order the report writes them (``docs/report-schema.md``)."""

    at_step: Optional[int] = None
    at_batch: Optional[int] = None
    elapsed_s: Optional[float] = None
    predicted_total_s: Optional[float] = None   # None: the run's length is unknown
    eta_s: Optional[float] = None
    low_s: Optional[float] = None
    high_s: Optional[float] = None
    step_s: Optional[float] = None
    batches_per_s: Optional[float] = None
    naive_total_s: Optional[float] = None
    steps: Optional[int] = None
    time_limited: bool = False
    breakdown: dict[str, float] = field(default_factory=dict)   # parts that add up to predicted_total_s
    of_which: dict[str, float] = field(default_factory=dict)    # parts of breakdown["train_s"]
    validation_source: Optional[str] = None
    validation_basis: Optional[str] = None
    rates: dict[str, Optional[float]] = field(default_factory=dict)
    note: Optional[str] = None
    band_parts: dict[str, float] = field(default_factory=dict)  # the band's half-width by source (shares)
    fit: Optional[int] = None                   # which fit call of the report made it (1, 2... after resumes)
    absent: frozenset[str] = frozenset()
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_eta(cls, prediction: Any, *, fit: int) -> "Prediction":
        """The history entry of an `eta.Prediction` made in fit number `fit` (rounded as it writes itself)."""
        data = prediction.to_dict()
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known}, fit=fit,
                   extra={k: v for k, v in data.items() if k not in known})

    @property
    def has_total(self) -> bool:
        """True when it predicts a whole-run time (False: only the step time, the length is unknown)."""
        return isinstance(self.predicted_total_s, (int, float)) and not isinstance(self.predicted_total_s, bool)
