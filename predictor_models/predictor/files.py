"""The predictor artifact's file names, formats and shipped folder: what the loader (`artifact`) and
a calibration's writer (`predictor_models.calibration.model`) must agree on, kept below both."""
from __future__ import annotations

from pathlib import Path

ARTIFACT_NAME = "predictor.json"
HELDOUT_NAME = "heldout_errors.json"
PRETRAINED_DIR = Path(__file__).resolve().parent.parent / "pretrained"
PREDICTOR_FORMAT = "prenet-predictor"
CALIBRATION_FORMAT = "prenet-calibration"   # a base predictor plus one device's correction (`calibration`)
