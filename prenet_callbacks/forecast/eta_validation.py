"""What one validation run will cost before one has been measured, and how sure that is.

Up to four candidate estimates (the sanity check as timed and with its page faults taken off, the
model's forward replayed in eval mode, the training forward scaled to the eval batch), one chosen by a
rule scored on recorded fits (`benchmarks/validation_rules.py`), and a band wide enough to reach the
others. Used by `eta.predict_fit` once a prediction is made; nothing here runs per batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prenet_callbacks.forecast.plan import RunPlan

# `eta.RunMeasurements`: eta imports this module, so the type is named, not imported (no import cycle)
RunMeasurements = Any

# Relative uncertainty of a term, by how its per-event cost is known. A validation run from the sanity
# check: its one or two timed batches are cold (worst +28% / -6% of the warm run on the nine fits of
# `benchmarks/validation_rules.py`); from the training forward alone: that forward also records autograd
# and runs train-mode layers, and eval kernels can differ (+58% and more there), so the band reaches far down.
UNCERTAINTY = {"measured": 0.10, "warm": 0.50, "sanity": 0.15, "estimated": 0.60, "none": 0.0}
# When the estimates of a validation run disagree by more than this factor, the report says so.
CROSS_CHECK_RATIO = 1.5


@dataclass
class ValidationEstimate:
    per_run_s: float
    how: str                      # a `validation_source`: measured, sanity, warm, estimated
    basis: str                    # which estimate, and why, in words
    low_s: float                  # the candidate estimates' range, which the band covers
    high_s: float


def validation_estimate(plan: RunPlan, m: RunMeasurements, batch_s: float) -> ValidationEstimate:
    """Cost of one validation run, how it is known, and the range of what else it could be.

    Before one has been measured there are up to three estimates. The sanity check's batches as timed
    run the real validation step at the real eval batch size, but cold (first calls, and on a CPU
    first-touch page faults): high. The model's forward replayed in eval mode without autograd on a
    training batch (`eval_probe`), scaled per sample to the eval batch size, plus what the training
    forward spends outside the model's call: warm, but at another batch size and without the
    validation loop's own work: low on CNNs at 2-4x the training batch (-22% to -26%), high on small
    MLPs. Where both exist the smaller is used: a cold sanity check has no upper bound (first calls,
    lazy initialisation, a neighbour at the start: +118% on one loaded run), the replay's errors are
    bounded; across 18 validation fits of two runs the smaller had the best worst case per run at the
    run's pace (30%, against 57% for their geometric mean, 47% for the rule before it; medians 13%,
    9%, 14%: `benchmarks/results/validation_rules.json`). Where one exists, that one (the replay before
    the training forward, which also records autograd and runs train-mode layers: 1.3-3x an evaluation
    forward on a CPU). The band reaches every candidate, the page-fault-corrected sanity check and
    the training forward included (see `validation_uncertainty`).
    """
    if len(m.validation_run):
        mean = m.validation_run.mean or 0.0
        runs = m.validation_run.count
        return ValidationEstimate(mean, "measured", f"measured ({runs} run{'s' if runs != 1 else ''})", mean, mean)
    warm, sanity = _warm_validation_estimate(plan, m), _sanity_validation_estimate(plan, m)
    corrected = _sanity_validation_estimate(plan, m, corrected=True)
    replay = _replay_validation_estimate(plan, m)
    candidates = [v for v in (warm, sanity, corrected, replay) if v is not None]
    chosen = _chosen_estimate(m, warm, sanity, replay)
    if chosen is None:
        # Nothing measured: a validation batch costs about a training forward, a third of a batch.
        per_run = plan.val_batches * batch_s / 3
        return ValidationEstimate(per_run, "estimated", "nothing measured: a third of a training batch per batch",
                                   per_run, per_run)
    per_run, how, basis = chosen
    if corrected is not None and sanity is not None and corrected < 0.9 * sanity:
        basis += "; page faults in the sanity check may not recur"
    low, high = min(candidates), max(candidates)
    if high > CROSS_CHECK_RATIO * low:
        basis += f"; the estimates span {low:.3g}-{high:.3g} s a run and the band covers them"
    return ValidationEstimate(per_run, how, basis, low, high)


def _chosen_estimate(m: RunMeasurements, warm: float | None, sanity: float | None,
                     replay: float | None) -> tuple[float, str, str] | None:
    """The estimate `validation_estimate` uses (the smaller of the sanity check and the replay where both exist,
    else the one there is), how it is known and why in words; None when there is none."""
    if sanity is not None and replay is not None:
        batches = m.sanity_val_batches
        cold = f"the sanity check ({batches or '?'} cold batch{'es' if batches != 1 else ''} at the eval batch size)"
        warm_replay = f"the model's eval forward replayed warm ({_batch_ratio_words(m)})"
        chosen, other = (cold, warm_replay) if sanity <= replay else (warm_replay, cold)
        basis = f"{chosen}, the smaller of it and {other}"
        if max(sanity, replay) > CROSS_CHECK_RATIO * min(sanity, replay):
            basis += f" ({max(sanity, replay) / max(min(sanity, replay), 1e-9):.1f}x higher)"
        return min(sanity, replay), "sanity" if sanity <= replay else "warm", basis
    if sanity is not None and (warm is None or sanity <= warm):
        batches = m.sanity_val_batches
        basis = (f"sanity check ({batches} batch{'es' if batches != 1 else ''} at the eval batch size, as timed)"
                 if batches else "sanity check (as timed)")
        if warm is not None and warm > CROSS_CHECK_RATIO * sanity:
            basis += f"; the training forward x batch ratio was {warm / max(sanity, 1e-9):.1f}x higher"
        return sanity, "sanity", basis
    if replay is not None:
        basis = f"the model's eval forward replayed warm ({_batch_ratio_words(m)}); no sanity check to cross-check it"
        return replay, "warm", basis
    if warm is not None:
        basis = f"training forward x batch ratio ({_batch_ratio_words(m)})"
        if sanity is not None:
            if sanity >= 1.1 * warm:
                basis += f"; the sanity check was {sanity / max(warm, 1e-9):.1f}x higher"
        else:
            basis += "; no sanity check to cross-check it"
        return warm, "warm", basis
    return None


def _batch_ratio_words(m: RunMeasurements) -> str:
    if m.train_batch_size and m.val_batch_size:
        return f"eval batch {m.val_batch_size} / training batch {m.train_batch_size}"
    return "eval batch size unknown, taken as the training batch's"


def per_validation_run(plan: RunPlan, m: RunMeasurements, batch_s: float) -> tuple[float, str]:
    """Cost of one validation run and how it is known (see `validation_estimate`)."""
    estimate = validation_estimate(plan, m, batch_s)
    return estimate.per_run_s, estimate.how


def _warm_validation_estimate(plan: RunPlan, m: RunMeasurements) -> float | None:
    forward = m.forward_per_batch.mean
    if forward is None or plan.val_batches <= 0:
        return None
    scale = 1.0
    if m.train_batch_size and m.val_batch_size:
        scale = m.val_batch_size / m.train_batch_size
    data = (m.data_per_batch.mean or 0.0) * scale
    fixed = m.sanity_val_fixed or 0.0
    eval_share = 1.0 if m.eval_forward_share is None else m.eval_forward_share
    return fixed + plan.val_batches * (forward * eval_share * scale + data)


def _replay_validation_estimate(plan: RunPlan, m: RunMeasurements) -> float | None:
    """The model's eval-mode forward (`eval_probe`) per sample at the eval batch size, what the training
    forward spends outside the model's call (the framework's step, the loss) and the data wait."""
    if m.eval_forward_s is None or plan.val_batches <= 0:
        return None
    scale = m.val_batch_size / m.train_batch_size if m.train_batch_size and m.val_batch_size else 1.0
    outside = 0.0
    if m.model_call.mean is not None and m.forward_per_batch.mean is not None:
        outside = max(0.0, m.forward_per_batch.mean - m.model_call.mean)
    data = (m.data_per_batch.mean or 0.0) * scale
    return (m.sanity_val_fixed or 0.0) + plan.val_batches * (m.eval_forward_s * scale + outside + data)


def _sanity_validation_estimate(plan: RunPlan, m: RunMeasurements, *, corrected: bool = False) -> float | None:
    """The sanity check's batches at the run's count: as timed, or with their page faults' cost taken off."""
    per_batch = m.sanity_val_per_batch if corrected or m.sanity_val_raw_per_batch is None else m.sanity_val_raw_per_batch
    if per_batch is None:
        return None
    return (m.sanity_val_fixed or 0.0) + plan.val_batches * per_batch


def validation_uncertainty(plan: RunPlan, m: RunMeasurements, per_run: float, how: str,
                            estimate: ValidationEstimate | None = None) -> float:
    """Relative uncertainty (one standard deviation) of the validation term.

    The band is two of them: where the candidate estimates disagree, it is wide enough to reach each.
    """
    # the training forward alone is far less sure than when a sanity check cross-checks it
    rel = UNCERTAINTY["sanity" if how == "warm" and m.sanity_val_per_batch is not None else how]
    if estimate is not None and how in ("warm", "sanity") and per_run > 0:
        reach = max(per_run - estimate.low_s, estimate.high_s - per_run) / per_run
        rel = max(rel, reach / 2)
    return rel
