"""`CalibratedPredictor`: a base predictor plus one device's correction, and its artifact.

The artifact is a ``predictor.json`` of its own format (``prenet-calibration``) that names its base
by SHA-256 instead of copying it: loading it loads the shipped predictor, checks that it is the one
the calibration was fitted on, and applies the correction on top. JSON only; nothing is executed.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from predictor_models.predictor.files import ARTIFACT_NAME, CALIBRATION_FORMAT
from predictor_models.predictor.model import Predictor

from .correction import Correction

FORMAT = CALIBRATION_FORMAT
FORMAT_VERSION = 1
RECALIBRATE = "prenet calibrate --rows DIR --out {folder} (or --from-report run.json)"


class CalibratedPredictor(Predictor):
    """The base predictor's times, corrected on the calibrated device only (other devices unchanged).

    ``summary`` is the calibration's record (device, rows, held-back errors before and after)."""

    def __init__(self, base: Predictor, correction: Correction, summary: dict, base_sha256: str) -> None:
        meta = base.metadata
        version = f"{meta.get('version', 'unknown')}+calibrated:{correction.device}"
        super().__init__(base.models, {**meta, "version": version, "calibration": summary}, base.heldout,
                         base.default_utilisation, base.networks)
        self.base = base
        self.correction = correction
        self.summary = summary
        self.base_sha256 = base_sha256
        self._device_key = correction.device.strip().lower()

    def _is_calibrated(self, name) -> bool:
        return name is not None and str(name).strip().lower() == self._device_key

    def adjusted_devices(self, names) -> np.ndarray:
        return np.array([self._is_calibrated(name) for name in names], dtype=bool)

    def adjust_times(self, cols, devs, times: np.ndarray, bound: np.ndarray) -> np.ndarray:
        for j in np.flatnonzero(self.adjusted_devices(devs.names)):
            times[:, j] = times[:, j] * np.exp(self.correction.log_ratio(cols, devs.take(np.array([j])), times[:, j]))
        return times

    def relative_error(self, op_class: str, device=None) -> float:
        """The held-back error on the calibrated device (after calibration) where measured for the
        class; the base's held-out error everywhere else."""
        name = getattr(device, "name", device)
        after = self.summary.get("heldback", {}).get(op_class, {}).get("mape_after")
        if self._is_calibrated(name) and after is not None:
            return float(after)
        return super().relative_error(op_class)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def calibration_document(predictor: CalibratedPredictor) -> dict:
    return {"format": FORMAT, "format_version": FORMAT_VERSION,
            "base": {"sha256": predictor.base_sha256, "version": predictor.base.metadata.get("version")},
            "device": predictor.correction.device,
            "fits": predictor.correction.to_json(),
            "metadata": predictor.summary}


def calibrated_from_document(doc: dict, path: Path, base: Predictor, base_path: Path) -> CalibratedPredictor:
    """Rebuild a calibrated predictor; raises ValueError (base mismatch, corrupt fields) naming the fix."""
    if doc.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"calibration format version {doc.get('format_version')!r}, this code reads "
                         f"{FORMAT_VERSION}; recalibrate: {RECALIBRATE.format(folder=path.parent)}")
    sha = sha256_of(base_path)
    want = doc["base"]
    if want.get("sha256") != sha:
        raise BaseMismatchError(
            f"it was calibrated on predictor {want.get('version')!r} (sha256 {str(want.get('sha256'))[:12]}), but the "
            f"shipped predictor is {base.metadata.get('version')!r} (sha256 {sha[:12]}); recalibrate with this "
            f"version: {RECALIBRATE.format(folder=path.parent)}")
    correction = Correction.from_json(str(doc["device"]), doc["fits"])
    return CalibratedPredictor(base, correction, dict(doc.get("metadata", {})), sha)


class BaseMismatchError(ValueError):
    """The calibration was fitted on another predictor than the one installed."""


def write_calibration(predictor: CalibratedPredictor, folder: Path, card: str) -> Path:
    """Write ``predictor.json`` and ``MODEL_CARD.md``; each file is written beside its final name and
    renamed into place."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {ARTIFACT_NAME: json.dumps(calibration_document(predictor), sort_keys=True, indent=1, allow_nan=False),
             "MODEL_CARD.md": card}
    for name, text in files.items():
        tmp = folder / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, folder / name)
    return folder / ARTIFACT_NAME
