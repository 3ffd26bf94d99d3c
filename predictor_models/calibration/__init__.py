"""Calibrating the shipped predictor on one GPU from a few hundred measured ops, in seconds.

    from predictor_models.calibration import calibrate_rows
    predictor = calibrate_rows("my_rows", out="my_predictor")    # rows from `prenet collect --out my_rows`
    # PreNeTCallback(predictor="my_predictor"), prenet estimate ... --predictor my_predictor

The correction (`correction`) is per op group on that device only; everything else is the shipped
predictor's. See docs/calibration.md.
"""
from __future__ import annotations

from .api import calibrate_report, calibrate_rows, save_calibration
from .fit import CalibrationError, calibrate_samples
from .model import CalibratedPredictor

__all__ = ["CalibratedPredictor", "CalibrationError", "calibrate_report", "calibrate_rows", "calibrate_samples",
           "save_calibration"]
