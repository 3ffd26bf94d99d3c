"""`prenet evaluate`: leave-one-GPU-out evaluation of the predictor vs the PreNeT baseline (delegates to `predictor_models.evaluate`)."""
from __future__ import annotations

from typing import Any

from prenet_callbacks.cli.delegate import register_delegate


def register(subparsers: Any) -> None:
    register_delegate(subparsers, "evaluate", "evaluate", "leave-one-GPU-out evaluation of the predictor vs the PreNeT baseline",
                      needs=("sklearn", "train"))   # scikit-learn fits the MLPs
