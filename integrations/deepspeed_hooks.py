"""Turn a `DeepSpeedEngine`'s calls into `PredictionSession` events.

DeepSpeed has no callback API, so ``forward``, ``backward``, ``step`` and ``save_checkpoint`` are
wrapped on the engine *instance* (the class is never touched). A micro-batch is
``engine(x)`` -> ``engine.backward(loss)`` -> ``engine.step()``; the optimizer steps only when
``step()`` runs at a gradient-accumulation boundary, and ``engine.global_steps`` counts those steps. A
`PipelineEngine` runs a whole step in ``train_batch`` (its micro-batches' forwards and backwards interleaved by
DeepSpeed's schedule) and evaluates in ``eval_batch``: those two are wrapped instead, a step is one batch.

Every wrapper calls straight through with the same arguments, returns what the original returned
and lets its exceptions pass unchanged; an error in PreNeT's own code becomes one warning and the
session steps aside (restoring the originals).

The run ends when optimizer step ``total_steps`` ends, unless the declared schedule puts an
evaluation or a checkpoint save after that step: then it ends once they have run (the due save
returned, after the due evaluation), or when training goes on, or at ``finish()``.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from integrations.loop_run import LoopRun, memory_account
from integrations.plumbing import wrap_method


class EngineEvents:
    """Feeds the session from one engine; ``install()`` wraps, the session's cleanups unwrap."""

    def __init__(self, engine: Any, run: LoopRun) -> None:
        self.engine = engine
        self.run = run
        self.session = run.session
        self.active = False
        self.in_batch = False           # a micro-batch has started (first forward since the last step)
        self.boundary = False           # the current step() is at an accumulation boundary
        self.evaluating = False         # the running forward is an evaluation call (no grad, between batches)
        self.last_global_steps = int(engine.global_steps)
        self.due: dict[str, Any] | None = None  # after the last step: what is still due (see after_last_step)

    # -- installation ---------------------------------------------------------------------------
    def install(self, *, pipeline: bool = False) -> None:
        """Wrap the engine's methods; every wrap registers its undo with the session. ``pipeline``: a
        `PipelineEngine`, whose loop calls ``train_batch`` (one optimizer step over its micro-batches, forward,
        backward and step inside DeepSpeed's schedule) and ``eval_batch`` instead."""
        self.active = True
        self.session.add_cleanup(self._deactivate)
        if pipeline:
            steps = (("train_batch", self._on_train_batch, self._on_step_end),
                     ("eval_batch", self._on_eval, self._on_eval_end))
        else:
            steps = (("forward", self._on_forward, self._on_forward_end),
                     ("backward", self._on_backward_start, self._on_backward_end),
                     ("step", self._on_step_start, self._on_step_end))
        for name, before, after in (*steps, ("save_checkpoint", self._on_save_start, self._on_save_end)):
            if callable(getattr(self.engine, name, None)):
                self.session.add_cleanup(wrap_method(self.engine, name, self._wrapper(before, after)))

    def _deactivate(self) -> None:
        self.active = False

    def _wrapper(self, before: Callable[[], None] | None,
                 after: Callable[[], None] | None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(original)
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                if before is not None:
                    self.fire(before)
                try:
                    result = original(*args, **kwargs)
                except (KeyboardInterrupt, SystemExit) as error:
                    self.run.end_with(error)  # Ctrl+C: the loop is over (a plain error stays the user's)
                    raise
                if after is not None:
                    self.fire(after)
                return result

            return wrapped

        return make

    def fire(self, event: Callable[[], None]) -> None:
        """Run one event; PreNeT's own errors make the session step aside, never reach the run."""
        if not self.active or self.session.guard.disabled:
            return
        try:
            event()
        except Exception as error:  # noqa: BLE001 - by design: monitoring never breaks training
            self.session.fail(error, where=f"deepspeed {getattr(event, '__name__', 'event')}")

    # -- events -----------------------------------------------------------------------------------
    # Between the session's events (`prenet_callbacks.session.quiet_steps`) a training step asks nothing of the session
    # but the time it ended: its forward, backward and optimizer step (a pipeline's train_batch) return at once, and
    # its end keeps its time, which the session replays before its next event. An evaluation forward (no grad), a
    # `validation()`/`checkpoint()` block, a save and the end are events: they take the full path and end the stretch.
    def _quiet(self) -> bool:
        return bool(self.session.quiet.left) and self.due is None

    def _on_forward(self) -> None:
        if self._quiet() and torch.is_grad_enabled() and not self.run.in_block:
            return
        if self.run.in_block:
            return  # inside `with prenet.validation()` / `checkpoint()`: timed as that block
        if not self.in_batch and not torch.is_grad_enabled():
            # evaluation between micro-batches: timed apart, like validation, so it never inflates a step
            self._on_eval()
            return
        self._on_training_call()

    def _on_train_batch(self) -> None:
        if not self._quiet():
            self._on_training_call()

    def _on_training_call(self) -> None:
        """A forward with grad, or a pipeline's ``train_batch``: it opens a batch, or ends the run when it comes
        after the run's last step and its due events (training goes on past them)."""
        if self.due is not None:
            self.run.end()
            return
        self._open_batch()

    def _on_forward_end(self) -> None:
        if self.evaluating:
            self._on_eval_end()

    def _on_eval(self) -> None:
        """An evaluation call (a pipeline's ``eval_batch``, a no-grad forward): timed apart, like validation."""
        if self.run.in_block:
            return  # inside `with prenet.validation()`: timed as that block
        self.evaluating = True
        self.session.validation_start()

    def _on_eval_end(self) -> None:
        if self.evaluating:
            self.evaluating = False
            self.session.guard.call(self.session.steps.validation_end)
            self.after_last_step("eval_forward")

    def _open_batch(self) -> None:
        # several forwards in one micro-batch (two inputs, a teacher model) start it only once
        if not self.in_batch:
            self.in_batch = True
            self.session.batch_start()

    def _on_backward_start(self) -> None:
        if self._quiet():
            return
        self._open_batch()  # a loss computed outside engine.forward still opens the micro-batch
        self.session.before_backward()

    def _on_backward_end(self) -> None:
        if not self._quiet():
            self.session.after_backward()

    def _on_step_start(self) -> None:
        if self._quiet():
            return
        self.boundary = bool(self.engine.is_gradient_accumulation_boundary())
        if self.boundary:
            self.session.before_optimizer_step()

    def _on_step_end(self) -> None:
        quiet = self.session.quiet
        if self._quiet() and quiet.keep(self._quiet_step):
            # kept (`_quiet_step`: the step after the last one seen): what the full path below counts for the loop
            self.last_global_steps += 1
            self.run.steps = self.last_global_steps
            self.in_batch = False
            return
        global_steps = int(self.engine.global_steps)
        # global_steps also advances on an fp16 overflow step: DeepSpeed counts it as a step
        stepped = global_steps != self.last_global_steps
        self.last_global_steps = global_steps
        self.in_batch = False
        session = self.session
        if stepped and session.measurements.state_bytes is None and session.steps_seen >= 1:
            # after the first step: the optimizer's state exists; ZeRO partitions read from metadata
            session.guard.call(session.facts.set_memory_account,
                               memory_account(self.engine, world=int(getattr(self.engine, "world_size", 1))))
            session.note_optimizer(getattr(self.engine, "basic_optimizer", None))
        session.batch_end(stepped=stepped, global_step=global_steps)
        if not stepped:
            return
        self.run.steps = global_steps
        if self.run.reached_end():
            eval_due, ckpt_due = self.run.schedule.events_after(global_steps)
            if eval_due or ckpt_due:
                self.due = {"eval": eval_due, "ckpt": ckpt_due}
            else:
                self.run.end()  # records the actual time, writes the report, unwraps

    def _quiet_step(self) -> int | None:
        """The optimizer step that just ended, when it may only keep its time: the one after the last seen, and not
        the run's last (which ends the run); else None."""
        step = int(self.engine.global_steps)
        total = self.run.schedule.total_steps
        quiet = step == self.last_global_steps + 1 and (total is None or step < total)
        return step if quiet else None

    def _on_save_start(self) -> None:
        self.session.guard.call(self.session.steps.checkpoint_start)

    def _on_save_end(self) -> None:
        self.session.guard.call(self.session.steps.checkpoint_end)
        self.after_last_step("ckpt")

    def after_last_step(self, event: str) -> None:
        """An evaluation (``"eval"``, a `validation()` block; ``"eval_forward"``, a no-grad forward) or a
        save (``"ckpt"``) has run: after the last step, end the run once nothing is due any more.

        No-grad forwards never tell when an evaluation is over: after them the run ends at the due
        save, when training goes on, or at ``finish()``.
        """
        due = self.due
        if due is None or not self.run.active:
            return
        if event == "eval_forward":
            due["eval"] = due["eval"] and "seen"
            return
        due[event] = False
        eval_over = due["eval"] in (False, "seen") if event == "ckpt" else not due["eval"]
        if eval_over and not due["ckpt"]:
            self.run.end()
