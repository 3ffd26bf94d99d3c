"""Whole-run prediction on the current device from the run plan and what has been measured.

predicted total = elapsed
                + remaining batches x time per batch
                + remaining validation runs x time per validation run
                + remaining checkpoint files x time per save
                + remaining epoch boundaries (and the end of the run) x boundary cost

The breakdown is what each part has cost so far plus what it will cost, so its parts add up to the
total. Under a time limit the run ends at the first batch that crosses it: the prediction then
covers the steps that fit, and every part is computed for that work. Each term carries an
uncertainty that shrinks once the thing has been measured rather than estimated; the band is
their quadrature sum at about two standard deviations.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from prenet_callbacks.estimators import RobustDuration
from prenet_callbacks.plan import RunPlan

# Relative uncertainty of a term, by how its per-event cost is known. A validation run from the sanity
# check: its one or two timed batches are cold (worst +28% / -6% of the warm run on the nine fits of
# `benchmarks/validation_rules.py`); from the training forward alone: that forward also records autograd
# and runs train-mode layers, and eval kernels can differ (+58% and more there), so the band reaches far down.
_UNCERTAINTY = {"measured": 0.10, "warm": 0.50, "sanity": 0.15, "estimated": 0.60, "none": 0.0}
# Before a save has been timed: bytes of state over a modest disk write speed, plus fixed cost.
_ASSUMED_WRITE_BYTES_PER_S = 400e6
_ASSUMED_SAVE_OVERHEAD_S = 0.02
# Drift allowance of the remaining time, one standard deviation: the machine's pace over the rest of the
# run against the few steps measured (thermal, other tenants, data cache warming). A GPU's device-timed
# steps keep their pace; a host-timed run on a shared CPU does not: over the 21 ETA benchmark runs recorded
# before this allowance existed (Lightning, HF Trainer and loops on 2 shared cores, 2026-12-01/02) the
# run's pace moved by 0.2-46%, 9.5% at the median and 23% at the 90th percentile, which a band of two
# standard deviations covers.
_TRAIN_DRIFT = 0.015
_HOST_DRIFT = 0.115
# A forecast slowdown (`later_slowdown`) is uncertain by half, one standard deviation: the forecast sees
# only the entries dead when it is made (on the MLP benchmarks 55-80% of those dead by the end).
_SLOWDOWN_UNCERTAINTY = 0.5
# When the estimates of a validation run disagree by more than this factor, the report says so.
_CROSS_CHECK_RATIO = 1.5
# Validation this share of the run or more is named in the band's note until it is measured.
_LARGE_VALIDATION_SHARE = 0.15


class LaterSlowdown(Protocol):
    """A cost the measured steps do not show yet (`subnormals.SubnormalForecast`)."""

    def extra_s(self, from_step: float, to_step: float) -> float: ...

    def describe(self, from_step: float, to_step: float) -> str: ...


class AllocatorState(Protocol):
    """Steps that may start or stop re-faulting their memory (`heap_faults.HeapRisk`)."""

    def reach_s(self, batches: float) -> tuple[float, float]: ...

    def describe(self, batches: float, predicted_s: float) -> str | None: ...


@dataclass
class RunMeasurements:
    """Durations measured so far in the run (all in seconds)."""

    batch: RobustDuration = field(default_factory=RobustDuration)          # clean training batch intervals
    forward_per_batch: RobustDuration = field(default_factory=lambda: RobustDuration(64))
    data_per_batch: RobustDuration = field(default_factory=lambda: RobustDuration(64))
    validation_run: RobustDuration = field(default_factory=lambda: RobustDuration(64))
    checkpoint_file: RobustDuration = field(default_factory=lambda: RobustDuration(64))
    epoch_boundary: RobustDuration = field(default_factory=lambda: RobustDuration(64))
    sanity_val_per_batch: float | None = None
    sanity_val_fixed: float | None = None
    sanity_page_faults_s: float | None = None    # cold first-touch page faults taken off the sanity check
    sanity_val_raw_per_batch: float | None = None  # the same per batch as timed, faults and all
    sanity_val_batches: int | None = None
    first_epoch_start_s: float | None = None     # on_train_epoch_start -> first batch start, epoch 0
    setup_s: float | None = None                 # fit start -> first training batch start
    state_bytes: float | None = None             # parameters + optimizer state, for unsaved checkpoints
    train_batch_size: int | None = None
    val_batch_size: int | None = None
    eval_forward_share: float | None = None     # of the profiled forward, what eval mode still runs
    eval_forward_s: float | None = None         # the model's forward replayed in eval mode, no grad (`eval_probe`)
    eval_forward_note: str | None = None        # why it was not (declined or failed)
    model_call: RobustDuration = field(default_factory=lambda: RobustDuration(64))  # the training forward's model call
    host_timed: bool = False                    # steps timed on a (possibly shared) host clock, not a device's

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
class Spent:
    """Wall time this run has spent so far outside its training batches, by kind (seconds)."""

    setup_s: float = 0.0
    validation_s: float = 0.0
    checkpoints_s: float = 0.0
    epoch_boundaries_s: float = 0.0

    @property
    def outside_train_s(self) -> float:
        return self.setup_s + self.validation_s + self.checkpoints_s + self.epoch_boundaries_s


@dataclass
class Prediction:
    """One whole-run prediction (a row of the report's ``predictions`` history)."""

    at_step: int
    at_batch: int
    elapsed_s: float
    predicted_total_s: float | None
    eta_s: float | None
    low_s: float | None
    high_s: float | None
    step_s: float | None                  # per optimizer step, as measured
    batches_per_s: float | None = None    # the rate, also for runs of unknown length
    naive_total_s: float | None = None    # elapsed / fraction done: what a progress bar would say
    steps: int | None = None              # optimizer steps this prediction covers
    time_limited: bool = False
    breakdown: dict[str, float] = field(default_factory=dict)   # parts that add up to the total
    of_which: dict[str, float] = field(default_factory=dict)    # parts of `train_s`
    validation_source: str | None = None
    validation_basis: str | None = None   # which estimate of a validation run was used, and why
    rates: dict[str, float | None] = field(default_factory=dict)  # per-event costs it rests on
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: _rounded(v) for k, v in data.items()}


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


@dataclass
class _Rates:
    batch_s: float
    validation_s: float
    validation_how: str
    checkpoint_s: float
    checkpoint_how: str
    edge_s: float
    edge_how: str


@dataclass
class _ValidationEstimate:
    per_run_s: float
    how: str                      # a `validation_source`: measured, sanity, warm, estimated
    basis: str                    # which estimate, and why, in words
    low_s: float                  # the candidate estimates' range, which the band covers
    high_s: float


def _validation_estimate(plan: RunPlan, m: RunMeasurements, batch_s: float) -> _ValidationEstimate:
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
    the training forward included (see `_validation_uncertainty`).
    """
    if len(m.validation_run):
        mean = m.validation_run.mean or 0.0
        runs = m.validation_run.count
        return _ValidationEstimate(mean, "measured", f"measured ({runs} run{'s' if runs != 1 else ''})", mean, mean)
    warm, sanity = _warm_validation_estimate(plan, m), _sanity_validation_estimate(plan, m)
    corrected = _sanity_validation_estimate(plan, m, corrected=True)
    replay = _replay_validation_estimate(plan, m)
    candidates = [v for v in (warm, sanity, corrected, replay) if v is not None]
    if sanity is not None and replay is not None:
        batches = m.sanity_val_batches
        cold = f"the sanity check ({batches or '?'} cold batch{'es' if batches != 1 else ''} at the eval batch size)"
        warm_replay = f"the model's eval forward replayed warm ({_batch_ratio_words(m)})"
        chosen, other = (cold, warm_replay) if sanity <= replay else (warm_replay, cold)
        basis = f"{chosen}, the smaller of it and {other}"
        if max(sanity, replay) > _CROSS_CHECK_RATIO * min(sanity, replay):
            basis += f" ({max(sanity, replay) / max(min(sanity, replay), 1e-9):.1f}x higher)"
        per_run, how = min(sanity, replay), "sanity" if sanity <= replay else "warm"
    elif sanity is not None and (warm is None or sanity <= warm):
        batches = m.sanity_val_batches
        basis = (f"sanity check ({batches} batch{'es' if batches != 1 else ''} at the eval batch size, as timed)"
                 if batches else "sanity check (as timed)")
        if warm is not None and warm > _CROSS_CHECK_RATIO * sanity:
            basis += f"; the training forward x batch ratio was {warm / max(sanity, 1e-9):.1f}x higher"
        per_run, how = sanity, "sanity"
    elif replay is not None:
        basis = f"the model's eval forward replayed warm ({_batch_ratio_words(m)}); no sanity check to cross-check it"
        per_run, how = replay, "warm"
    elif warm is not None:
        basis = f"training forward x batch ratio ({_batch_ratio_words(m)})"
        if sanity is not None:
            if sanity >= 1.1 * warm:
                basis += f"; the sanity check was {sanity / max(warm, 1e-9):.1f}x higher"
        else:
            basis += "; no sanity check to cross-check it"
        per_run, how = warm, "warm"
    else:
        # Nothing measured: a validation batch costs about a training forward, a third of a batch.
        per_run = plan.val_batches * batch_s / 3
        return _ValidationEstimate(per_run, "estimated", "nothing measured: a third of a training batch per batch",
                                   per_run, per_run)
    if corrected is not None and sanity is not None and corrected < 0.9 * sanity:
        basis += "; page faults in the sanity check may not recur"
    low, high = min(candidates), max(candidates)
    if high > _CROSS_CHECK_RATIO * low:
        basis += f"; the estimates span {low:.3g}-{high:.3g} s a run and the band covers them"
    return _ValidationEstimate(per_run, how, basis, low, high)


def _batch_ratio_words(m: RunMeasurements) -> str:
    if m.train_batch_size and m.val_batch_size:
        return f"eval batch {m.val_batch_size} / training batch {m.train_batch_size}"
    return "eval batch size unknown, taken as the training batch's"


def _per_validation_run(plan: RunPlan, m: RunMeasurements, batch_s: float) -> tuple[float, str]:
    """Cost of one validation run and how it is known (see `_validation_estimate`)."""
    estimate = _validation_estimate(plan, m, batch_s)
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


def _validation_uncertainty(plan: RunPlan, m: RunMeasurements, per_run: float, how: str,
                            estimate: _ValidationEstimate | None = None) -> float:
    """Relative uncertainty (one standard deviation) of the validation term.

    The band is two of them: where the candidate estimates disagree, it is wide enough to reach each.
    """
    # the training forward alone is far less sure than when a sanity check cross-checks it
    rel = _UNCERTAINTY["sanity" if how == "warm" and m.sanity_val_per_batch is not None else how]
    if estimate is not None and how in ("warm", "sanity") and per_run > 0:
        reach = max(per_run - estimate.low_s, estimate.high_s - per_run) / per_run
        rel = max(rel, reach / 2)
    return rel


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


@dataclass
class _Remaining:
    batches: float
    validations: int
    checkpoints: int
    edges: int

    def seconds(self, r: _Rates) -> dict[str, float]:
        return {"train_s": self.batches * r.batch_s, "validation_s": self.validations * r.validation_s,
                "checkpoints_s": self.checkpoints * r.checkpoint_s, "epoch_boundaries_s": self.edges * r.edge_s}


def _remaining(plan: RunPlan, after: int, upto: float, *, fit_done: bool) -> _Remaining:
    # the end of the run costs about what an epoch boundary does (loaders shut down, hooks run)
    edges = plan.epoch_ends_between(after, upto) + (0 if fit_done else 1)
    return _Remaining(max(0.0, upto - after), plan.validation_runs_between(after, upto),
                      plan.checkpoint_saves_between(after, upto), edges)


def _end_under_limit(plan: RunPlan, rates: _Rates, after: int, budget_s: float) -> int:
    """The global batch at which a run with ``budget_s`` seconds left stops: the first batch whose
    end crosses the limit (the trainer checks its timer at batch ends), or the plan's last batch."""
    total = int(plan.total_batches)

    def cost(upto: int) -> float:
        return sum(_remaining(plan, after, upto, fit_done=True).seconds(rates).values())

    if cost(total) <= budget_s:
        return total
    lo, hi = after, total  # cost(lo) <= budget < cost(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cost(mid) <= budget_s:
            lo = mid
        else:
            hi = mid
    return hi


def predict_fit(
    plan: RunPlan,
    m: RunMeasurements,
    *,
    done_batches: int,
    done_steps: int,
    elapsed_s: float,
    spent: Spent | None = None,
    fit_done: bool = False,
    time_limit_start_s: float | None = None,
    later_slowdown: LaterSlowdown | None = None,
    allocator: AllocatorState | None = None,
) -> Prediction:
    """Predict the wall time of the whole run, standing at global batch ``done_batches``.

    ``spent`` is the time this run has spent so far by kind (the rest of ``elapsed_s`` went to
    training batches); ``time_limit_start_s`` is the elapsed time at which ``plan.max_time_s``
    started counting (Lightning's timer starts at ``on_train_start``). ``later_slowdown`` prices a
    slowdown the measured steps cannot show yet (`subnormals.SubnormalForecast`): its seconds over the
    remaining optimizer steps join the training time, with half of them as uncertainty. ``allocator``
    prices the remaining batches in the allocator's other state (`heap_faults`): the band reaches it,
    up and down apart, the way it reaches each candidate estimate of a validation run.
    """
    spent = spent or Spent()
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

    val = _validation_estimate(plan, m, batch_s)
    val_s, val_how = val.per_run_s, val.how
    ckpt_s, ckpt_how = _per_checkpoint_file(m)
    edge_s, edge_how = _per_epoch_boundary(m)
    rates = _Rates(batch_s, val_s, val_how, ckpt_s, ckpt_how, edge_s, edge_how)

    end = plan.total_batches
    time_limited = False
    if plan.max_time_s is not None:
        started = time_limit_start_s if time_limit_start_s is not None else spent.setup_s
        budget = started + plan.max_time_s - elapsed_s
        end = _end_under_limit(plan, rates, done_batches, max(0.0, budget))
        time_limited = end < plan.total_batches
    remaining = _remaining(plan, done_batches, end, fit_done=fit_done)
    parts = remaining.seconds(rates)
    slowdown_s, end_step = 0.0, plan.steps_done_after(int(end))
    if later_slowdown is not None:
        slowdown_s = later_slowdown.extra_s(done_steps, end_step)
        parts["train_s"] += slowdown_s

    train_rel = 2 * m.batch.relative_stderr + _TRAIN_DRIFT
    val_rel = _validation_uncertainty(plan, m, val_s, val_how, val)
    remaining_s = sum(parts.values())
    sigmas = (parts["train_s"] * train_rel, parts["validation_s"] * val_rel,
              parts["checkpoints_s"] * _UNCERTAINTY[ckpt_how],
              parts["epoch_boundaries_s"] * _UNCERTAINTY[edge_how] + 0.05 * remaining.edges,
              # a shared host's pace moves every remaining part alike
              remaining_s * (_HOST_DRIFT if m.host_timed else 0.0),
              # which dead entries stay dead, and which die later, is not known
              slowdown_s * _SLOWDOWN_UNCERTAINTY)
    variance = sum(s**2 for s in sigmas)
    # the allocator's other state: a second candidate for the remaining batches, reached at two sigmas
    down_s, up_s = allocator.reach_s(remaining.batches) if allocator is not None else (0.0, 0.0)
    spread_down, spread_up = (2 * math.sqrt(variance + (reach / 2) ** 2) for reach in (down_s, up_s))
    predicted = elapsed_s + remaining_s

    spent_train = max(0.0, elapsed_s - spent.outside_train_s)
    breakdown = {
        "setup_s": spent.setup_s,
        "train_s": spent_train + parts["train_s"],
        "validation_s": spent.validation_s + parts["validation_s"],
        "checkpoints_s": spent.checkpoints_s + parts["checkpoints_s"],
        "epoch_boundaries_s": spent.epoch_boundaries_s + parts["epoch_boundaries_s"],
    }
    fit_batches = max(0.0, end - plan.start_batch)
    data_fraction = min(1.0, (m.data_per_batch.mean or 0.0) / batch_s)
    done_fraction = (done_batches - plan.start_batch) / max(1.0, plan.total_batches - plan.start_batch)
    notes = []
    if time_limited:
        notes.append(f"capped by the time limit ({plan.max_time_s:.0f} s): "
                     f"{end_step:,} of {int(plan.total_steps):,} steps fit")
    if later_slowdown is not None and slowdown_s > 0.01 * predicted:
        notes.append(later_slowdown.describe(done_steps, end_step))
    allocator_note = allocator.describe(remaining.batches, predicted) if allocator is not None else None
    if allocator_note:
        notes.append(allocator_note)
    if val_how != "measured" and parts["validation_s"] > _LARGE_VALIDATION_SHARE * predicted:
        notes.append(f"validation not measured yet ({parts['validation_s'] / predicted:.0%} of the run), "
                     f"estimated from: {val.basis}")
    return Prediction(
        at_step=done_steps,
        at_batch=done_batches,
        elapsed_s=elapsed_s,
        predicted_total_s=predicted,
        eta_s=remaining_s,
        low_s=elapsed_s + max(0.0, remaining_s - spread_down),
        high_s=predicted + spread_up,
        step_s=step_s,
        batches_per_s=rate,
        naive_total_s=elapsed_s / done_fraction if done_fraction > 0 else None,
        steps=int(end_step),
        time_limited=time_limited,
        breakdown={k: round(v, 3) for k, v in breakdown.items()},
        of_which={"data_loading_s": round(fit_batches * batch_s * data_fraction, 3),
                  **({"later_slowdown_s": round(slowdown_s, 3)} if slowdown_s else {})},
        validation_source=val_how if plan.val_batches > 0 else "none",
        validation_basis=val.basis if plan.val_batches > 0 else None,
        rates={"batch_s": batch_s, "validation_run_s": val_s, "checkpoint_file_s": ckpt_s, "epoch_boundary_s": edge_s},
        note="; ".join(notes) or None,
    )


def predicted_for_work(entry: dict[str, Any], plan: RunPlan, done_batches: int) -> float | None:
    """What a history entry predicted for the work that was actually done (up to ``done_batches``).

    Used when a run ends early: its error is judged on the steps it ran, not on the plan it left.
    """
    rates = entry.get("rates") or {}
    if entry.get("elapsed_s") is None or not rates.get("batch_s"):
        return None
    after = int(entry.get("at_batch") or 0)
    if done_batches < after:
        return None
    left = _remaining(plan, after, done_batches, fit_done=False)
    return (entry["elapsed_s"] + left.batches * rates["batch_s"] + left.validations * (rates.get("validation_run_s") or 0.0)
            + left.checkpoints * (rates.get("checkpoint_file_s") or 0.0) + left.edges * (rates.get("epoch_boundary_s") or 0.0))
