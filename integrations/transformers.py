"""`PreNeTTrainerCallback`: predict a Hugging Face `Trainer` run's wall time a few steps in, and refine it.

    from prenet_callbacks import PreNeTTrainerCallback
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=val,
                      callbacks=[PreNeTTrainerCallback()])
    trainer.train()

The Trainer's callback events become `PredictionSession` events: ``on_step_begin`` opens a step's
first micro-batch (its data is already fetched: the Trainer prefetches a whole accumulation
cycle), ``on_substep_end`` closes a micro-batch, ``on_pre_optimizer_step`` / ``on_step_end``
frame the optimizer step. A forward hook on the model marks where backward begins. Evaluations
and checkpoint saves are told apart by the flags the Trainer's `DefaultFlowCallback` has set by
the time a user callback's ``on_step_end`` / ``on_epoch_end`` runs (``should_evaluate``,
``should_save``), and end at ``on_evaluate`` / ``on_save``. Between the session's events, a step without
accumulation only keeps the time it ended (`prenet_callbacks.session.quiet_steps`).

The Trainer passes its callbacks no handle on itself (``args, state, control, model, optimizer,
...``). This one needs it, to read the evaluation datasets and to hand ``prenet/*`` metrics to the
reporting callbacks (``report_to``: TensorBoard, W&B, MLflow...), which run before user callbacks
and so never see what a user callback adds to ``logs``. The explicit way is
``PreNeTTrainerCallback().attach(trainer)``; without it the callback finds the Trainer whose
callback handler calls it (`_calling_trainer`, the one fallback) and says so when it cannot.
"""
from __future__ import annotations

import functools
import os
import sys
import time
import weakref
from typing import Any, Callable, Sequence, TypeVar

import torch

try:
    from transformers import TrainerCallback
except ImportError as error:  # the optional extra: say what to install
    raise ImportError("PreNeTTrainerCallback needs transformers and accelerate: "
                      "pip install 'prenet-callbacks[transformers]'") from error

from integrations.loop_run import exception_reason, memory_account, module_profiler, torch_optimizer
from integrations.plumbing import PhaseHooks, default_report_path, guarded_hook, note_once, wrap_method
from integrations.transformers_plan import TrainerPlan, plan_from_trainer
from integrations.transformers_run import describe_trainer_run, end_reason, run_limits
from prenet_callbacks.measure.clocks import clock_for
from prenet_callbacks.session.arguments import metrics_interval, validate_session_config
from prenet_callbacks.outputs.render import print_report
from prenet_callbacks.session.machine import PredictionSession, SessionConfig

F = TypeVar("F", bound=Callable[..., Any])
_CALLER_DEPTH = 16  # frames searched for the Trainer that calls us (its handler is ~8 frames up)


def _trainer_event(method: F) -> F:
    """A Trainer event body under the session's guard (`guarded_hook`).

    The event's ``(args, state, control)`` are kept for the reporting sinks, and the event returns
    None whatever happens: the callback never changes the Trainer's control flow.
    """

    @functools.wraps(method)
    def remembering(self: "PreNeTTrainerCallback", args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._event = (args, state, control)
        method(self, args, state, control, **kwargs)

    return guarded_hook(remembering)  # type: ignore[return-value]


class PreNeTTrainerCallback(TrainerCallback):
    """Profile the first optimizer steps of ``Trainer.train()`` and predict its whole wall time.

    Args:
        warmup_steps: optimizer steps skipped before anything is measured.
        profile_steps: optimizer steps profiled per module (forward/backward time, ops, features).
        report_path: where the main process writes the JSON report; default
            ``<args.output_dir>/prenet_report.json``.
        metrics_every_n_steps: log ``prenet/*`` metrics every this many optimizer steps; None: when the Trainer
            logs (``logging_steps``). ``log_every_n_steps``, the old name, warns.
        targets: other hardware to project onto (``["A100", "8x H100"]``); ``None`` for the default set,
            ``[]`` for none.
        timing_steps: clean optimizer steps timed before the first prediction (fewer in short runs).
        print_report: print the table on the main process after the first prediction.
        profile_layers: set False to skip the per-module profile and keep only step timing.
        predictor: the op-time predictor for the projection: None for the shipped one, or the path
            of a ``predictor.json`` (or its folder) from ``prenet train``.
        html: write ``prenet_report.html`` beside the JSON report (None or True); False: no page.
        batch_convention: ``"per_device"`` or ``"global"``: what multi-GPU targets keep (see `PreNeTCallback`).
        provider: price the target rows with one provider's listings (see `PreNeTCallback`).
        allocator_probe: trim the heap once to price the allocator's other state (changes the process;
            off by default, see `PreNeTCallback`).

    Attributes:
        report: the `Report` (also written as JSON), with the history of predictions.

    Raises:
        ValueError: a bad argument, at construction (named in the message, with the fix).

    Example::

        from transformers import Trainer, TrainingArguments
        from prenet_callbacks import PreNeTTrainerCallback

        args = TrainingArguments("out", num_train_epochs=3, eval_strategy="steps", eval_steps=200)
        trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=val,
                          callbacks=[PreNeTTrainerCallback(targets=["A100", "8x H100"])])
        trainer.train()

    A Trainer built without it takes it with `attach`: ``PreNeTTrainerCallback().attach(trainer)``.
    """

    def __init__(
        self,
        warmup_steps: int = 3,
        profile_steps: int = 3,
        report_path: str | os.PathLike[str] | None = None,
        metrics_every_n_steps: int | None = None,
        targets: Sequence[str] | None = None,
        *,
        timing_steps: int = 20,
        print_report: bool = True,
        profile_layers: bool = True,
        predictor: Any = None,
        html: bool | None = None,
        batch_convention: str = "per_device",
        provider: str | None = None,
        allocator_probe: bool = False,
        log_every_n_steps: int | None = None,
    ) -> None:
        every = metrics_interval(metrics_every_n_steps, log_every_n_steps, "PreNeTTrainerCallback", default=None)
        self.config: SessionConfig = validate_session_config(
            warmup_steps=warmup_steps, profile_steps=profile_steps, timing_steps=timing_steps,
            metrics_every_n_steps=every, report_path=report_path, targets=targets,
            print_report=print_report, profile_layers=profile_layers, predictor=predictor, html=html,
            batch_convention=batch_convention, provider=provider, allocator_probe=allocator_probe,
        )
        self._user_report_path = self.config.report_path
        self.session = PredictionSession(self.config)
        self._event: tuple[Any, Any, Any] | None = None
        self._train_called_at: float | None = None  # perf_counter when trainer.train() was called
        self._trainer: Any = lambda: None            # weak reference to the Trainer of the running train()
        self._attached: Any = lambda: None           # weak reference to the Trainer given to attach()
        self._reset()

    def _reset(self) -> None:
        self._training = False          # between on_train_begin and on_train_end
        self._model: torch.nn.Module | None = None
        self._optimizer: Any = None
        self._open = False              # a micro-batch's compute has started
        self._forward_done = False      # its forward has returned
        self._forward_hook: PhaseHooks | None = None   # on for the steps whose phases are timed
        self._evaluations_left = 0      # on_evaluate calls still to come in this evaluation (one per dataset)
        self._eval_datasets = 1
        self._sanity = False            # the evaluation before training (eval_on_start)
        self._save_after_eval = False   # save_strategy="best": a save may follow an evaluation
        self._last_step = -1            # the global step of the last step end the session saw or kept

    @property
    def report(self):  # noqa: ANN201 - `Report`
        return self.session.report

    def attach(self, trainer: Any) -> "PreNeTTrainerCallback":
        """Serve ``trainer``, told explicitly: add this callback to it (unless it is there) and bind it.

        Callbacks get no handle on their Trainer; without `attach` this one looks for the Trainer
        whose callback handler calls it, which works for ``Trainer(callbacks=[...])`` and
        ``trainer.add_callback(...)`` but rests on the call stack. Attached before ``train()``,
        the time from ``trainer.train()`` to its first event is measured too.

        Example::

            trainer = Trainer(model=model, args=args, train_dataset=train)
            PreNeTTrainerCallback(targets=["A100"]).attach(trainer)
            trainer.train()

        Returns:
            This callback.

        Raises:
            TypeError: ``trainer`` is not a ``transformers.Trainer``.
        """
        from transformers import Trainer

        if not isinstance(trainer, Trainer):
            raise TypeError(f"attach() needs the transformers.Trainer this callback serves, got "
                            f"{type(trainer).__name__}; pass the Trainer: callback.attach(trainer)")
        if not any(cb is self for cb in trainer.callback_handler.callbacks):
            trainer.add_callback(self)
        self._attached = weakref.ref(trainer)
        self._guard_method(trainer, "train")
        return self

    def _find_trainer(self) -> Any:
        """The Trainer this callback serves: the one given to `attach`, else the one calling it (or None)."""
        attached = self._attached()
        return attached if attached is not None else _calling_trainer(self)

    # -- the run --------------------------------------------------------------------------------
    @_trainer_event
    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        trainer = self._find_trainer()
        if trainer is not None:
            self._guard_method(trainer, "train")  # when train() is called, and how it ends if it raises

    @_trainer_event
    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, optimizer: Any = None,
                       train_dataloader: Any = None, **kwargs: Any) -> None:
        self._reset()
        session = self.session
        trainer = self._find_trainer()
        self._trainer = weakref.ref(trainer) if trainer is not None else (lambda: None)
        called_at, self._train_called_at = self._train_called_at, None
        startup = time.perf_counter() - called_at if called_at is not None else None
        session.outputs.is_rank_zero = bool(state.is_world_process_zero)
        session.config.report_path = self._user_report_path or default_report_path(args.output_dir)
        session.outputs.printer = print_report
        session.outputs.logger_sinks = _reporting_sinks(self, trainer)
        session.use_clock(clock_for(args.device))
        session.fit_start(current=describe_trainer_run(args, trainer, model), framework="transformers",
                          start="resumed" if state.global_step else "fresh", limits=run_limits(args, trainer),
                          startup_s=startup)
        if startup is None:
            note_once(session, "the time between trainer.train() and on_train_begin (data loaders, model wrapping, "
                                "loading a checkpoint) is not included: pass the callback to Trainer(callbacks=...)")
        eval_dataset = getattr(trainer, "eval_dataset", None)
        plan = plan_from_trainer(args, state, train_dataloader, eval_dataset=eval_dataset,
                                 has_eval=trainer is None or eval_dataset is not None)
        session.set_plan(plan)
        self._note_limitations(args, plan, trainer)
        self._eval_datasets = len(eval_dataset) if isinstance(eval_dataset, dict) else 1
        self._save_after_eval = plan.save_strategy == "best"
        self._training = True
        self._model, self._optimizer = model, torch_optimizer(optimizer)
        if self._optimizer is not None:
            session.note_optimizer(self._optimizer)
        session.facts.note_run_facts(batch_size=int(args.per_device_train_batch_size))
        session.facts.note_validation_batch_size(int(args.per_device_eval_batch_size))
        if model is not None:
            precision = session.report.current.get("precision", "32-true")
            session.profile_model(lambda: module_profiler(model, clock=session.device_clock, device=args.device,
                                                          precision=precision))
            self._install_forward_hook(model)
            sharded = trainer is not None and (getattr(trainer, "is_deepspeed_enabled", False)
                                               or getattr(trainer, "is_fsdp_enabled", False))
            if not sharded:   # a sharded model cannot be called outside its step (the probe checks the modules)
                session.window.probe_eval_forward(model)
        if trainer is not None and "train" not in trainer.__dict__:
            self._guard_method(trainer, "training_step")  # added after Trainer(): guard each step instead
        if args.eval_on_start:
            self._sanity = True
            session.validation_start(sanity=True)
        self._last_step = int(state.global_step)
        # quiet steps without accumulation only: a cycle's micro-batch ends are the session's events
        session.quiet.enabled = plan.accumulate == 1

    def _note_limitations(self, args: Any, plan: TrainerPlan, trainer: Any) -> None:
        found = []
        if plan.save_strategy == "best":
            found.append("save_strategy='best': a save after each evaluation is planned (an upper bound: the "
                         "Trainer saves only when the metric improves)")
        if args.ignore_data_skip and plan.start_step:
            found.append("ignore_data_skip=True: the resumed epoch restarts at its first batch; epoch ends are "
                         "counted as if the data had been skipped")
        if trainer is None:
            found.append("the Trainer was not found from the callback: evaluation size unknown, and prenet/* "
                         "metrics are not sent to report_to (pass it explicitly: callback.attach(trainer))")
        if plan.load_best_model_at_end:
            found.append("load_best_model_at_end: loading the best checkpoint after the last step is not planned "
                         "(it is in the measured time)")
        for note in found:
            note_once(self.session, note)

    @_trainer_event
    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._training:
            self._training = False
            try:
                self.session.fit_end(*end_reason(args, state, self._trainer()))
            finally:
                # the Trainer holds the model and optimizer; this callback, which may outlive it, lets go of them
                self._model = self._optimizer = self._forward_hook = None

    # -- training steps ----------------------------------------------------------------------------
    @_trainer_event
    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._training:
            self.session.train_epoch_start()

    # Between the session's events (`prenet_callbacks.session.quiet_steps`) a step asks nothing of the session but the
    # time it ended: its start and its optimizer step return at once (a quiet step's phases are not timed), and its
    # end keeps its time for the session to replay before its next event. Every event the Trainer calls through
    # the guard ends such a stretch, so these three test for it first.
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self.session.quiet.left:
            self._step_begin(args, state, control, **kwargs)

    @_trainer_event
    def _step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._training:
            self._open_batch()

    @_trainer_event
    def on_substep_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._training:
            session = self.session
            session.after_backward()
            self._open = False
            session.batch_end(stepped=False)
            self._open_batch()  # the next micro-batch is already fetched: its compute starts now

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self.session.quiet.left:
            self._pre_optimizer_step(args, state, control, **kwargs)

    @_trainer_event
    def _pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._training:
            self.session.after_backward()
            self.session.before_optimizer_step()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        quiet = self.session.quiet
        if quiet.left and quiet.keep(lambda: self._quiet_step(state, control)):
            self._last_step += 1
            return
        self._step_end(args, state, control, **kwargs)

    def _quiet_step(self, state: Any, control: Any) -> int | None:
        """The global step of a step that may keep its time only: the step after the last one seen, with nothing
        for the session after it (a log with prenet/* metrics, an evaluation, a save, the end); else None."""
        step = state.global_step
        quiet = (step == self._last_step + 1
                 and not (control.should_evaluate or control.should_save or control.should_training_stop
                          or (control.should_log and self.session.config.metrics_every_n_steps is None)))
        return step if quiet else None

    @_trainer_event
    def _step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self._training:
            return
        session = self.session
        if session.measurements.state_bytes is None and session.steps_seen >= 1:
            # after the first step: optimizers create their state lazily; ZeRO partitions from metadata
            trainer = self._trainer()
            wrapped = getattr(trainer, "model_wrapped", None) if getattr(trainer, "is_deepspeed_enabled", False) else None
            session.facts.set_memory_account(memory_account(wrapped or self._model, [] if wrapped else [self._optimizer],
                                                      world=int(args.world_size or 1)))
        self._open = False
        self._last_step = int(state.global_step)
        session.batch_end(stepped=True, global_step=self._last_step)
        if self._forward_hook is not None:
            self._forward_hook.follow(session.phase_marks and not session.guard.disabled)
        self._before_log_save_evaluate(control)

    @_trainer_event
    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._training:
            self.session.epoch_end()
            self._before_log_save_evaluate(control)

    def _before_log_save_evaluate(self, control: Any) -> None:
        """What the Trainer does next, as its flow callback decided: log (``prenet/*`` too), evaluate, save."""
        if control.should_log and self.session.config.metrics_every_n_steps is None:
            self.session.log_metrics()
        if control.should_evaluate:
            self._evaluations_left = self._eval_datasets
            self.session.validation_start()
        elif control.should_save:
            self.session.steps.checkpoint_start()

    # -- evaluation and saves ----------------------------------------------------------------------
    @_trainer_event
    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._sanity:
            self.session.steps.validation_batch_end(sanity=True)

    @_trainer_event
    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        session = self.session
        if self._sanity:
            self._sanity = False
            session.steps.validation_end(sanity=True)
            return
        if not self._training or self._evaluations_left <= 0:
            return  # an evaluation outside training (trainer.evaluate()) is not part of the run
        self._evaluations_left -= 1
        if self._evaluations_left:
            return  # more evaluation datasets to go
        session.steps.validation_end()
        if control.should_save or self._save_after_eval:
            # a dangling start (no save after all: save_strategy="best") is replaced by the next one
            session.steps.checkpoint_start()

    @_trainer_event
    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._training:
            self.session.steps.checkpoint_end()

    # -- an exception in the run: how it ended, and nothing left behind -------------------------------
    def _guard_method(self, trainer: Any, name: str) -> None:
        """Wrap ``trainer.train`` (or ``training_step``) on the instance: the Trainer has no event for an exception.

        The wrapper calls the Trainer's own method with the same arguments and re-raises whatever it
        raises, unchanged, after ending the run as "interrupted" (Ctrl+C) or "failed" and removing
        every hook; wrapping ``train`` also tells when the call began (its set-up counts in the run).
        The session's cleanup puts back exactly what the instance had (`wrap_method`); a method
        this callback guards already is left as it is.
        """
        if getattr(trainer.__dict__.get(name), "prenet_guard_of", None) is self:
            return
        callback = self

        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(original)
            def guarded(*args: Any, **kwargs: Any) -> Any:
                if name == "train":
                    callback._train_called_at = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                except BaseException as error:
                    callback._end_with(error)
                    raise

            guarded.prenet_guard_of = callback  # type: ignore[attr-defined]
            return guarded

        self.session.add_cleanup(wrap_method(trainer, name, make))

    def _end_with(self, error: BaseException) -> None:
        if self._training:
            self._training = False
            self.session.fit_end(*exception_reason(error))
        self.session.close()

    # -- forward hook: where backward begins ------------------------------------------------------
    def _open_batch(self) -> None:
        self._open = True
        self._forward_done = False
        self.session.batch_start()

    def _install_forward_hook(self, model: torch.nn.Module) -> None:
        """Where backward begins, on the steps whose phases are timed (`PhaseHooks`; removed at the end)."""
        hook = self._forward_hook = PhaseHooks(lambda: [model.register_forward_hook(self._on_forward)])
        hook.follow(True)
        self.session.add_cleanup(hook.remove)

    def _on_forward(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if self._open and not self._forward_done and torch.is_grad_enabled() and not self.session.guard.disabled:
            self._forward_done = True
            try:
                self.session.before_backward()
            except Exception as error:  # noqa: BLE001 - a hook must never raise into the model
                self.session.fail(error, where="PreNeTTrainerCallback forward hook")


# ------------------------------------------------------------------------------------------------
def _calling_trainer(callback: Any) -> Any:
    """The `transformers.Trainer` whose callback handler is calling ``callback`` (None when there is none).

    The fallback for a callback that was not given its Trainer with `PreNeTTrainerCallback.attach`:
    the Trainer's callback events pass no handle on it (``args, state, control, model, ...``), so
    the call stack is searched for a frame whose ``self`` is a Trainer holding this callback. Any
    failure to find one returns None; the callback then notes what it cannot do.
    """
    from transformers import Trainer

    frame = sys._getframe(1)
    for _ in range(_CALLER_DEPTH):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Trainer):
            handler = getattr(candidate, "callback_handler", None)
            if any(cb is callback for cb in getattr(handler, "callbacks", ())):
                return candidate
        frame = frame.f_back
    return None


def _reporting_sinks(callback: PreNeTTrainerCallback, trainer: Any) -> list[Callable[[dict[str, float], int], None]]:
    """``prenet/*`` metrics to the Trainer's reporting callbacks (``report_to``), as its own logs reach them."""
    if trainer is None:
        return []
    from transformers.integrations import INTEGRATION_TO_CALLBACK

    kinds = tuple(INTEGRATION_TO_CALLBACK.values())
    reporters = [cb for cb in trainer.callback_handler.callbacks if isinstance(cb, kinds)]
    if not reporters:
        return []

    def sink(metrics: dict[str, float], step: int) -> None:
        if callback._event is None:
            return
        args, state, control = callback._event
        for reporter in reporters:
            reporter.on_log(args, state, control, logs=dict(metrics), model=callback._model)

    return [sink]
