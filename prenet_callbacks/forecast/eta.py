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
their quadrature sum at about two standard deviations, and each prediction names what it is made of
(``band_parts``: each term's half-width as a share of the total, `_band`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from prenet_callbacks.forecast.estimators import RobustDuration
from prenet_callbacks.forecast.plan import RunPlan

from prenet_callbacks.forecast.eta_validation import UNCERTAINTY as _UNCERTAINTY, validation_estimate, validation_uncertainty

# Before a save has been timed, a checkpoint file costs the framework's fixed work around it plus the state's bytes
# at a modest disk write speed. Both were chosen on the development split of the ETA protocol by the worst error
# of the first prediction's checkpoint part (`benchmarks/save_cost_choice.py`, 15 fits of 2026-12-06 with saves,
# `benchmarks/results/issue39_saves/`): 5 ms a file (it was 20 ms, 4x what the fits' small files took), 400 MB/s.
_ASSUMED_WRITE_BYTES_PER_S = 400e6
_ASSUMED_SAVE_OVERHEAD_S = 0.005
# Drift allowance of the remaining time, one standard deviation: the machine's pace over the rest of the
# run against the few steps measured (thermal, other tenants, data cache warming). A GPU's device-timed
# steps keep their pace; a host-timed run on a shared CPU does not. `_HOST_DRIFT` is the smallest allowance
# (a grid of 0.005) whose band holds the user's wall time in >= 90% of the runs of every development repeat of
# the ETA protocol (`benchmarks/band_drift_choice.py`; four repeats of 26-29 fits, 2026-12-04 and 2026-12-06,
# in `benchmarks/results/issue39_band/`). It adds in quadrature to the other parts (the batch's standard error,
# somewhat larger where the pace later moved), so it sits below the pace's whole spread (11.5%, the earlier value).
_TRAIN_DRIFT = 0.015
_HOST_DRIFT = 0.065
# Validation this share of the run or more is named in the band's note until it is measured.
_LARGE_VALIDATION_SHARE = 0.15


class LaterRisk(Protocol):
    """A slowdown the measured steps do not show yet (`subnormals.SubnormalNote`): named, not priced."""

    def describe(self, from_step: float, to_step: float) -> str | None: ...


class AllocatorState(Protocol):
    """Steps that may start or stop re-faulting their memory (`heap_faults.HeapRisk`)."""

    def reach_s(self, batches: float) -> tuple[float, float]: ...

    def describe(self, batch_s: float, batches: float, predicted_s: float) -> str | None: ...


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
    # the band's half-width by source, each a share of the predicted total at two sigmas (`_band`)
    band_parts: dict[str, float] = field(default_factory=dict)

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


def _step_and_rate(plan: RunPlan, batch_s: float | None) -> tuple[float | None, float | None]:
    """Seconds per optimizer step and batches per second, from the clean batch time."""
    if not batch_s:
        return None, None
    return batch_s / (plan.steps_per_batch or (1.0 / max(1, plan.accumulate))), 1.0 / batch_s


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
    later_risk: LaterRisk | None = None,
    allocator: AllocatorState | None = None,
) -> Prediction:
    """Predict the wall time of the whole run, standing at global batch ``done_batches``.

    ``spent`` is the time this run has spent so far by kind (the rest of ``elapsed_s`` went to
    training batches); ``time_limit_start_s`` is the elapsed time at which ``plan.max_time_s``
    started counting (Lightning's timer starts at ``on_train_start``). ``later_risk`` names a slowdown
    the measured steps cannot show yet (`subnormals.SubnormalNote`) in the note, without pricing it: a
    forecast the run cannot check stays a note. ``allocator`` prices the remaining batches in the
    allocator's other state (`heap_faults`): the band reaches it, up and down apart (see `_band`).
    """
    spent = spent or Spent()
    batch_s = m.batch.mean
    step_s, rate = _step_and_rate(plan, batch_s)
    if batch_s is None or not plan.known_length:
        note = ("no clean training step measured yet" if batch_s is None
                else plan.unknown_reason or "the run's length is unknown")
        return Prediction(done_steps, done_batches, elapsed_s, None, None, None, None, step_s, rate, note=note)
    val = validation_estimate(plan, m, batch_s)
    val_s, val_how = val.per_run_s, val.how
    rates = _Rates(batch_s, val_s, val_how, *_per_checkpoint_file(m), *_per_epoch_boundary(m))
    end = plan.total_batches
    if plan.max_time_s is not None:
        started = time_limit_start_s if time_limit_start_s is not None else spent.setup_s
        end = _end_under_limit(plan, rates, done_batches, max(0.0, started + plan.max_time_s - elapsed_s))
    time_limited = end < plan.total_batches
    remaining = _remaining(plan, done_batches, end, fit_done=fit_done)
    parts = remaining.seconds(rates)
    end_step = plan.steps_done_after(int(end))
    remaining_s = sum(parts.values())
    predicted = elapsed_s + remaining_s
    band = _band(parts, remaining, m, plan, rates, val, predicted, allocator)
    notes = _notes(plan, time_limited, end_step, done_steps, later_risk, allocator, remaining, predicted,
                   parts, val_how, val.basis, batch_s)
    data_s = max(0.0, end - plan.start_batch) * batch_s * min(1.0, (m.data_per_batch.mean or 0.0) / batch_s)
    done_fraction = (done_batches - plan.start_batch) / max(1.0, plan.total_batches - plan.start_batch)
    has_val = plan.val_batches > 0
    return Prediction(
        at_step=done_steps, at_batch=done_batches, elapsed_s=elapsed_s, predicted_total_s=predicted,
        eta_s=remaining_s, low_s=elapsed_s + max(0.0, remaining_s - band.down_s), high_s=predicted + band.up_s,
        step_s=step_s, batches_per_s=rate, naive_total_s=elapsed_s / done_fraction if done_fraction > 0 else None,
        steps=int(end_step), time_limited=time_limited,
        breakdown={k: round(v, 3) for k, v in _breakdown(spent, elapsed_s, parts).items()},
        of_which={"data_loading_s": round(data_s, 3)},
        validation_source=val_how if has_val else "none", validation_basis=val.basis if has_val else None,
        rates={"batch_s": batch_s, "validation_run_s": val_s, "checkpoint_file_s": rates.checkpoint_s,
               "epoch_boundary_s": rates.edge_s},
        note="; ".join(notes) or None, band_parts=band.parts,
    )


@dataclass
class _Band:
    down_s: float                 # the band's reach below and above the predicted total (seconds)
    up_s: float
    parts: dict[str, float]       # relative half-widths by source; they add in quadrature to the half-width


def _band(parts: dict[str, float], remaining: _Remaining, m: RunMeasurements, plan: RunPlan, rates: _Rates,
          val: Any, predicted: float, allocator: AllocatorState | None) -> _Band:
    """The band around the remaining time: each term's uncertainty at two sigmas, added in quadrature.

    ``parts`` names them as shares of the predicted total: ``train_rate`` (the measured batch's standard
    error and the device's own drift), ``validation`` (reaching every candidate estimate of a validation
    run), ``checkpoints``, ``epoch_boundaries``, ``pace_drift`` (a shared host's pace moving every
    remaining part alike) and ``allocator`` (the remaining batches in the allocator's other state: its up
    and down reaches differ, so its part is what it adds, in quadrature, to the mean of the two half-widths).
    """
    remaining_s = sum(parts.values())
    sigmas = {
        "train_rate": parts["train_s"] * (2 * m.batch.relative_stderr + _TRAIN_DRIFT),
        "validation": parts["validation_s"] * validation_uncertainty(plan, m, rates.validation_s, rates.validation_how, val),
        "checkpoints": parts["checkpoints_s"] * _UNCERTAINTY[rates.checkpoint_how],
        "epoch_boundaries": parts["epoch_boundaries_s"] * _UNCERTAINTY[rates.edge_how] + 0.05 * remaining.edges,
        "pace_drift": remaining_s * (_HOST_DRIFT if m.host_timed else 0.0),
    }
    variance = sum(s**2 for s in sigmas.values())
    # the allocator's other state: a second candidate for the remaining batches, reached at two sigmas
    down_s, up_s = allocator.reach_s(remaining.batches) if allocator is not None else (0.0, 0.0)
    spread_down, spread_up = (2 * math.sqrt(variance + (reach / 2) ** 2) for reach in (down_s, up_s))
    scale = max(predicted, 1e-12)
    rel = {name: 2 * s / scale for name, s in sigmas.items()}
    half = (spread_down + spread_up) / 2 / scale
    rel["allocator"] = math.sqrt(max(0.0, half**2 - sum(v**2 for v in rel.values())))
    return _Band(spread_down, spread_up, {k: round(v, 4) for k, v in rel.items()})


def _breakdown(spent: Spent, elapsed_s: float, parts: dict[str, float]) -> dict[str, float]:
    """What each part has cost so far plus what it will cost: they add up to the predicted total."""
    spent_train = max(0.0, elapsed_s - spent.outside_train_s)
    return {
        "setup_s": spent.setup_s,
        "train_s": spent_train + parts["train_s"],
        "validation_s": spent.validation_s + parts["validation_s"],
        "checkpoints_s": spent.checkpoints_s + parts["checkpoints_s"],
        "epoch_boundaries_s": spent.epoch_boundaries_s + parts["epoch_boundaries_s"],
    }


def _notes(plan: RunPlan, time_limited: bool, end_step: float, done_steps: int, later_risk: LaterRisk | None,
           allocator: AllocatorState | None, remaining: _Remaining, predicted: float, parts: dict[str, float],
           val_how: str, val_basis: str, batch_s: float) -> list[str]:
    notes = []
    if time_limited:
        notes.append(f"capped by the time limit ({plan.max_time_s:.0f} s): "
                     f"{end_step:,} of {int(plan.total_steps):,} steps fit")
    risk_note = later_risk.describe(done_steps, end_step) if later_risk is not None else None
    if risk_note:
        notes.append(risk_note)
    allocator_note = (allocator.describe(batch_s, remaining.batches, predicted)
                      if allocator is not None else None)
    if allocator_note:
        notes.append(allocator_note)
    if val_how != "measured" and parts["validation_s"] > _LARGE_VALIDATION_SHARE * predicted:
        notes.append(f"validation not measured yet ({parts['validation_s'] / predicted:.0%} of the run), "
                     f"estimated from: {val_basis}")
    return notes


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
