"""The op-time predictor the projection uses: the shipped one, or a documented stand-in.

Until a trained artifact is installed (``predictor_models/pretrained/predictor.json``), the stand-in
is the same `Predictor` with no trained classes: every op is its physical bound (max of compute and
memory time plus launch latency) divided by the default utilisation (0.5), with the default band.
"""
from __future__ import annotations

import contextlib
import os
from functools import lru_cache
from typing import Any

BOUND_ONLY_NOTE = ("no trained predictor installed: op times are physical bounds / 0.5 utilisation "
                   "(wider bands)")


@lru_cache(maxsize=1)
def default_predictor():
    """(predictor, note) where note is None for the trained predictor."""
    from predictor_models.predictor import Predictor, PredictorLoadError, load_predictor

    try:
        return load_predictor(), None
    except PredictorLoadError:
        return Predictor({}, {"version": "bound-only"}), BOUND_ONLY_NOTE


def load_predictor_option(value: Any, name: str = "predictor"):
    """A user's predictor choice: None (the shipped one), a `Predictor`, or the path of a
    ``predictor.json`` (or the folder holding it) written by ``prenet train`` or ``prenet calibrate``,
    loaded now.

    Raises ValueError naming the file and the fix when the path does not hold a usable predictor."""
    if value is None:
        return None
    from predictor_models.predictor import Predictor, PredictorLoadError, load_predictor

    if isinstance(value, Predictor):
        return value
    if isinstance(value, (str, os.PathLike)) and str(value).strip():
        try:
            return load_predictor(value)
        except PredictorLoadError as error:
            raise ValueError(f"{name}: {error}") from None
    raise ValueError(f"{name} must be a Predictor or the path of a predictor.json written by `prenet train` or "
                     f"`prenet calibrate` (or its folder), got {value!r}; pass e.g. {name}='my_predictor/'")


def pricing_scope(predictor=None):
    """A context in which the predictor (as `resolve_predictor` takes it) prices each (op, GPU) pair once
    (`Predictor.remembering`); a predictor without one, or one that cannot be loaded, gets no scope (whoever
    projects with it meets that error and reports it)."""
    try:
        resolved, _ = resolve_predictor(predictor)
    except Exception:  # noqa: BLE001 - the projection itself meets the same error and reports it
        return contextlib.nullcontext()
    remembering = getattr(resolved, "remembering", None)
    return remembering() if remembering is not None else contextlib.nullcontext()


def resolve_predictor(predictor=None):
    """(predictor, note): the given one (a `Predictor` or a path, see `load_predictor_option`; note
    None), else the default."""
    if predictor is not None:
        return load_predictor_option(predictor), None
    return default_predictor()
