"""Calibrate from a rows folder or a run report and write the calibrated predictor folder."""
from __future__ import annotations

from pathlib import Path

from .card import calibration_card
from .fit import HOLDOUT, CalibrationError, calibrate_samples
from .inputs import Measured, read_report, read_rows_folder
from .model import CalibratedPredictor, sha256_of, write_calibration


def save_calibration(predictor: CalibratedPredictor, out: str | Path) -> Path:
    """Write the calibration folder (``predictor.json`` + ``MODEL_CARD.md``); only a calibration of
    the shipped predictor can be saved (loading checks it against the shipped one)."""
    from predictor_models.predictor.artifact import ARTIFACT_NAME, PRETRAINED_DIR

    if predictor.base_sha256 != sha256_of(PRETRAINED_DIR / ARTIFACT_NAME):
        raise CalibrationError("only a calibration of the shipped predictor can be saved (its folder names the base "
                               "by SHA-256); calibrate with base=None")
    card = calibration_card(predictor.summary, str(predictor.base.metadata.get("version")))
    return write_calibration(predictor, Path(out), card)


def _calibrate(measured: Measured, out: str | Path | None, holdout: float, seed: int) -> CalibratedPredictor:
    from predictor_models.paths import check_output_path

    if out is not None:
        check_output_path(out, "out", directory=True)
    predictor = calibrate_samples(measured.samples, measured.device, holdout=holdout, seed=seed,
                                  source=measured.source, where=measured.source)
    predictor.summary["unparsed_rows"] = measured.unparsed
    if out is not None:
        save_calibration(predictor, out)
    return predictor


def calibrate_rows(rows: str | Path, out: str | Path | None = None, *, device: str | None = None,
                   catalog: str | Path | None = None, holdout: float = HOLDOUT, seed: int = 0) -> CalibratedPredictor:
    """Calibrate the shipped predictor from a `prenet collect` folder (one GPU); write it to ``out`` if given.

    Raises `CalibrationError` (a ValueError) naming the file and the fix; nothing is written then."""
    return _calibrate(read_rows_folder(rows, device=device, catalog=catalog), out, holdout, seed)


def calibrate_report(report: str | Path, out: str | Path | None = None, *, device: str | None = None,
                     catalog: str | Path | None = None, holdout: float = HOLDOUT, seed: int = 0) -> CalibratedPredictor:
    """Calibrate from the per-op device times a GPU run's report kept (``measured.op_samples``)."""
    return _calibrate(read_report(report, device=device, catalog=catalog), out, holdout, seed)
