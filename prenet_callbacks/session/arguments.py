"""Validation of what users pass to the integrations, before any training starts.

Every error is a `ValueError` naming the argument, the value and the fix.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Sequence

from predictor_models.paths import check_output_path
from prenet_callbacks.session.config import SessionConfig


def _positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r} ({type(value).__name__}); "
                         f"pass e.g. {name}={max(minimum, 3)}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}; pass e.g. {name}={max(minimum, 3)}")
    return value


def metrics_interval(metrics_every_n_steps: Any, log_every_n_steps: Any, owner: str, *,
                     default: int | None) -> int | None:
    """The ``metrics_every_n_steps`` a user chose, from its old spelling too (``log_every_n_steps``, renamed: that
    is the Lightning Trainer's own setting), which warns (DeprecationWarning) and means the same. ``None`` is
    the default of the callbacks (a Trainer's own logging rhythm); a loop's default is a number."""
    if log_every_n_steps is not None:
        if metrics_every_n_steps not in (None, default):
            raise ValueError(f"{owner}: pass metrics_every_n_steps only (log_every_n_steps is its old name), got both")
        warnings.warn(f"{owner}(log_every_n_steps=...) is renamed metrics_every_n_steps (log_every_n_steps is the "
                      "Trainer's own setting); the old name still works for now", DeprecationWarning, stacklevel=3)
        metrics_every_n_steps = log_every_n_steps
    if metrics_every_n_steps is None and default is None:
        return None
    return _positive_int("metrics_every_n_steps", metrics_every_n_steps)


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r} ({type(value).__name__}); pass e.g. "
                         f"{name}=False")
    return value


def validate_report_path(value: Any, name: str = "report_path") -> Path | None:
    """A writable file path for the JSON report; not a directory, and not inside a file."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"{name} must be a file path (str or os.PathLike), got {type(value).__name__}")
    if str(value).strip() == "":
        raise ValueError(f"{name} is empty; pass a file path such as 'runs/prenet_report.json', or None for the default")
    if str(value).endswith(("/", os.sep)):
        raise ValueError(f"{name} {str(value)!r} is a directory; pass a file path such as "
                         f"'{Path(value) / 'prenet_report.json'}'")
    return check_output_path(value, name, directory=False, example="prenet_report.json")


def validate_targets(targets: Sequence[str] | None, name: str = "targets") -> list[str] | None:
    """Target hardware names, each parsed now with the projection's own parser (node forms such as
    '4x8 H100' and networks such as '2x8 H100 @ 200G' included; closest names on a typo)."""
    from prenet_callbacks.projection.targets import target_names

    return target_names(targets, name)


def validate_session_config(
    *,
    warmup_steps: int,
    profile_steps: int,
    timing_steps: int,
    metrics_every_n_steps: int | None,
    report_path: Any,
    targets: Sequence[str] | None,
    print_report: bool,
    profile_layers: bool,
    predictor: Any = None,
    html: bool | None = None,
    batch_convention: str = "per_device",
    provider: str | None = None,
    allocator_probe: bool = False,
) -> SessionConfig:
    """Check every argument and build the `SessionConfig`; raise `ValueError` on bad input."""
    return SessionConfig(
        warmup_steps=_positive_int("warmup_steps", warmup_steps, minimum=0),
        profile_steps=_positive_int("profile_steps", profile_steps),
        timing_steps=_positive_int("timing_steps", timing_steps),
        metrics_every_n_steps=None if metrics_every_n_steps is None else _positive_int("metrics_every_n_steps",
                                                                                       metrics_every_n_steps),
        report_path=validate_report_path(report_path),
        targets=validate_targets(targets),
        print_report=_flag("print_report", print_report),
        profile_layers=_flag("profile_layers", profile_layers),
        predictor=validate_predictor(predictor),
        html=validate_html(html),
        batch_convention=validate_batch_convention(batch_convention),
        provider=validate_provider(provider),
        allocator_probe=_flag("allocator_probe", allocator_probe),
    )


def validate_batch_convention(value: Any, name: str = "batch_convention") -> str:
    """"per_device" (each GPU keeps the measured batch) or "global" (the global batch is kept)."""
    from prenet_callbacks.projection import check_batch_convention

    check_batch_convention(value)
    return value


def validate_provider(value: Any, name: str = "provider") -> str | None:
    """None (the cheapest listing of each target) or a provider of the price table ("Lambda", any case):
    returned as the table spells it; unknown names raise ValueError listing the known providers."""
    from predictor_models.hardware.providers import check_provider

    return check_provider(value)


def validate_html(value: Any, name: str = "html") -> bool | None:
    """None or True (write the HTML page beside the report) or False (never)."""
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{name} must be True, False or None (write the page beside the report), got {value!r}")
    return value


def validate_predictor(value: Any, name: str = "predictor") -> Any:
    """None, a `Predictor`, or the path of a ``predictor.json`` from ``prenet train``: loaded now, so
    that a missing or corrupt file fails at construction, not in the middle of the run."""
    if value is None:
        return None
    from prenet_callbacks.projection.pricing.predictor_source import load_predictor_option

    return load_predictor_option(value, name)
