"""The run plan: how many training batches, validation runs and checkpoint saves a fit will do.

Framework-agnostic. The Lightning adapter fills it from the trainer's settings, the DeepSpeed
adapter from ``total_steps``. Counting follows Lightning's own rules (``_should_check_val_fx``,
``ModelCheckpoint``) so that the ETA counts exactly the events the loop will run.

Positions are *global training-batch counts*: batch ``g`` (1-based) is the g-th loop iteration of
the whole fit, across epochs. An optimizer step happens every ``accumulate`` batches and at the
last batch of each epoch.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

INF = float("inf")
_COUNT_KEYS = ("total_batches", "batches_per_epoch", "val_check_batch", "total_steps", "validation_runs",
               "checkpoint_saves", "max_epochs", "start_batch", "start_epoch", "start_step", "val_batches",
               "sanity_val_batches", "accumulate")


@dataclass
class RunLimits:
    """What may end a run before its plan does, as the trainer was configured.

    ``max_steps`` / ``max_epochs`` are the configured bounds (None when not set), ``max_time_s``
    a wall-time limit (``Trainer(max_time=...)``), ``early_stopping`` whether an early-stopping
    callback could end the run.
    """

    max_steps: int | None = None
    max_epochs: int | None = None
    max_time_s: float | None = None
    early_stopping: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def integer_counts(plan: dict[str, Any]) -> dict[str, Any]:
    """A plan dict with every count as an int (JSON readers should not see ``96.0`` batches)."""
    out = dict(plan)
    for key in _COUNT_KEYS:
        value = out.get(key)
        if isinstance(value, float):
            out[key] = int(value) if math.isfinite(value) else None
    return out


@dataclass
class CheckpointRule:
    """When one checkpoint callback saves.

    ``trigger`` is ``"validation_end"`` (after validation runs, in epochs where
    ``(epoch + 1) % every_n_epochs == 0``), ``"train_epoch_end"`` (same epoch condition, at the
    end of the epoch) or ``"steps"`` (every ``every_n_train_steps`` optimizer steps).
    """

    trigger: str
    every_n_epochs: int = 1
    every_n_train_steps: int = 0
    files_per_save: int = 1  # save_last adds a second file per save


@dataclass
class RunPlan:
    """Everything the loop will do, from the trainer's settings.

    Attributes:
        total_batches: training batches in the whole fit (``inf`` when unknown).
        batches_per_epoch: batches in one epoch (``inf`` for an iterable dataset without length).
        max_epochs: epochs, or ``None`` when bounded only by steps.
        accumulate: batches per optimizer step (gradient accumulation).
        start_batch / start_epoch / start_step: where a resumed fit starts.
        val_batches: batches in one validation run (all validation dataloaders), 0 = no validation.
        val_check_batch: validate every this many batches (``inf``: at the end of each epoch).
        check_val_every_n_epoch: validation only in these epochs; ``None``: count batches globally.
        sanity_val_batches: batches of the sanity check before training.
        checkpoints: one rule per checkpoint callback.
        max_time_s: ``Trainer(max_time=...)``, which caps the fit.
        unknown_reason: why ``total_batches`` is unknown (iterable dataset and no ``max_steps``).
    """

    total_batches: float
    batches_per_epoch: float
    max_epochs: int | None = None
    accumulate: int = 1
    steps_per_batch: float | None = None  # optimizer steps per batch when not 1/accumulate (manual optimization)
    start_batch: int = 0
    start_epoch: int = 0
    start_step: int = 0
    val_batches: int = 0
    val_check_batch: float = INF
    check_val_every_n_epoch: int | None = 1
    sanity_val_batches: int = 0
    checkpoints: list[CheckpointRule] = field(default_factory=list)
    max_time_s: float | None = None
    unknown_reason: str | None = None

    # -- derived quantities -----------------------------------------------------------------
    @property
    def known_length(self) -> bool:
        return math.isfinite(self.total_batches)

    @property
    def total_steps(self) -> float:
        """Optimizer steps in the whole fit (``inf`` when unknown)."""
        if not self.known_length:
            return INF
        return self.steps_done_after(int(self.total_batches))

    def steps_done_after(self, batches: int) -> int:
        """Optimizer steps completed once ``batches`` global batches have run."""
        if self.steps_per_batch is not None:
            return int(round(batches * self.steps_per_batch))
        if not math.isfinite(self.batches_per_epoch):
            return batches // self.accumulate
        bpe = int(self.batches_per_epoch)
        full_epochs, rest = divmod(batches, bpe)
        return full_epochs * math.ceil(bpe / self.accumulate) + rest // self.accumulate

    def batches_for_steps(self, steps: int) -> int:
        """Smallest number of global batches that completes ``steps`` optimizer steps."""
        if self.steps_per_batch:
            return int(math.ceil(steps / self.steps_per_batch))
        if not math.isfinite(self.batches_per_epoch):
            return steps * self.accumulate
        bpe = int(self.batches_per_epoch)
        per_epoch = math.ceil(bpe / self.accumulate)
        full_epochs, rest = divmod(steps, per_epoch)
        return full_epochs * bpe + rest * self.accumulate

    def epoch_of(self, batch: int) -> int:
        """Epoch index of global batch ``batch`` (1-based batch count)."""
        if not math.isfinite(self.batches_per_epoch) or batch <= 0:
            return 0
        return (batch - 1) // int(self.batches_per_epoch)

    # -- event counts between two global batch positions (exclusive, inclusive] -----------------
    def validation_runs_between(self, after: int, upto: float) -> int:
        """Validation runs triggered at batches in ``(after, upto]``."""
        if self.val_batches <= 0 or not math.isfinite(upto) or upto <= after:
            return 0
        upto = int(upto)
        vcb = self.val_check_batch
        if self.check_val_every_n_epoch is None:
            if not math.isfinite(vcb):
                return 0
            vcb = int(vcb)
            return upto // vcb - after // vcb
        if not math.isfinite(self.batches_per_epoch):
            # iterable dataset: the only epoch is epoch 0; an integer val_check_interval still
            # validates every that many batches inside it (a float one: only at its unknown end)
            if not math.isfinite(vcb) or (1 % self.check_val_every_n_epoch):
                return 0
            vcb = int(vcb)
            return upto // vcb - after // vcb
        bpe = int(self.batches_per_epoch)
        every = self.check_val_every_n_epoch
        period = bpe if not math.isfinite(vcb) else int(vcb)
        count = 0
        for epoch in range(self.epoch_of(after + 1), self.epoch_of(upto) + 1):
            if (epoch + 1) % every:
                continue
            first = max(after + 1, epoch * bpe + 1) - epoch * bpe  # batch-in-epoch range, 1-based
            last = min(upto, (epoch + 1) * bpe) - epoch * bpe
            if last >= first:
                count += last // period - (first - 1) // period
        return count

    def epoch_ends_between(self, after: int, upto: float) -> int:
        """Epoch boundaries (end of an epoch followed by another) in ``(after, upto)``."""
        if not math.isfinite(self.batches_per_epoch) or not math.isfinite(upto):
            return 0
        bpe = int(self.batches_per_epoch)
        # an epoch ending exactly at `upto` is the end of the fit, not a boundary
        return max(0, (int(upto) - 1) // bpe - after // bpe)

    def checkpoint_saves_between(self, after: int, upto: float) -> int:
        """Checkpoint files written at batches in ``(after, upto]`` (all callbacks)."""
        if not math.isfinite(upto) or upto <= after:
            return 0
        upto = int(upto)
        files = 0
        for rule in self.checkpoints:
            files += rule.files_per_save * self._saves_for_rule(rule, after, upto)
        return files

    def _saves_for_rule(self, rule: CheckpointRule, after: int, upto: int) -> int:
        if rule.trigger == "steps":
            if rule.every_n_train_steps <= 0:
                return 0
            n = rule.every_n_train_steps
            return self.steps_done_after(upto) // n - self.steps_done_after(after) // n
        every = max(1, rule.every_n_epochs)
        if not math.isfinite(self.batches_per_epoch):
            # iterable dataset: one endless epoch 0; saves follow its validation runs, and a fit
            # that stops at max_steps still ends that epoch (on_train_epoch_end runs)
            if every != 1:
                return 0
            if rule.trigger == "validation_end":
                return self.validation_runs_between(after, upto)
            return 1 if upto == self.total_batches and after < upto else 0
        bpe = int(self.batches_per_epoch)
        if rule.trigger == "train_epoch_end":
            saves = 0
            for epoch in range(self.epoch_of(after + 1), self.epoch_of(upto) + 1):
                ends_at = (epoch + 1) * bpe
                if after < ends_at <= upto and (epoch + 1) % every == 0:
                    saves += 1
            # a fit that stops mid-epoch (max_steps) still runs on_train_epoch_end
            if upto == self.total_batches and upto % bpe and (self.epoch_of(upto) + 1) % every == 0:
                saves += 1
            return saves
        # validation_end: one save per validation run in the right epochs (deduplicated by step)
        if every == 1:
            return self.validation_runs_between(after, upto)
        saves = 0
        for epoch in range(self.epoch_of(after + 1), self.epoch_of(upto) + 1):
            if (epoch + 1) % every == 0:
                lo, hi = max(after, epoch * bpe), min(upto, (epoch + 1) * bpe)
                saves += self.validation_runs_between(lo, hi)
        return saves

    def learn_epoch_length(self, batches: int, max_epochs: int | None) -> int | None:
        """The first whole epoch of a loader without a length ended after ``batches``: with ``max_epochs`` the
        run now has a length (every epoch assumed as long). Returns how far the run's position moves (the
        batches of the epochs a resumed fit had done), or None when nothing was learned."""
        if (self.known_length or math.isfinite(self.batches_per_epoch) or batches < 1 or not max_epochs
                or max_epochs < 1 or self.steps_per_batch is not None):
            return None
        self.batches_per_epoch = float(batches)
        self.max_epochs = max_epochs
        self.total_batches = float(max_epochs * batches)
        shift = self.start_epoch * batches
        self.start_batch += shift
        self.unknown_reason = None
        return shift

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["total_steps"] = self.total_steps if self.known_length else None
        data["validation_runs"] = self.validation_runs_between(self.start_batch, self.total_batches)
        data["checkpoint_saves"] = self.checkpoint_saves_between(self.start_batch, self.total_batches)
        return integer_counts(data)  # JSON has no infinity: unknown counts are null

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunPlan":
        data = dict(data)
        data.pop("total_steps", None)
        data.pop("validation_runs", None)
        data.pop("checkpoint_saves", None)
        for key in ("total_batches", "batches_per_epoch", "val_check_batch"):
            data[key] = INF if data.get(key) is None else float(data[key])
        data["checkpoints"] = [CheckpointRule(**rule) for rule in data.get("checkpoints", [])]
        return cls(**data)


def plan_for_steps(total_steps: int | None, *, accumulate: int = 1, start_step: int = 0,
                   eval_every: int | None = None, eval_batches: int | None = None,
                   checkpoint_every: int | None = None, files_per_checkpoint: int = 1,
                   unknown_reason: str | None = None) -> RunPlan:
    """A plan in optimizer steps with no epochs: a loop that no framework drives (DeepSpeed, `Tracker`).

    ``total_steps`` counts from the start of the run (a resumed run at ``start_step`` 1000 of 5000
    passes 5000); ``None`` gives a run of unknown length (a rate, with ``unknown_reason``).
    ``eval_every`` / ``checkpoint_every``: an evaluation / a checkpoint save after every this many
    optimizer steps (after steps ``k * every``, the last step included when it falls on one).
    ``eval_batches``: batches in one evaluation, for its estimate before one has been measured
    (default 1).
    """
    known = total_steps is not None
    plan = RunPlan(
        total_batches=float(total_steps * accumulate) if known else INF,
        batches_per_epoch=INF,
        accumulate=accumulate,
        start_batch=start_step * accumulate,
        start_step=start_step,
        check_val_every_n_epoch=None,
        unknown_reason=None if known else (unknown_reason or "the run's total number of steps was not given"),
    )
    if eval_every:
        # after step k the loop has run k * accumulate batches: a global-batch period
        plan.val_check_batch = float(eval_every * accumulate)
        plan.val_batches = max(1, int(eval_batches or 1))
    if checkpoint_every:
        plan.checkpoints.append(CheckpointRule("steps", every_n_train_steps=int(checkpoint_every),
                                               files_per_save=files_per_checkpoint))
    return plan
