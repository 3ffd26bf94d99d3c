"""`PreNeTCallback`: predict a Lightning fit's wall time a few steps in, and refine it.

    from prenet_callbacks import PreNeTCallback
    trainer = Trainer(max_epochs=20, callbacks=[PreNeTCallback()])

Each instance is a ``Callback`` of the Lightning package(s) the process has imported when it is built
(``lightning.pytorch`` or ``pytorch_lightning``: the user's Trainer comes from one of them), so either
trainer accepts it and the other package, which takes seconds to import, is never imported for it.
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
from prenet_callbacks.measure.clocks import clock_for
from prenet_callbacks.session.arguments import metrics_interval, validate_session_config
from prenet_callbacks.measure.memory_account import state_sizes
from prenet_callbacks.session.model_parallel_run import run_layout
from prenet_callbacks.outputs.render import print_report
from prenet_callbacks.session.run_info import batch_size_of, describe_run
from prenet_callbacks.session.machine import PredictionSession, SessionConfig
from prenet_callbacks.outputs.terminal import print_line


if not compat.installed_packages():
    raise ImportError(f"PreNeTCallback needs Lightning, which is not installed: {compat.EXTRAS_HINT}")


@functools.lru_cache(maxsize=None)
def _with_bases(cls: type, bases: tuple[type, ...]) -> type:
    """``cls`` extended with Lightning ``Callback`` classes it lacks, under its own name (the same
    ``state_key`` in checkpoints, the same name in Lightning's messages)."""
    return type(cls.__name__, (cls, *bases), {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                              "__doc__": cls.__doc__})


def _lightning_ready(cls: type) -> type:
    """The class to instantiate: ``cls``, plus the ``Callback`` of each Lightning package imported by now
    that it does not derive from yet. With none imported (the callback is built before any Trainer
    module is), those installed are imported: the Trainer may come from either."""
    packages = compat.imported_packages() or compat.installed_packages()
    missing = tuple(base for base in compat.lightning_classes("callbacks", "Callback", packages)
                    if not issubclass(cls, base))
    return _with_bases(cls, missing) if missing else cls


# Its bases: the Callback of each Lightning package imported before this module (none, when PreNeT is
# imported first); `__new__` adds the others the process has imported by the time an instance is built.
class PreNeTCallback(*compat.lightning_classes("callbacks", "Callback")):  # type: ignore[misc]
    """Profile the first optimizer steps and predict the whole fit's wall time.

    Args:
        warmup_steps: optimizer steps skipped before anything is measured (allocator, cuDNN
            autotuning, ``torch.compile``).
        profile_steps: optimizer steps profiled per module (forward/backward time, ops, features).
        timing_steps: clean optimizer steps timed before the first prediction (fewer in short runs,
            so that it comes within the first few percent of the run).
        report_path: where rank 0 writes the JSON report; default ``<trainer.log_dir>/prenet_report.json``.
        metrics_every_n_steps: log ``prenet/*`` metrics every this many optimizer steps, in rows of their own;
            None (the default): with the Trainer's own metrics, in its rows, on its ``log_every_n_steps``.
            (``log_every_n_steps``, the old name, still works with a DeprecationWarning.)
        targets: other hardware to project onto (``["A100", "8x H100"]``, tensor/pipeline layouts such as
            ``"4x8 H100 tp=8 pp=4"``: docs/model-parallel.md); ``None`` for the default set, ``[]`` for none.
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

    def __new__(cls, *args: Any, **kwargs: Any) -> PreNeTCallback:
        return super().__new__(_lightning_ready(cls))

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
        super().__init__()
        self.config: SessionConfig = validate_session_config(
            warmup_steps=warmup_steps, profile_steps=profile_steps, timing_steps=timing_steps,
            metrics_every_n_steps=metrics_interval(metrics_every_n_steps, log_every_n_steps, "PreNeTCallback",
                                                   default=None),
            report_path=report_path, targets=targets,
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
        session.outputs.is_rank_zero = bool(trainer.is_global_zero)
        session.config.report_path = self._user_report_path or default_report_path(trainer.log_dir or
                                                                                     trainer.default_root_dir)
        session.outputs.printer = print_report
        session.outputs.logger_sinks = _logger_sinks(trainer, pl_module, own_rows=session.config.metrics_every_n_steps is not None)
        session.outputs.publishers = [p for p in session.outputs.publishers if not getattr(p, "tensorboard", False)]
        session.outputs.publishers[:0] = [_tensorboard_publisher(logger, trainer) for logger in trainer.loggers
                                  if compat.is_tensorboard_logger(logger)]
        startup = startup_seconds(trainer, created_at=self._created_at)
        session.use_clock(clock_for(_root_device(trainer, pl_module)))
        session.fit_start(current=_current_run(trainer, pl_module), framework="lightning",
                          start="resumed" if trainer.ckpt_path else "fresh",
                          limits=limits_from_trainer(trainer, self._note), startup_s=startup)
        if trainer.fast_dev_run:
            note_once(session, f"fast_dev_run: Lightning runs {int(trainer.fast_dev_run)} batch(es) as a check, too "
                                "few to predict from; remove fast_dev_run for a prediction")
            if session.outputs.is_rank_zero and session.config.print_report:
                print_line("PreNeT: fast_dev_run runs a few batches as a check: no prediction (remove "
                           "fast_dev_run to get one)")
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
        session.quiet.enabled = True   # batches between the session's events keep their time only
        if trainer.optimizers:
            session.note_optimizer(trainer.optimizers[0])
        session.profile_model(lambda: _make_profiler(trainer, pl_module, session.device_clock))
        if compat.holds_whole_model(trainer.strategy):   # a sharded model cannot be called outside its step
            session.window.probe_eval_forward(pl_module)
        session.facts.note_validation_batch_size(_val_batch_size(trainer))

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
            self.session.facts.note_validation_batch_size(batch_size_of(batch))

    # The four phase hooks do nothing between the steps whose phases are timed (`phase_sampling`): one
    # attribute read, then the session's own guarded event.
    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if self.session.phase_marks:
            self._batch_start(batch)

    @guarded_hook
    def _batch_start(self, batch: Any) -> None:
        session = self.session
        if "batch_size" not in session.report.current:
            session.facts.note_run_facts(batch_size=batch_size_of(batch))
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

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        quiet = self.session.quiet
        # between the session's events: a batch that stepped once, with nothing for the loggers, keeps its time only
        # (`prenet_callbacks.session.quiet_steps`); the session replays it before its next event
        if quiet.left and quiet.keep(lambda: self._quiet_step(trainer)):
            self._last_global_step += 1
            return
        self._train_batch_end(trainer, pl_module)

    def _quiet_step(self, trainer: Any) -> int | None:
        """The global step of a batch that may keep its time only, else None."""
        step = trainer.global_step
        quiet = (step == self._last_global_step + 1 and not trainer.should_stop
                 and not (self.session.config.metrics_every_n_steps is None and _trainer_logs(trainer, step)))
        return step if quiet else None

    @guarded_hook
    def _train_batch_end(self, trainer: Any, pl_module: Any) -> None:
        global_step = int(trainer.global_step)
        stepped = global_step != self._last_global_step
        self._last_global_step = global_step
        session = self.session
        if stepped and session.measurements.state_bytes is None and session.steps_seen >= 1:
            # after the first step: optimizers create their state lazily
            session.facts.set_memory_account(state_sizes(pl_module, trainer.optimizers, world=trainer.world_size))
        session.batch_end(stepped=stepped, global_step=global_step)
        if stepped and session.config.metrics_every_n_steps is None and _trainer_logs(trainer):
            session.log_metrics(global_step)

    @guarded_hook
    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self.session.epoch_end(whole=not trainer.should_stop)   # a stop (callback, max_time) cuts the epoch short

    # -- validation -------------------------------------------------------------------------------
    @guarded_hook
    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        if _in_fit(trainer):
            self.session.validation_start(sanity=bool(trainer.sanity_checking))

    @guarded_hook
    def on_validation_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:
        self.session.steps.validation_batch_end(sanity=bool(trainer.sanity_checking))

    @guarded_hook
    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        self.session.steps.validation_end(sanity=bool(trainer.sanity_checking))

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
                session.guard.call(session.steps.checkpoint_start)   # outside any hook: under the session's guard
                try:
                    return original(*args, **kwargs)
                finally:
                    session.guard.call(session.steps.checkpoint_end)

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
def _logger_sinks(trainer: Any, pl_module: Any, *, own_rows: bool) -> list[Callable[[dict[str, float], int], None]]:
    """Where ``prenet/*`` metrics go: by default ``pl_module.log`` (Lightning writes them with the step's other
    metrics, in the same rows of every logger); with ``metrics_every_n_steps`` each logger directly, in rows of
    their own at that interval (nothing added to them, the epoch neither)."""
    if not trainer.loggers:
        return []
    if own_rows:
        return [_own_rows(logger) for logger in trainer.loggers]

    def sink(metrics: dict[str, float], step: int) -> None:
        pl_module.log_dict(metrics, on_step=True, on_epoch=False, prog_bar=False, logger=True, rank_zero_only=True)

    return [sink]


def _own_rows(logger: Any) -> Callable[[dict[str, float], int], None]:
    return lambda metrics, step: logger.log_metrics(metrics, step=step)


def _trainer_logs(trainer: Any, step: int | None = None) -> bool:
    """Whether Lightning writes this step's metrics to its loggers (its ``should_update_logs`` rule, read from
    ``on_train_batch_end`` of a batch that stepped: ``global_step``, or ``step`` where the caller read it, already
    counts it)."""
    every = trainer.log_every_n_steps
    return bool(every) and ((trainer.global_step if step is None else step) % every == 0 or trainer.should_stop)


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
    own = run_layout(pl_module)   # ModelParallelStrategy: DTensor parameters split over its tensor-parallel mesh
    if own is not None:
        extra["model_parallel"] = own
    return describe_run(_root_device(trainer, pl_module), devices=trainer.world_size, precision=str(trainer.precision),
                        strategy=type(trainer.strategy).__name__, framework="lightning", **extra)


def _root_device(trainer: Any, pl_module: Any) -> Any:
    """The device this rank trains on (the strategy's, not a global guess)."""
    return getattr(trainer.strategy, "root_device", None) or pl_module.device


def _make_profiler(trainer: Any, pl_module: Any, clock: Any) -> Any:
    from prenet_callbacks.hardware import current_device
    from prenet_callbacks.measure.profiling import ModuleProfiler

    accelerator = current_device(device=_root_device(trainer, pl_module)).accelerator
    return ModuleProfiler(pl_module, clock=clock, accelerator=accelerator, precision=str(trainer.precision))
