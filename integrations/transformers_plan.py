"""Read a Hugging Face `Trainer`'s arguments and state into a `RunPlan` that counts by the Trainer's rules.

The Trainer evaluates and saves where its `DefaultFlowCallback` says: every ``eval_steps`` /
``save_steps`` optimizer steps (and, with a step strategy, once more after the last step when it is
not on the period; a step save always happens there), or at each epoch's end (the last, partial
epoch of a ``max_steps`` run included). Those rules count in optimizer steps and epochs, which
Lightning's batch periods in `RunPlan` cannot express with accumulation, so `TrainerPlan` keeps
the Trainer's settings and counts them itself. Positions stay global batch counts, as in `RunPlan`:
the events of optimizer step ``s`` happen after batch ``batches_for_steps(s)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from prenet_callbacks.forecast.plan import INF, RunPlan


@dataclass
class TrainerPlan(RunPlan):
    """A `RunPlan` whose evaluations and checkpoint saves follow the Trainer's strategies.

    Attributes (beyond `RunPlan`'s):
        eval_strategy / save_strategy: ``"no"``, ``"steps"``, ``"epoch"`` (saves also ``"best"``:
            after an evaluation that improves the metric; counted as one per evaluation, an upper bound).
        eval_steps / save_steps: the step periods; eval_delay: no evaluation before this step (or epoch).
        final_step: the run's last optimizer step (``TrainerState.max_steps``).
        logging_steps: how often the Trainer logs (its cost is part of the measured step time).
        load_best_model_at_end: the best checkpoint is loaded after the last step.
    """

    eval_strategy: str = "no"
    eval_steps: int = 0
    eval_delay: float = 0.0
    save_strategy: str = "no"
    save_steps: int = 0
    final_step: int = 0
    logging_steps: int = 0
    load_best_model_at_end: bool = False

    # -- counting by the Trainer's rules ------------------------------------------------------------
    def validation_runs_between(self, after: int, upto: float) -> int:
        """Evaluations after batches in ``(after, upto]``."""
        if self.val_batches <= 0 or not math.isfinite(upto) or upto <= after:
            return 0
        if self.eval_strategy == "steps":
            return self._step_events(after, upto, self.eval_steps, delay=self.eval_delay)
        if self.eval_strategy == "epoch":
            return self._epoch_ends(after, upto, delay=self.eval_delay)
        return 0

    def checkpoint_saves_between(self, after: int, upto: float) -> int:
        """Checkpoint saves after batches in ``(after, upto]``."""
        if not math.isfinite(upto) or upto <= after:
            return 0
        if self.save_strategy == "steps":
            return self._step_events(after, upto, self.save_steps, delay=0)
        if self.save_strategy == "epoch":
            return self._epoch_ends(after, upto, delay=0)
        if self.save_strategy == "best":
            return self.validation_runs_between(after, upto)
        return 0

    def _step_events(self, after: int, upto: float, every: int, *, delay: float) -> int:
        """Steps ``k * every`` (from ``delay`` on) in the range, and the final step when off the period."""
        if every <= 0:
            return 0
        first, last = self.steps_done_after(after), self.steps_done_after(int(upto))
        low = max(first, math.ceil(delay) - 1)  # steps below `delay` do not count
        count = max(0, last // every - low // every)
        final = self.final_step
        if first < final <= last and final % every and final >= delay:
            count += 1
        return count

    def _epoch_ends(self, after: int, upto: float, *, delay: float) -> int:
        """Ends of epochs (the last, partial one included) in the range, from epoch ``delay`` on."""
        if not math.isfinite(self.batches_per_epoch) or not math.isfinite(self.total_batches):
            return 0
        bpe, total, upto = int(self.batches_per_epoch), int(self.total_batches), int(upto)
        count = 0
        for end in range((after // bpe + 1) * bpe, min(upto, total) + 1, bpe):
            count += end / bpe >= delay
        if after < total <= upto and total % bpe and total / bpe >= delay:
            count += 1  # the run stops mid-epoch (max_steps): that epoch still ends, and evaluates or saves
        return count


def _strategy(value: Any) -> str:
    """``IntervalStrategy.STEPS`` / ``SaveStrategy.BEST`` / "steps" -> "steps" / "best"."""
    return str(getattr(value, "value", value) or "no").lower()


def eval_batches(eval_dataset: Any, args: Any) -> int | None:
    """Batches in one evaluation on this process (all evaluation datasets); None when unknown."""
    if eval_dataset is None:
        return 0
    datasets = list(eval_dataset.values()) if isinstance(eval_dataset, dict) else [eval_dataset]
    world = max(1, int(getattr(args, "world_size", 1) or 1))
    batch = max(1, int(args.per_device_eval_batch_size))
    total = 0
    for dataset in datasets:
        try:
            samples = len(dataset)
        except TypeError:
            return None
        per_process = math.ceil(samples / world)  # accelerate pads so that every process gets a share
        total += per_process // batch if args.dataloader_drop_last else math.ceil(per_process / batch)
    return total


def plan_from_trainer(args: Any, state: Any, train_dataloader: Any, *, eval_dataset: Any = None,
                      has_eval: bool = True) -> TrainerPlan:
    """The plan of ``trainer.train()`` from ``on_train_begin`` (the state holds ``max_steps`` and the resume step)."""
    accumulate = max(1, int(args.gradient_accumulation_steps))
    max_steps = int(getattr(state, "max_steps", 0) or 0)
    try:
        length = len(train_dataloader)
    except TypeError:
        length = None
    unknown_reason = None
    if length is not None and length > 0:
        batches_per_epoch = float(length)
    elif max_steps > 0:
        batches_per_epoch = float(max_steps * accumulate)  # the Trainer's own convention without a length
    else:
        batches_per_epoch = INF
        unknown_reason = ("the training dataloader has no length and TrainingArguments(max_steps) is not set, "
                          "so only a rate can be given")
    plan = TrainerPlan(total_batches=INF, batches_per_epoch=batches_per_epoch, accumulate=accumulate,
                       unknown_reason=unknown_reason)
    start_step = int(state.global_step or 0)
    if max_steps > 0 and unknown_reason is None:
        plan.total_batches = float(plan.batches_for_steps(max_steps))
        plan.max_epochs = math.ceil(plan.total_batches / batches_per_epoch)
    plan.start_step = start_step
    plan.start_batch = plan.batches_for_steps(start_step) if unknown_reason is None else start_step * accumulate
    plan.start_epoch = plan.epoch_of(plan.start_batch + 1) if start_step else 0
    plan.final_step = max_steps
    plan.check_val_every_n_epoch = None
    plan.eval_strategy = _strategy(args.eval_strategy) if has_eval else "no"
    plan.eval_steps = int(getattr(state, "eval_steps", 0) or 0)
    plan.eval_delay = float(args.eval_delay or 0)
    plan.save_strategy = _strategy(args.save_strategy)
    plan.save_steps = int(getattr(state, "save_steps", 0) or 0)
    plan.logging_steps = int(getattr(state, "logging_steps", 0) or 0)
    plan.load_best_model_at_end = bool(args.load_best_model_at_end)
    if plan.eval_strategy != "no":
        plan.val_batches = max(1, eval_batches(eval_dataset, args) or 1)
    return plan
