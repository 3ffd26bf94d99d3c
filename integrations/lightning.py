"""`PreNeTCallback`: predict a Lightning fit's wall time a few steps in, and refine it.

    from prenet_callbacks import PreNeTCallback
    trainer = Trainer(max_epochs=20, callbacks=[PreNeTCallback()])

The class derives from the ``Callback`` of every Lightning package installed
(``pytorch_lightning`` and ``lightning.pytorch``), so both trainers accept it.
"""
from __future__ import annotations

import functools
import os
import time
from typing import Any, Callable, Sequence

import torch

from integrations import lightning_compat as compat
from integrations.lightning_plan import limits_from_trainer, plan_from_trainer
from integrations.plumbing import default_report_path, guarded_hook, note_once, wrap_method
from integrations.startup import startup_seconds
from prenet_callbacks.clocks import clock_for
from prenet_callbacks.config import validate_session_config
from prenet_callbacks.memory_account import state_sizes
from prenet_callbacks.render import print_report
from prenet_callbacks.run_info import batch_size_of, describe_run
from prenet_callbacks.session import PredictionSession, SessionConfig


def _callback_bases() -> tuple[type, ...]:
    bases = compat.lightning_classes("callbacks", "Callback")
    if not bases:
        raise ImportError("PreNeTCallback needs pytorch-lightning or lightning: pip install pytorch-lightning")
    return bases


class PreNeTCallback(*_callback_bases()):  # type: ignore[misc]
    """Profile the first optimizer steps and predict the whole fit's wall time.

    Args:
        warmup_steps: optimizer steps skipped before anything is measured (allocator, cuDNN
            autotuning, ``torch.compile``).
        profile_steps: optimizer steps profiled per module (forward/backward time, ops, features).
        timing_steps: clean optimizer steps timed before the first prediction (fewer in short runs,
            so that it comes within the first few percent of the run).
        report_path: where rank 0 writes the JSON report; default ``<trainer.log_dir>/prenet_report.json``.
        log_every_n_steps: log ``prenet/*`` metrics this often (optimizer steps), refining the prediction at
            those steps while refinements cost at most 0.2% of the run.
        targets: other hardware to project onto (``["A100", "8x H100"]``); ``None`` for the default set,
            ``[]`` for none.
        print_report: print the table on rank 0 after the first prediction.
        profile_layers: set False to skip the per-module profile and keep only step timing.
        predictor: the op-time predictor for the projection: None for the shipped one, or the path
            of a ``predictor.json`` (or its folder) from ``prenet train --extra`` or ``prenet
            calibrate``; loaded here, so a bad file fails now rather than mid-fit.
        html: write ``prenet_report.html`` (charts, self-contained) beside the JSON report after the
            first prediction and at the end (None, the default, or True); False: no page.
        batch_convention: how multi-GPU targets (``"8x H100"``) run the same data: ``"per_device"``
            keeps each GPU's batch (the global batch grows, fewer steps), ``"global"`` keeps the
            global batch (each GPU gets a share, the same steps).
        provider: price the target rows with one provider's listings (``"Lambda"``, ``"GCP"``, ...;
            case-insensitive); None: the cheapest current listing of each target's GPU count. An
            unknown name raises at construction, listing the known providers.
        allocator_probe: on a CPU under glibc, trim the heap (``malloc_trim(0)``) once before an untimed
            warm-up batch to price the state where every step re-faults its memory, and let the band
            reach it. This changes the process's heap for the rest of the run, so it is off by default:
            the callback then only counts the timed batches' page faults.

    Raises:
        ValueError: an argument out of range or of the wrong type (the message names the fix).

    Two ``PreNeTCallback`` in one ``Trainer`` need different ``report_path`` values (Lightning keys
    a callback's checkpointed state by it).

    Example::

        trainer = Trainer(max_epochs=20, callbacks=[PreNeTCallback(targets=["A100", "8x H100"])])
        trainer.fit(model, datamodule)
        trainer.callbacks[0].report.actual   # {'fit_s': ..., 'first_prediction_error': ...}

    Attributes:
        report: the `Report` (also written as JSON), with the history of predictions.
    """

    def __init__(
        self,
        warmup_steps: int = 3,
        profile_steps: int = 3,
        report_path: str | os.PathLike[str] | None = None,
        log_every_n_steps: int = 50,
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
    ) -> None:
        super().__init__()
        self.config: SessionConfig = validate_session_config(
            warmup_steps=warmup_steps, profile_steps=profile_steps, timing_steps=timing_steps,
            log_every_n_steps=log_every_n_steps, report_path=report_path, targets=targets,
            print_report=print_report, profile_layers=profile_layers, predictor=predictor, html=html,
            batch_convention=batch_convention, provider=provider, allocator_probe=allocator_probe,
        )
        self._user_report_path = self.config.report_path
        self.session = PredictionSession(self.config)
        self._last_global_step = 0
        self._created_at = time.time()  # wall clock: a rank spawned later by fit() started after it

    @property
    def report(self):  # noqa: ANN201 - `Report`, imported lazily by users
        return self.session.report

    @property
    def state_key(self) -> str:
        # Lightning reads this on every hook call (for its profiler's labels): build it once.
        key = self.__dict__.get("_state_key")
        if key is None:
            key = self.__dict__["_state_key"] = self._generate_state_key(report_path=str(self._user_report_path))
        return key

    # -- fit lifecycle ------------------------------------------------------------------------------
    @guarded_hook
    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        session = self.session
        session.is_rank_zero = bool(trainer.is_global_zero)
        session.config.report_path = self._user_report_path or default_report_path(trainer.log_dir or
                                                                                     trainer.default_root_dir)
        session.printer = print_report
        session.logger_sinks = [_logger_sink(logger, trainer) for logger in trainer.loggers]
        session.publishers = [p for p in session.publishers if not getattr(p, "tensorboard", False)]
        session.publishers[:0] = [_tensorboard_publisher(logger, trainer) for logger in trainer.loggers
                                  if compat.is_tensorboard_logger(logger)]
        startup = startup_seconds(trainer, created_at=self._created_at)
        session.use_clock(clock_for(_root_device(trainer, pl_module)))
        session.fit_start(current=_current_run(trainer, pl_module), framework="lightning",
                          start="resumed" if trainer.ckpt_path else "fresh",
                          limits=limits_from_trainer(trainer, self._note), startup_s=startup)
        if trainer.fast_dev_run:
            note_once(session, f"fast_dev_run: Lightning runs {int(trainer.fast_dev_run)} batch(es) as a check, too "
                                "few to predict from; remove fast_dev_run for a prediction")
            if session.is_rank_zero and session.config.print_report:
                print("PreNeT: fast_dev_run runs a few batches as a check: no prediction (remove fast_dev_run "
                      "to get one)")
        if startup is None and trainer.world_size > 1:
            note_once(session, "process start-up before on_fit_start (launching ranks, init_process_group) "
                                "could not be measured and is not included")
        self._wrap_save_checkpoint(trainer)

    @guarded_hook
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        session = self.session
        plan = plan_from_trainer(trainer, pl_module, self._note)
        session.set_plan(plan)
        if trainer.val_check_batch is None:
            note_once(session, "time-based validation (val_check_interval as a duration) is not counted")
        self._last_global_step = int(trainer.global_step)
        if trainer.optimizers:
            session.note_optimizer(trainer.optimizers[0])
        session.profile_model(lambda: _make_profiler(trainer, pl_module, session.device_clock))
        if compat.holds_whole_model(trainer.strategy):   # a sharded model cannot be called outside its step
            session.probe_eval_forward(pl_module)
        session.note_validation_batch_size(_val_batch_size(trainer))

    @guarded_hook
    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        reason, detail = _end_reason(trainer, self._note)
        self.session.fit_end(reason, detail)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        """A fit that raises (or is interrupted) still gets its report: how far it went, and why it ended."""
        if _in_fit(trainer):
            interrupted = isinstance(exception, KeyboardInterrupt)
            self.session.fit_end("interrupted" if interrupted else "failed",
                                 None if interrupted else f"{type(exception).__name__}: {exception}"[:200])
        self.session.close()

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self.session.close()

    # -- training ---------------------------------------------------------------------------------
    @guarded_hook
    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self.session.train_epoch_start()

    @guarded_hook
    def on_validation_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int,
                                  dataloader_idx: int = 0) -> None:
        if batch_idx == 0 and _in_fit(trainer):
            self.session.note_validation_batch_size(batch_size_of(batch))

    # The four phase hooks do nothing between the steps whose phases are timed (`phase_sampling`): one
    # attribute read, then the session's own guarded event.
    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if self.session.phase_marks:
            self._batch_start(batch)

    @guarded_hook
    def _batch_start(self, batch: Any) -> None:
        session = self.session
        if "batch_size" not in session.report.current:
            session.note_run_facts(batch_size=batch_size_of(batch))
        session.batch_start()

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: torch.Tensor) -> None:
        if self.session.phase_marks:
            self.session.before_backward()

    def on_after_backward(self, trainer: Any, pl_module: Any) -> None:
        if self.session.phase_marks:
            self.session.after_backward()

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        if self.session.phase_marks:
            self.session.before_optimizer_step()

    @guarded_hook
    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        global_step = int(trainer.global_step)
        stepped = global_step != self._last_global_step
        self._last_global_step = global_step
        session = self.session
        if stepped and session.measurements.state_bytes is None and session.steps_seen >= 1:
            # after the first step: optimizers create their state lazily
            session.set_memory_account(state_sizes(pl_module, trainer.optimizers, world=trainer.world_size))
        session.batch_end(stepped=stepped, global_step=global_step)

    @guarded_hook
    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self.session.epoch_end()

    # -- validation -------------------------------------------------------------------------------
    @guarded_hook
    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        if _in_fit(trainer):
            self.session.validation_start(sanity=bool(trainer.sanity_checking))

    @guarded_hook
    def on_validation_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:
        self.session.validation_batch_end(sanity=bool(trainer.sanity_checking))

    @guarded_hook
    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        self.session.validation_end(sanity=bool(trainer.sanity_checking))

    # -- checkpoints ------------------------------------------------------------------------------
    def _wrap_save_checkpoint(self, trainer: Any) -> None:
        """Time every checkpoint write by wrapping this trainer's ``save_checkpoint`` (undone at the end).

        Lightning has no hook after a save is written; the wrapper calls straight through with the
        same arguments and lets every exception pass unchanged. The undo puts back exactly what the
        trainer had (a patch of the user's or another callback's included).
        """
        session = self.session

        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(original)
            def timed_save_checkpoint(*args: Any, **kwargs: Any) -> Any:
                session.checkpoint_start()
                try:
                    return original(*args, **kwargs)
                finally:
                    session.checkpoint_end()

            return timed_save_checkpoint

        session.add_cleanup(wrap_method(trainer, "save_checkpoint", make))

    def _note(self, limitation: str) -> None:
        """A Lightning setting that could not be read (`lightning_compat`): in the report, once."""
        note_once(self.session, limitation)

    # -- resume -----------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        try:
            return self.session.state_dict()
        except Exception as error:  # noqa: BLE001
            self.session.fail(error, where="state_dict")
            return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if state_dict:
            self.session.load_state_dict(state_dict)


# ------------------------------------------------------------------------------------------------
def _logger_sink(logger: Any, trainer: Any) -> Callable[[dict[str, float], int], None]:
    def sink(metrics: dict[str, float], step: int) -> None:
        # Lightning's own rows carry the epoch: without it, CSV rows of prenet/* metrics show a blank one
        logger.log_metrics({**metrics, "epoch": float(trainer.current_epoch)}, step=step)

    return sink


def _tensorboard_publisher(logger: Any, trainer: Any) -> Callable[[Any, str], None]:
    """The panel as text and the hardware chart as an image in this TensorBoard logger."""
    def publish(report: Any, stage: str) -> None:
        from integrations.tensorboard import publish as tensorboard_publish

        tensorboard_publish(report, logger.experiment, step=int(trainer.global_step), stage=stage)

    publish.tensorboard = True  # type: ignore[attr-defined] - replaced, not added again, on the next fit
    return publish


def _val_batch_size(trainer: Any) -> int | None:
    """The first validation loader's batch size, when the plan has loaded it (else the first batch tells)."""
    loaders = trainer.val_dataloaders
    first = loaders[0] if isinstance(loaders, (list, tuple)) and loaders else loaders
    size = getattr(first, "batch_size", None) or getattr(getattr(first, "batch_sampler", None), "batch_size", None)
    return int(size) if isinstance(size, int) and size > 0 else None


def _in_fit(trainer: Any) -> bool:
    fn = trainer.state.fn
    return fn == "fit" or getattr(fn, "value", None) == "fit"


def _end_reason(trainer: Any, note: compat.Note) -> tuple[str, str | None]:
    """Why ``trainer.fit`` returned: its time limit, an early-stopping callback, ``should_stop``, or the plan's end."""
    for callback in trainer.callbacks:
        if compat.is_timer(callback):
            duration = compat.timer_duration(callback, note)
            remaining = callback.time_remaining() if duration is not None else None
            if remaining is not None and remaining <= 0:
                return "time_limit", f"Trainer(max_time={duration:.0f} s) reached"
        if compat.is_early_stopping(callback) and callback.stopped_epoch:
            return "stopped_early", f"EarlyStopping on {callback.monitor} at epoch {callback.stopped_epoch}"
    if trainer.should_stop:
        return "stopped_early", "trainer.should_stop was set"
    return "completed", None


def _current_run(trainer: Any, pl_module: Any) -> dict[str, Any]:
    """What runs where; under Lightning's DeepSpeedStrategy also the ZeRO configuration."""
    extra: dict[str, Any] = {}
    engine = getattr(trainer.strategy, "deepspeed_engine", None)
    if engine is not None:
        from integrations.deepspeed_config import describe_engine

        extra["deepspeed"] = describe_engine(engine)
    return describe_run(_root_device(trainer, pl_module), devices=trainer.world_size, precision=str(trainer.precision),
                        strategy=type(trainer.strategy).__name__, framework="lightning", **extra)


def _root_device(trainer: Any, pl_module: Any) -> Any:
    """The device this rank trains on (the strategy's, not a global guess)."""
    return getattr(trainer.strategy, "root_device", None) or pl_module.device


def _make_profiler(trainer: Any, pl_module: Any, clock: Any) -> Any:
    from prenet_callbacks.hardware import current_device
    from prenet_callbacks.profiling import ModuleProfiler

    accelerator = current_device(device=_root_device(trainer, pl_module)).accelerator
    return ModuleProfiler(pl_module, clock=clock, accelerator=accelerator, precision=str(trainer.precision))
