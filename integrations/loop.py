"""`Tracker`: predict the wall time of a plain PyTorch or `accelerate` training loop, a few steps in.

    from prenet_callbacks import Tracker

    tracker = Tracker(total_steps=10_000, model=model, optimizer=optimizer, eval_every=500, checkpoint_every=2000)
    for step, batch in enumerate(loader, start=1):
        loss = model(batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        tracker.step()                          # once per optimizer step
        if step % 500 == 0:
            with tracker.validation():
                evaluate(model)
        if step % 2000 == 0:
            with tracker.checkpoint():
                torch.save(model.state_dict(), "ckpt.pt")
    tracker.close()                             # the actual time; the report is finished
    tracker.report                              # the same `Report` as PreNeTCallback's

The run is timed from the tracker's creation to `close()` (also the end of a ``with Tracker(...)``
block). Given the ``model``, forward hooks mark where each step's compute begins (what comes
before is data loading) and a short window is profiled per module; given the ``optimizer``, its
step hooks mark the optimizer phase. After the first prediction these hooks are registered for one
step in eight only, or fewer on short steps (`prenet_callbacks.measure.phase_sampling`); ``step()`` times every step, and between the
session's events (a marked step, a refinement, metrics, a validation or save) it only keeps the time, which the
session replays at its next event (`prenet_callbacks.session.quiet_steps`). With an
``accelerator``, world size, device, mixed precision and the main process come from it, ``step()`` calls that do not end an accumulation cycle
(``accelerator.sync_gradients`` is False) are ignored, and ``prenet/*`` metrics go to
``accelerator.log``.
"""
from __future__ import annotations

import contextlib
import functools
import os
from typing import Any, Iterator, Sequence

import torch
from torch import nn

from integrations.loop_run import LoopRun, check_schedule, loop_config, memory_account, module_profiler, torch_optimizer
from integrations.plumbing import PhaseHooks, note_once
from prenet_callbacks.session.arguments import metrics_interval
from prenet_callbacks.measure.loader_epochs import watch_loader_epochs
from prenet_callbacks.projection.ops.precision import PRECISIONS, parse_precision
from prenet_callbacks.report import Report
from prenet_callbacks.session.model_parallel_run import run_layout
from prenet_callbacks.session.run_info import batch_size_of, describe_run

# accelerate's mixed_precision -> Lightning's spelling (what the report and the projection read)
_ACCELERATE_PRECISION = {"no": "32-true", "fp16": "16-mixed", "bf16": "bf16-mixed", "fp8": "bf16-mixed"}


def _counted(method: Any) -> Any:
    """A Tracker hook whose whole time is PreNeT's own (`prenet_callbacks.session.own_time`), the wrapper's included."""
    @functools.wraps(method)
    def hook(self: "Tracker", *args: Any) -> Any:
        own = self.run.session.own_time
        start = own.enter()
        try:
            return method(self, *args)
        finally:
            own.leave(start)

    return hook


class Tracker:
    """Measure a training loop's first steps and predict the whole run's wall time.

    Args:
        total_steps: optimizer steps in the whole run (counted from its start, like ``start_step``);
            ``None`` gives a rate (time per step) and says that the total is unknown.
        model: the ``nn.Module`` being trained: per-module profile and forward/backward split.
        optimizer: the ``torch.optim.Optimizer`` (or accelerate's wrapper): optimizer phase and
            state size for the checkpoint estimate.
        accelerator: an ``accelerate.Accelerator``: world size, device, mixed precision, main
            process, accumulation cycles and the trackers that ``prenet/*`` metrics go to.
        start_step: optimizer steps already done (a resumed run); they are not predicted.
        eval_every, checkpoint_every: the loop evaluates / saves after every this many optimizer
            steps (the blocks it wraps in ``validation()`` / ``checkpoint()``); planned and predicted.
        eval_batches: batches in one evaluation, for its estimate until the first one is measured.
        precision: Lightning's spelling ("32-true", "bf16-mixed", ...); default from the
            accelerator, else "32-true". The projection to other hardware reads it.
        report_path: where the main process writes the JSON report; default ``./prenet_report.json``.
        metrics_every_n_steps: log ``prenet/*`` metrics (``accelerator.log``) every this many optimizer steps
            (``log_every_n_steps``, the old name, still works with a DeprecationWarning).
        targets, warmup_steps, profile_steps, timing_steps, print_report, profile_layers, predictor, html,
            batch_convention, provider, allocator_probe: as for `PreNeTCallback` (steps are optimizer steps).

    Raises:
        ValueError: a bad argument (named in the message, with the fix).

    Example::

        with Tracker(total_steps=len(loader) * epochs, model=model, optimizer=optimizer) as tracker:
            for epoch in range(epochs):
                for batch in loader:
                    train_step(batch)
                    tracker.step()
        print(tracker.report.actual)
    """

    def __init__(
        self,
        total_steps: int | None = None,
        *,
        model: nn.Module | None = None,
        optimizer: Any = None,
        accelerator: Any = None,
        start_step: int = 0,
        eval_every: int | None = None,
        eval_batches: int | None = None,
        checkpoint_every: int | None = None,
        precision: str | None = None,
        report_path: str | os.PathLike[str] | None = None,
        targets: Sequence[str] | None = None,
        warmup_steps: int = 3,
        profile_steps: int = 3,
        timing_steps: int = 20,
        metrics_every_n_steps: int = 50,
        print_report: bool = True,
        profile_layers: bool = True,
        predictor: Any = None,
        html: bool | None = None,
        batch_convention: str = "per_device",
        provider: str | None = None,
        allocator_probe: bool = False,
        log_every_n_steps: int | None = None,
    ) -> None:
        _check_objects(model, optimizer, accelerator)
        if isinstance(start_step, bool) or not isinstance(start_step, int) or start_step < 0:
            raise ValueError(f"start_step must be an integer >= 0 (optimizer steps already done), got {start_step!r}; "
                             "pass e.g. start_step=0")
        schedule = check_schedule(total_steps, start_step=start_step, eval_every=eval_every,
                                  eval_batches=eval_batches, checkpoint_every=checkpoint_every)
        precision = _check_precision(precision, accelerator)
        config = loop_config(
            warmup_steps=warmup_steps, profile_steps=profile_steps, timing_steps=timing_steps,
            metrics_every_n_steps=metrics_interval(metrics_every_n_steps, log_every_n_steps, "Tracker", default=50),
            report_path=report_path, targets=targets,
            print_report=print_report, profile_layers=profile_layers and model is not None, predictor=predictor,
            html=html, batch_convention=batch_convention, provider=provider, allocator_probe=allocator_probe,
        )
        self.model = model
        self.optimizer = torch_optimizer(optimizer)
        self.accelerator = accelerator
        self.run = LoopRun(config, schedule, is_rank_zero=_is_main_process(accelerator), start_step=start_step)
        # steps between the session's events pass it their end time only (`prenet_callbacks.session.quiet_steps`);
        # an accelerator's accumulation cycles and a loop without a model take the full path every step
        self._quiet = self.run.session.quiet
        self._quiet.enabled = model is not None and accelerator is None
        self._open = False           # a step's compute has started (and not yet ended)
        self._forward_done = False   # its first forward has returned (backward comes next)
        self._noted: set[str] = set()  # batch sizes already noted ("train", "validation")
        self._phase_hooks = PhaseHooks(self._register_phase_hooks)
        self._loader_watch: Any = None
        device, self._devices, strategy = _where(model, accelerator)
        session = self.run.session
        try:
            own = run_layout(model) if model is not None else None   # parallelize_module: DTensor tensor parallel
            self.run.start(describe_run(device, devices=self._devices, precision=precision, strategy=strategy,
                                        framework="loop", **({"model_parallel": own} if own else {})),
                           framework="loop", device=device, sinks=_accelerate_sinks(accelerator),
                           make_profiler=(lambda: module_profiler(model, clock=session.device_clock, device=device,
                                                                  precision=precision)) if model is not None else None,
                           unknown_reason="Tracker(total_steps=None): the run's length was not given, so only a "
                                          "rate can be given")
            if model is None:
                note_once(self.run.session, "no model given: no per-module profile, and data loading is not told "
                                            "apart from compute")
            self._install_hooks()
            if model is not None and not any(kind in strategy.upper() for kind in ("FSDP", "DEEPSPEED")):
                # a sharded model cannot be called outside its step
                session.guard.call(session.window.probe_eval_forward, model)
            if model is None:
                self._open_step()  # without forward hooks, a step's time runs from the previous step's end
        except Exception as error:  # noqa: BLE001 - past validation, PreNeT problems never stop the run
            self.run.session.fail(error, where="Tracker")

    # -- public API -------------------------------------------------------------------------------
    @property
    def report(self) -> Report:
        """The `Report`: plan, measurements, prediction history, targets, and ``actual`` after `close`."""
        return self.run.report

    @property
    def steps(self) -> int:
        """Optimizer steps done, counting ``start_step``."""
        return self.run.steps

    def step(self) -> None:
        """One optimizer step has finished (call it right after ``optimizer.step()``)."""
        quiet = self._quiet
        if quiet.left and quiet.keep(lambda: self.run.steps + 1):   # between the session's events: only the time
            self.run.steps += 1
            self._open = self._forward_done = False
            return
        self._full_step()

    @_counted
    def _full_step(self) -> None:
        if not self.run.active:
            return
        try:
            if self.accelerator is not None and not bool(getattr(self.accelerator, "sync_gradients", True)):
                return  # inside an accumulation cycle: the optimizer did not step
            session = self.run.session
            if not self._open and self._phase_hooks.on:
                self._open_step()   # the step's forward was not seen: its compute is timed from here
            if session.measurements.state_bytes is None and session.steps_seen >= 1 and self.model is not None:
                session.facts.set_memory_account(memory_account(self.model, [self.optimizer], world=self._devices))
                session.note_optimizer(torch_optimizer(self.optimizer) if self.optimizer is not None else None)
            self.run.steps += 1
            self._open = self._forward_done = False
            session.batch_end(stepped=True, global_step=self.run.steps)
            live = not session.guard.disabled   # the run was active above; only a failure inside batch_end ends it
            self._phase_hooks.follow(session.phase_marks and live)
            if self.model is None and live:
                self._open_step()
        except Exception as error:  # noqa: BLE001
            self.run.session.fail(error, where="Tracker.step")

    @contextlib.contextmanager
    def train_step(self) -> Iterator[None]:
        """A block around one optimizer step's work (forward, backward, ``optimizer.step()``); ends with `step`.

        An exception out of the block passes through unchanged and ends the run (`close`): the
        report keeps what was measured, and no hook stays behind.
        """
        if self.run.active and not self._open and not self._quiet.left:   # a quiet step's start is not timed
            self._guard(self._open_step)
        try:
            yield
        except BaseException as error:
            self._remove_hooks()
            self.run.end_with(error)
            raise
        self.step()

    @contextlib.contextmanager
    def validation(self) -> Iterator[None]:
        """``with tracker.validation():`` around an evaluation: timed apart from training steps."""
        # the first evaluation's batch size comes from the forward pre-hook: on for it between phase samples too
        hooks_for_size = self.run.active and "validation" not in self._noted and not self._phase_hooks.on
        if hooks_for_size:
            self._guard(lambda: self._phase_hooks.follow(True))
        try:
            with self.run.validation():
                yield
        finally:
            if hooks_for_size:
                self._guard(lambda: self._phase_hooks.follow(self.run.session.phase_marks and self.run.active))

    def checkpoint(self) -> contextlib.AbstractContextManager[None]:
        """``with tracker.checkpoint():`` around a checkpoint save: timed apart from training steps."""
        return self.run.checkpoint()

    def close(self) -> Report:
        """End the run: record the actual time, write the report, remove every hook, and let go of the model,
        optimizer and accelerator (their memory is the user's to free; the report stays). Idempotent."""
        self._remove_hooks()
        try:
            return self.run.end()
        finally:
            # PreNeT's own objects refer to each other; were the model among them, only a collection would free it
            self.model = self.optimizer = self.accelerator = None

    def __enter__(self) -> "Tracker":
        return self

    def __exit__(self, kind: Any, error: BaseException | None, trace: Any) -> None:
        if error is not None and self.run.active:
            self._remove_hooks()
            self.run.end_with(error)  # the loop raised: interrupted (Ctrl+C) or failed, with what was measured
        self.close()

    # -- hooks ------------------------------------------------------------------------------------
    def _guard(self, action: Any) -> None:
        try:
            action()
        except Exception as error:  # noqa: BLE001 - by design: monitoring never breaks training
            self.run.session.fail(error, where="Tracker")

    def _open_step(self) -> None:
        self._open = True
        self._forward_done = False
        self.run.session.batch_start()

    def _install_hooks(self) -> None:
        self.run.session.add_cleanup(self._remove_hooks)
        self._phase_hooks.follow(True)
        # a DataLoader's epochs: planned from its length, each new iterator an epoch boundary (loader_epochs)
        self._loader_watch = watch_loader_epochs(self.run.session, lambda: self.run.active and not self.run.in_block)

    def _register_phase_hooks(self) -> list[Any]:
        """The model's forward pre-hook and hook, and until phases are sampled the optimizer's step pre-hook (the
        backward and optimizer split is the profiling window's alone); `PhaseHooks` registers them for the
        steps whose phases are timed."""
        handles = []
        if self.model is not None:
            handles.append(self.model.register_forward_pre_hook(self._on_forward_pre))
            handles.append(self.model.register_forward_hook(self._on_forward))
        if (self.optimizer is not None and hasattr(self.optimizer, "register_step_pre_hook")
                and not self.run.session.phase_sampler.sampling):
            handles.append(self.optimizer.register_step_pre_hook(self._on_optimizer_pre))
        return handles

    def _remove_hooks(self) -> None:
        self._phase_hooks.remove()
        watch, self._loader_watch = self._loader_watch, None
        if watch is not None:
            watch.remove()

    def _training_forward(self) -> bool:
        return self.run.active and not self.run.in_block and torch.is_grad_enabled()

    @_counted
    def _on_forward_pre(self, module: nn.Module, args: Any) -> None:
        if self._training_forward() and not self._open:
            self._note_batch_size("train", args)
            self._guard(self._open_step)
        elif self.run.validating and self.run.active:
            self._note_batch_size("validation", args)

    def _note_batch_size(self, kind: str, args: Any) -> None:
        """The first training and evaluation batch sizes: the evaluation estimate scales with them."""
        if kind in self._noted:
            return
        self._noted.add(kind)
        session = self.run.session
        size = batch_size_of(list(args))
        self._guard(lambda: session.facts.note_run_facts(batch_size=size) if kind == "train"
                    else session.facts.note_validation_batch_size(size))

    @_counted
    def _on_forward(self, module: nn.Module, args: Any, output: Any) -> None:
        if self._training_forward() and self._open and not self._forward_done:
            self._forward_done = True
            self._guard(self.run.session.before_backward)

    @_counted
    def _on_optimizer_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.run.active and self._open:
            session = self.run.session
            self._guard(session.after_backward)
            self._guard(session.before_optimizer_step)


# ------------------------------------------------------------------------------------------------
def _check_objects(model: Any, optimizer: Any, accelerator: Any) -> None:
    if model is not None and not isinstance(model, nn.Module):
        raise ValueError(f"model must be the torch.nn.Module being trained (or None), got {type(model).__name__}; "
                         "pass model=model")
    inner = torch_optimizer(optimizer)
    if optimizer is not None and not isinstance(inner, torch.optim.Optimizer):
        raise ValueError(f"optimizer must be a torch.optim.Optimizer (or accelerate's wrapper of one), got "
                         f"{type(optimizer).__name__}; pass optimizer=optimizer, or None")
    if accelerator is not None and not all(hasattr(accelerator, a) for a in ("num_processes", "mixed_precision",
                                                                               "device", "is_main_process")):
        raise ValueError(f"accelerator must be an accelerate.Accelerator, got {type(accelerator).__name__}; "
                         "pass accelerator=accelerator, or None")


def _check_precision(precision: Any, accelerator: Any) -> str:
    if precision is None:
        if accelerator is None:
            return "32-true"
        mixed = str(getattr(accelerator, "mixed_precision", "no"))
        return _ACCELERATE_PRECISION.get(mixed, "32-true")
    try:   # the projection's own parser: the names and short forms `estimate()` and the CLI accept
        return parse_precision(precision, "highest", conv_tf32=True).name
    except ValueError:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)} (Lightning's spelling, or a short form "
                         f"such as 'bf16'), got {precision!r}; pass e.g. precision='bf16-mixed' for a loop under "
                         "torch.autocast(dtype=torch.bfloat16)") from None


def _is_main_process(accelerator: Any) -> bool:
    if accelerator is not None:
        return bool(accelerator.is_main_process)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank() == 0
    return True


def _where(model: nn.Module | None, accelerator: Any) -> tuple[Any, int, str]:
    """(device, world size, strategy): from the accelerator, else the model's parameters and torch.distributed."""
    if accelerator is not None:
        strategy = str(getattr(getattr(accelerator, "distributed_type", None), "value", "NO"))
        return accelerator.device, int(accelerator.num_processes), strategy
    first = next(iter(model.parameters()), None) if model is not None else None
    device = first.device if first is not None else torch.device("cpu")
    distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
    devices = torch.distributed.get_world_size() if distributed else 1
    strategy = type(model).__name__ if model is not None and distributed else "single process"
    return device, devices, strategy


def _accelerate_sinks(accelerator: Any) -> list[Any]:
    """``prenet/*`` metrics to the accelerator's trackers (TensorBoard, W&B, ...) once `init_trackers` ran."""
    if accelerator is None:
        return []

    def sink(metrics: dict[str, float], step: int) -> None:
        if getattr(accelerator, "trackers", None):
            accelerator.log(metrics, step=step)

    return [sink]
