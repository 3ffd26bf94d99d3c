"""Whole-fit prediction on the current device from the run plan and what has been measured.

predicted total = elapsed
                + remaining batches x time per batch
                + remaining validation runs x time per validation run
                + remaining checkpoint files x time per save
                + remaining epoch boundaries (and the end of the fit) x boundary cost

Each term carries an uncertainty that shrinks once the thing has been measured rather than
estimated; the band is their quadrature sum at about two standard deviations.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from prenet_callbacks.estimators import RobustDuration
from prenet_callbacks.plan import RunPlan

# Relative uncertainty of a term, by how its per-event cost is known.
_UNCERTAINTY = {"measured": 0.10, "sanity": 0.30, "estimated": 0.60, "none": 0.0}
# Before a save has been timed: bytes of state over a modest disk write speed, plus fixed cost.
_ASSUMED_WRITE_BYTES_PER_S = 400e6
_ASSUMED_SAVE_OVERHEAD_S = 0.02
# Drift allowance of the training term (thermal, other tenants, data cache warming).
_TRAIN_DRIFT = 0.015


@dataclass
class RunMeasurements:
    """Durations measured so far in the fit (all in seconds)."""

    batch: RobustDuration = field(default_factory=RobustDuration)          # clean training batch intervals
    forward_per_batch: RobustDuration = field(default_factory=lambda: RobustDuration(64))
    data_per_batch: RobustDuration = field(default_factory=lambda: RobustDuration(64))
    validation_run: RobustDuration = field(default_factory=lambda: RobustDuration(64))
    checkpoint_file: RobustDuration = field(default_factory=lambda: RobustDuration(64))
    epoch_boundary: RobustDuration = field(default_factory=lambda: RobustDuration(64))
    sanity_val_per_batch: float | None = None
    sanity_val_fixed: float | None = None
    first_epoch_start_s: float | None = None     # on_train_epoch_start -> first batch start, epoch 0
    setup_s: float | None = None                 # fit start -> first training batch start
    state_bytes: float | None = None             # parameters + optimizer state, for unsaved checkpoints

    def state_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in self.__dict__.items():
            out[key] = value.state_dict() if isinstance(value, RobustDuration) else value
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            current = getattr(self, key, None)
            if isinstance(current, RobustDuration):
                current.load_state_dict(value)
            elif hasattr(self, key):
                setattr(self, key, value)


@dataclass
class Prediction:
    """One whole-fit prediction (a row of the report's ``predictions`` history)."""

    at_step: int
    at_batch: int
    elapsed_s: float
    predicted_total_s: float | None
    eta_s: float | None
    low_s: float | None
    high_s: float | None
    step_s: float | None                  # per optimizer step, as measured
    batches_per_s: float | None = None    # the rate, also for runs of unknown length
    breakdown: dict[str, float] = field(default_factory=dict)  # whole fit: train/validation/...
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in data.items()}


@dataclass
class _Term:
    seconds: float
    uncertainty: float  # absolute, one sigma


def _per_validation_run(plan: RunPlan, m: RunMeasurements) -> tuple[float, str]:
    if len(m.validation_run):
        return m.validation_run.mean or 0.0, "measured"
    if m.sanity_val_per_batch is not None:
        return (m.sanity_val_fixed or 0.0) + plan.val_batches * m.sanity_val_per_batch, "sanity"
    # No validation measured yet: a validation batch costs about a training forward.
    forward = m.forward_per_batch.mean or (m.batch.mean or 0.0) / 3
    return plan.val_batches * forward, "estimated"


def _per_checkpoint_file(m: RunMeasurements) -> tuple[float, str]:
    if len(m.checkpoint_file):
        return m.checkpoint_file.mean or 0.0, "measured"
    state = m.state_bytes or 0.0
    return _ASSUMED_SAVE_OVERHEAD_S + state / _ASSUMED_WRITE_BYTES_PER_S, "estimated"


def _per_epoch_boundary(m: RunMeasurements) -> tuple[float, str]:
    if len(m.epoch_boundary):
        return max(0.0, m.epoch_boundary.mean or 0.0), "measured"
    if m.first_epoch_start_s is not None:
        return m.first_epoch_start_s, "estimated"
    return 0.0, "none"


def predict_fit(
    plan: RunPlan,
    m: RunMeasurements,
    *,
    done_batches: int,
    done_steps: int,
    elapsed_s: float,
    fit_done: bool = False,
) -> Prediction:
    """Predict the wall time of the whole fit, standing at global batch ``done_batches``."""
    batch_s = m.batch.mean
    steps_per_batch = plan.steps_per_batch or (1.0 / max(1, plan.accumulate))
    step_s = batch_s / steps_per_batch if batch_s else None
    rate = 1.0 / batch_s if batch_s else None
    if batch_s is None:
        return Prediction(done_steps, done_batches, elapsed_s, None, None, None, None, None,
                          note="no clean training step measured yet")
    if not plan.known_length:
        return Prediction(done_steps, done_batches, elapsed_s, None, None, None, None, step_s, rate,
                          note=plan.unknown_reason or "the run's length is unknown")

    total, after = plan.total_batches, done_batches
    remaining_batches = max(0.0, total - after)
    val_s, val_how = _per_validation_run(plan, m)
    ckpt_s, ckpt_how = _per_checkpoint_file(m)
    edge_s, edge_how = _per_epoch_boundary(m)
    n_val = plan.validation_runs_between(after, total)
    n_ckpt = plan.checkpoint_saves_between(after, total)
    # the end of the fit costs about what an epoch boundary does (loaders shut down, hooks run)
    n_edges = plan.epoch_ends_between(after, total) + (0 if fit_done else 1)

    train_rel = 2 * m.batch.relative_stderr + _TRAIN_DRIFT
    terms = {
        "train": _Term(remaining_batches * batch_s, remaining_batches * batch_s * train_rel),
        "validation": _Term(n_val * val_s, n_val * val_s * _UNCERTAINTY[val_how]),
        "checkpoints": _Term(n_ckpt * ckpt_s, n_ckpt * ckpt_s * _UNCERTAINTY[ckpt_how]),
        "epoch_boundaries": _Term(n_edges * edge_s, n_edges * edge_s * _UNCERTAINTY[edge_how] + 0.05 * n_edges),
    }
    remaining = sum(term.seconds for term in terms.values())
    spread = 2 * math.sqrt(sum(term.uncertainty**2 for term in terms.values()))
    predicted = elapsed_s + remaining
    low, high = elapsed_s + max(0.0, remaining - spread), predicted + spread
    note = None
    if plan.max_time_s is not None and predicted > plan.max_time_s:
        predicted = low = high = plan.max_time_s
        note = "capped by Trainer(max_time)"

    # Where the whole fit's time goes (not only the remaining part).
    whole_batches = total - plan.start_batch
    data_fraction = (m.data_per_batch.mean or 0.0) / batch_s
    breakdown = {
        "setup": m.setup_s or 0.0,
        "train": whole_batches * batch_s,
        "data_loading": whole_batches * batch_s * min(1.0, data_fraction),
        "validation": plan.validation_runs_between(plan.start_batch, total) * val_s,
        "checkpoints": plan.checkpoint_saves_between(plan.start_batch, total) * ckpt_s,
        "epoch_boundaries": (plan.epoch_ends_between(plan.start_batch, total) + 1) * edge_s,
    }
    return Prediction(
        at_step=done_steps,
        at_batch=done_batches,
        elapsed_s=elapsed_s,
        predicted_total_s=predicted,
        eta_s=max(0.0, predicted - elapsed_s),
        low_s=low,
        high_s=high,
        step_s=step_s,
        batches_per_s=rate,
        breakdown={k: round(v, 3) for k, v in breakdown.items()},
        note=note,
    )
