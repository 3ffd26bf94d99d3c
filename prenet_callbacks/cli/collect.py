"""`prenet collect`: measure single ops on this CUDA GPU for retraining (delegates to `predictor_models.collect`)."""
from __future__ import annotations

from typing import Any

from prenet_callbacks.cli.delegate import register_delegate


def register(subparsers: Any) -> None:
    register_delegate(subparsers, "collect", "collect", "measure single ops on this CUDA GPU for retraining")
