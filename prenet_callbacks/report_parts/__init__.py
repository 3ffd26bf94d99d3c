"""The report's parts as typed data: built by the writers, read back by the readers.

`TargetRow` (a row of ``targets``), `Prediction` (an entry of ``predictions``) and `Measured` (the
``measured`` block) are frozen dataclasses whose fields are the JSON keys, in the order the report
writes them; ``to_dict`` gives the report's dict and ``from_dict`` reads it back (keys a report lacks
stay left out, keys this version does not know are kept). The JSON Schema in ``prenet_callbacks/schemas/``
stays the outside contract; readers go through `prenet_callbacks.outputs.report_view`.
"""
from __future__ import annotations

from prenet_callbacks.report_parts.measured import Measured
from prenet_callbacks.report_parts.prediction import Prediction
from prenet_callbacks.report_parts.target_row import TargetRow, label_for

__all__ = ["Measured", "Prediction", "TargetRow", "label_for"]
