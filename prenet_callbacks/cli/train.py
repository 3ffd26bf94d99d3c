"""`prenet train`: train the per-op predictor from measurements (delegates to `predictor_models.train`)."""
from __future__ import annotations

from typing import Any

from prenet_callbacks.cli.delegate import register_delegate


def register(subparsers: Any) -> None:
    register_delegate(subparsers, "train", "train", "train the per-op predictor from measurements",
                      needs=("sklearn", "train"))   # scikit-learn fits the MLPs
