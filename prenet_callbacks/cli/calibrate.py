"""`prenet calibrate`: fit the shipped predictor to one GPU's measured ops (delegates to `predictor_models.calibrate`)."""
from __future__ import annotations

from typing import Any

from prenet_callbacks.cli.delegate import register_delegate


def register(subparsers: Any) -> None:
    register_delegate(subparsers, "calibrate", "calibrate", "calibrate the shipped predictor on one GPU's measured ops")
