"""Fitting a calibration from one device's measured ops, and scoring it on rows held back from the fit."""
from __future__ import annotations

import datetime as _dt
from collections import Counter
from typing import Sequence

import numpy as np

from predictor_models.datasets.common import Sample
from predictor_models.predictor.devices import device_columns
from predictor_models.predictor.expand import expand
from predictor_models.predictor.model import Predictor
from predictor_models.predictor.optable import op_columns

from .correction import fit_correction
from .model import CalibratedPredictor
from .select import group_keys, hold_back

HOLDOUT = 0.25
MIN_ROWS = 12     # fewer usable rows than this: no calibration (collect --quick measures ~110)
SEED = 0


class CalibrationError(ValueError):
    """The rows cannot calibrate the predictor; the message names the input and the fix."""


def usable_rows(samples: Sequence[Sample], base: Predictor) -> tuple[list[Sample], Counter]:
    """Samples the correction can learn from: a class the base models directly (proxied classes and
    convolution backward, which expand into several ops, are left out), positive time."""
    kept, dropped = [], Counter()
    for s in samples:
        parts = expand(s.op, frozenset(base.models))
        if s.op.op_class not in base.models or parts is None or len(parts) != 1 or parts[0][0] is not s.op:
            dropped[f"{s.op.op_class}: not a directly modelled op (proxied or unmodelled)"] += 1
        elif not s.seconds > 0:
            dropped["non-positive time"] += 1
        else:
            kept.append(s)
    return kept, dropped


def _mape(pred: np.ndarray, true: np.ndarray) -> float:
    return float(np.mean(np.abs(pred / true - 1.0)))


def calibrate_samples(samples: Sequence[Sample], device, *, base: Predictor | None = None, base_sha256: str | None = None,
                      holdout: float = HOLDOUT, seed: int = SEED, source: str = "",
                      where: str = "the rows") -> CalibratedPredictor:
    """A `CalibratedPredictor` for ``device`` (a catalog `Accelerator`) from samples measured on it.

    ``holdout`` of the rows (spread over op groups and sizes) are kept out of the fit and scored
    before and after; the summary records it. ``base`` None is the shipped predictor."""
    from threadpoolctl import threadpool_limits

    from predictor_models.predictor.artifact import ARTIFACT_NAME, PRETRAINED_DIR, load_predictor

    from .model import sha256_of

    if base is None:
        base, base_sha256 = load_predictor(), sha256_of(PRETRAINED_DIR / ARTIFACT_NAME)
    if not 0 <= holdout < 1:
        raise CalibrationError(f"holdout must be in [0, 1), got {holdout!r}; pass e.g. 0.25")
    rows, dropped = usable_rows(samples, base)
    if len(rows) < MIN_ROWS:
        raise CalibrationError(f"{where}: {len(rows)} usable rows on {device.name} (need at least {MIN_ROWS}; "
                               f"left out: {dict(dropped) or 'none'}); measure more with `prenet collect --out DIR`")
    ops = [s.op for s in rows]
    measured = np.array([s.seconds for s in rows])
    predicted = base.predict_seconds(ops, device)
    bound = base.bound_seconds(ops, device)
    cols = op_columns(ops)
    fit_rows, held = hold_back(group_keys(cols), np.log(bound), holdout, seed=seed)
    with threadpool_limits(1):   # small dense algebra: threads only contend (and the result is the same)
        correction = fit_correction(device.name, cols, device_columns([device]), predicted, measured, fit_rows)
    summary = {
        "device": device.name, "detected": bool(getattr(device, "detected", False)), "source": source,
        "rows": len(samples), "rows_used": len(rows), "rows_fit": int(fit_rows.size), "rows_heldback": int(held.size),
        "left_out": dict(dropped),
        "classes": {cls: {"rows": fit.rows, "offset": round(fit.offset, 4), "kernel_rows": int(fit.alpha.size)}
                    for cls, fit in sorted(correction.fits.items())},
        "created": _dt.date.today().isoformat(), "heldback": {},
    }
    calibrated = CalibratedPredictor(base, correction, summary, base_sha256 or "")
    if held.size:
        after = calibrated.predict_seconds([ops[i] for i in held], device)
        classes = np.array([ops[i].op_class for i in held])
        for cls in ["all", *sorted(set(classes))]:
            mask = np.ones(held.size, bool) if cls == "all" else classes == cls
            summary["heldback"][cls] = {"n": int(mask.sum()), "mape_before": _mape(predicted[held][mask], measured[held][mask]),
                                        "mape_after": _mape(after[mask], measured[held][mask])}
    return calibrated
