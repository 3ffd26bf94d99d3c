"""The predictor artifact: one JSON file (no code is executed on load) plus optional held-out errors.

A ``predictor.json`` may also hold a calibration (format ``prenet-calibration``, see
`predictor_models.calibration`): the shipped predictor plus one device's correction.

Layout: ``{"format": "prenet-predictor", "format_version": 3, "metadata": {...},
"default_utilisation": u, "launch_s": s, "classes": {op_class: {"features": [...], "members": [mlp...]}},
"networks": [{"classes": [...], "modes": [...], "inputs": kind, "floor_s": s, "mono_features": [...],
"free_features": [...], "members": [monotone network...]}]}`` (version 2 files, without networks, still load; a
network without ``inputs`` has the tiled-kernel inputs and no floor).
``heldout_errors.json`` beside it (written by ``evaluate --update-card``) holds per-class MAPE.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from .bound import LAUNCH_S
from .features import FEATURES
from .files import ARTIFACT_NAME, CALIBRATION_FORMAT, HELDOUT_NAME, PREDICTOR_FORMAT, PRETRAINED_DIR
from .kernel_features import INPUTS
from .mlp import from_json, to_json
from .model import KernelNetwork, Predictor
from .mono import MonoNet

FORMAT = PREDICTOR_FORMAT
FORMAT_VERSION = 3
READS = (2, 3)
RETRAIN_HINT = "python -m predictor_models.train --out {folder}"


class PredictorLoadError(RuntimeError):
    """The artifact is missing, unreadable or not a predictor this code understands."""


def save_predictor(predictor: Predictor, out_dir: str | Path) -> Path:
    """Write ``predictor.json`` into ``out_dir`` (deterministic: sorted keys, fixed float repr)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "metadata": predictor.metadata,
        "default_utilisation": predictor.default_utilisation,
        "launch_s": LAUNCH_S,
        "classes": {
            cls: {"features": FEATURES[cls][1], "members": [to_json(m) for m in members]}
            for cls, members in sorted(predictor.models.items())
        },
        "networks": [{"classes": list(net.classes), "modes": list(net.modes), "inputs": net.inputs,
                      "floor_s": net.floor_s, "mono_features": list(INPUTS[net.inputs][1]),
                      "free_features": list(INPUTS[net.inputs][2]), "members": [m.to_json() for m in net.members]}
                     for net in predictor.networks],
    }
    path = out / ARTIFACT_NAME
    path.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False))
    return path


def _fail(path: Path, what: str) -> PredictorLoadError:
    folder = "predictor_models/pretrained" if path.parent == PRETRAINED_DIR else str(path.parent)
    return PredictorLoadError(f"predictor artifact {path}: {what}. Rebuild it with: {RETRAIN_HINT.format(folder=folder)}")


def load_predictor(path: str | Path | None = None) -> Predictor:
    """Load a predictor (default: the shipped one, cached); a file or a folder holding ``predictor.json``."""
    target = Path(path) if path is not None else PRETRAINED_DIR
    if target.is_dir() or target.suffix != ".json":
        target = target / ARTIFACT_NAME
    return _load_cached(str(target.resolve()), _mtime(target))


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return -1.0


@lru_cache(maxsize=8)
def _load_cached(path_text: str, _mtime_key: float) -> Predictor:
    path = Path(path_text)
    if not path.is_file():
        raise _fail(path, "not found")
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _fail(path, f"unreadable or not JSON ({error})") from error
    if isinstance(doc, dict) and doc.get("format") == CALIBRATION_FORMAT:
        return _load_calibration(path, doc)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise _fail(path, "not a prenet predictor file")
    if doc.get("format_version") not in READS:
        raise _fail(path, f"format version {doc.get('format_version')!r}, this code reads {', '.join(map(str, READS))}")
    if abs(float(doc.get("launch_s", -1)) - LAUNCH_S) > 1e-12:
        raise _fail(path, "trained with a different launch latency than this code uses")
    models: dict[str, list[dict]] = {}
    try:
        for cls, entry in doc["classes"].items():
            if cls not in FEATURES:
                raise ValueError(f"unknown op class {cls!r}")
            if list(entry["features"]) != FEATURES[cls][1]:
                raise ValueError(f"{cls}: features differ from this code's ({entry['features']})")
            members = [from_json(m) for m in entry["members"]]
            for m in members:
                if m["mean"].shape[0] != len(FEATURES[cls][1]):
                    raise ValueError(f"{cls}: model width does not match its features")
            if not members:
                raise ValueError(f"{cls}: no members")
            models[cls] = members
        heldout = _read_heldout(path.parent / HELDOUT_NAME)
        networks = [_network(entry) for entry in doc.get("networks", [])]
        return Predictor(models, doc.get("metadata", {}), heldout, float(doc["default_utilisation"]), networks)
    except (KeyError, TypeError, ValueError) as error:
        raise _fail(path, f"corrupt ({error})") from error


def _network(entry: dict) -> KernelNetwork:
    """A stored network, refused unless its inputs are this code's and its weights keep their signs."""
    inputs = entry.get("inputs", "tiled")
    if inputs not in INPUTS:
        raise ValueError(f"a kernel network's kind of inputs {inputs!r} is not this code's ({', '.join(INPUTS)})")
    _, mono_names, free_names = INPUTS[inputs]
    if tuple(entry["mono_features"]) != mono_names or tuple(entry["free_features"]) != free_names:
        raise ValueError("a kernel network's inputs differ from this code's")
    members = tuple(MonoNet.from_json(m) for m in entry["members"])
    if not members or any(m.w1m.shape[0] != len(mono_names) or m.w1f.shape[0] != len(free_names) for m in members):
        raise ValueError("a kernel network's width does not match its inputs")
    floor_s = float(entry.get("floor_s", 0.0))
    if not floor_s >= 0.0:
        raise ValueError(f"a kernel network's floor {floor_s!r} is not a non-negative time")
    return KernelNetwork(tuple(entry["classes"]), tuple(entry["modes"]), members, inputs, floor_s)


def _load_calibration(path: Path, doc: dict) -> Predictor:
    """A calibration (`predictor_models.calibration`) on top of the shipped predictor."""
    from predictor_models.calibration.model import BaseMismatchError, calibrated_from_document

    base_path = PRETRAINED_DIR / ARTIFACT_NAME
    base = load_predictor()
    try:
        return calibrated_from_document(doc, path, base, base_path)
    except (KeyError, TypeError, ValueError) as error:
        text = str(error) if isinstance(error, BaseMismatchError) else f"corrupt calibration ({error})"
        raise PredictorLoadError(f"calibration {path}: {text}"
                                 + ("" if "recalibrate" in text else
                                    f"; recalibrate: prenet calibrate --rows DIR --out {path.parent}")) from None


def _read_heldout(path: Path) -> dict[str, float]:
    if not path.is_file():
        return {}
    doc = json.loads(path.read_text())
    return {str(k): float(v) for k, v in doc.get("by_class", {}).items()}
