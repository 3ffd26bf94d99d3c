"""The op-time predictor the projection uses: the shipped one, or a documented stand-in.

Until a trained artifact is installed (``predictor_models/pretrained/predictor.json``), the stand-in
is the same `Predictor` with no trained classes: every op is its physical bound (max of compute and
memory time plus launch latency) divided by the default utilisation (0.5), with the default band.
"""
from __future__ import annotations

from functools import lru_cache

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


def resolve_predictor(predictor=None):
    """(predictor, note): the given one (note None), else the default."""
    if predictor is not None:
        return predictor, None
    return default_predictor()
