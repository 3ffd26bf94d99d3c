"""Checks of a prediction on its own figures, for tests of real fits: a shared machine's pace is no test's to judge
(how close an ETA comes to the wall time is measured by `benchmarks/eta_accuracy.py` and `hf_eta_accuracy.py`)."""
from __future__ import annotations

from typing import Any


def assert_plans_what_is_left(prediction: dict[str, Any], total_batches: int) -> None:
    """The prediction's ETA is the batches left of ``total_batches`` at the batch time it measured, plus at most what
    its breakdown holds besides training steps (validation, checkpoints, epoch ends): not a whole run again, nor the
    batches done before it."""
    left = (total_batches - prediction["at_batch"]) * prediction["rates"]["batch_s"]
    besides = sum(v for k, v in prediction["breakdown"].items() if k not in ("train_s", "setup_s"))
    assert 0.95 * left <= prediction["eta_s"] <= 1.05 * left + besides, prediction
