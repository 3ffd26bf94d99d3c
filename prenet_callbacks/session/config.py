"""What the user chose for a `PredictionSession`: plain data, importable without the session.

`prenet_callbacks.session.arguments` validates the integrations' arguments into a `SessionConfig`; keeping the
class here lets it do so without importing the session (and the session's imports).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class SessionConfig:
    """What the user chose. Validated by the integrations' constructors (`validate_session_config`)."""

    warmup_steps: int = 3
    profile_steps: int = 3
    timing_steps: int = 20
    # prenet/* metrics every this many optimizer steps; None: when the trainer logs (the integration calls
    # `PredictionSession.log_metrics` on its Trainer's rhythm: Lightning's log_every_n_steps, HF's logging_steps)
    metrics_every_n_steps: int | None = 50
    refine_every_n_steps: int = 50   # a new prediction this often (its own schedule, not the logging rhythm)
    report_path: Path | None = None
    targets: list[str] | None = None
    print_report: bool = True
    profile_layers: bool = True
    predictor: Any = None        # a loaded `Predictor` for the projection; None: the shipped one
    html: bool | None = None     # write the HTML page beside the report (False: never)
    batch_convention: str = "per_device"  # multi-GPU targets keep the per-device batch, or the global one
    provider: str | None = None  # price the target rows with this provider's listings (None: the cheapest)
    allocator_probe: bool = False  # trim the heap once to price the allocator's other state (changes the process)

    @property
    def projects(self) -> bool:
        """Whether the run is projected onto other hardware (None: the documented default set; []: none)."""
        return self.targets != []
