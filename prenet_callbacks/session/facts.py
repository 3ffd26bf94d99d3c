"""What an adapter learns about the run as it goes: batch sizes, the optimizer, the model state's size.

The facts land in two places: the report's ``current`` block (which the projection reads) and the
`RunMeasurements` the prediction uses (a checkpoint's size, the batch sizes behind the validation
estimate). Adapters call these methods on the session's ``facts`` from a guarded hook (or through
``session.guard.call``).
"""
from __future__ import annotations

from typing import Any, Callable

from prenet_callbacks.forecast.eta import RunMeasurements
from prenet_callbacks.measure.profiling_window import ProfilingWindow
from prenet_callbacks.projection.ops.optimizer_ops import optimizer_settings
from prenet_callbacks.report import Report


class RunFacts:
    """Writes the facts an adapter learns into the report and the measurements.

    Args:
        report: the session's current report (a getter: a resume replaces the report object).
        measurements: the session's `RunMeasurements`.
        window: the profiling window, which keeps the memory account for its memory summary.
    """

    def __init__(self, report: Callable[[], Report], measurements: RunMeasurements, window: ProfilingWindow) -> None:
        self._report, self._measurements, self._window = report, measurements, window

    def set_state_bytes(self, state_bytes: float) -> None:
        """What a checkpoint holds, in bytes (when no memory account gives it)."""
        self._measurements.state_bytes = float(state_bytes)

    def set_memory_account(self, account: dict[str, Any]) -> None:
        """Per-device sizes of parameters, gradients and optimizer state (`memory_account.state_sizes`)."""
        self._window.memory_account = dict(account)
        # what a checkpoint holds: parameters and optimizer state
        self._measurements.state_bytes = float(account.get("params_bytes") or 0) + float(
            account.get("optimizer_bytes") or 0)

    def note_run_facts(self, **facts: Any) -> None:
        """Facts the projection needs that the adapter learns late (batch size, optimizer...)."""
        self._report().current.update({k: v for k, v in facts.items() if v is not None})
        if facts.get("batch_size"):
            self._measurements.train_batch_size = int(facts["batch_size"])

    def note_optimizer(self, optimizer: Any) -> None:
        """The run's optimizer: its kind and implementation (foreach/fused), which the projection carries over."""
        if optimizer is not None:
            self.note_run_facts(**optimizer_settings(optimizer))

    def note_validation_batch_size(self, size: int | None) -> None:
        """The validation batch size, for estimating a validation run before one is measured."""
        if size:
            self._measurements.val_batch_size = int(size)
