"""The pretrained per-op time predictor: bound / learned utilisation, per op class.

    from predictor_models.predictor import load_predictor
    p = load_predictor()
    p.predict_matrix(ops, devices)   # seconds, (len(ops), len(devices))
"""
from __future__ import annotations

from .artifact import PredictorLoadError, load_predictor, save_predictor
from .model import Predictor

__all__ = ["Predictor", "PredictorLoadError", "load_predictor", "save_predictor"]
