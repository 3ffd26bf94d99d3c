"""`attach`: predict a raw DeepSpeed run's wall time a few optimizer steps in, and refine it.

    engine, *_ = deepspeed.initialize(model=model, config=config, ...)
    prenet = attach(engine, total_steps=10_000, eval_every=500, checkpoint_every=2000,
                    report_path="runs/prenet_report.json")
    for batch in loader:                    # your loop, unchanged
        loss = engine(batch)
        engine.backward(loss)
        engine.step()
        ...                                 # evaluation under torch.no_grad(), engine.save_checkpoint(...)
    prenet.finish()
    prenet.report                           # the same `Report` as PreNeTCallback's

DeepSpeed has no callback API, so `attach` wraps the engine's ``forward``, ``backward``, ``step``
and ``save_checkpoint`` on that instance (a `PipelineEngine`'s ``train_batch`` and ``eval_batch`` instead: one call a
step, measured whole; see `integrations.deepspeed_hooks`) and feeds the shared
`PredictionSession` through the same `LoopRun` as the plain-loop `Tracker`. ``predicted_total_s``
is the wall time from `attach()` to the end of optimizer step ``total_steps`` (and of the
evaluation and checkpoint save the schedule puts after it); then the report is finished and every
wrapper removed. Rank 0 prints the table, writes the JSON report and logs ``prenet/*`` events to
``engine.monitor`` when one is enabled.
"""
from __future__ import annotations

import contextlib
import os
import weakref
from typing import Any, Callable, Iterator, Sequence

import torch

from integrations.deepspeed_config import describe_engine, precision_of
from integrations.deepspeed_hooks import EngineEvents
from integrations.loop_run import LoopRun, check_schedule, loop_config, module_profiler
from prenet_callbacks.session.arguments import metrics_interval
from prenet_callbacks.extras import require_extra
from prenet_callbacks.report import Report
from prenet_callbacks.session.run_info import describe_run
from prenet_callbacks.session.machine import PredictionSession

require_extra("deepspeed", "deepspeed", "integrations.deepspeed (attach)")   # imported when attach() runs

# Instance attribute naming the live handle: a second attach would double-count every event. Kept
# on the engine (not in a module-level map) so that a dropped engine is collected with its handle.
_HANDLE_ATTR = "_prenet_handle"


class DeepSpeedHandle:
    """What `attach` returns: the live report, blocks to time by hand, and the way to finish or detach early."""

    def __init__(self, engine: Any, run: LoopRun) -> None:
        self._engine = weakref.ref(engine)
        self.run = run
        self.events: EngineEvents | None = None

    @property
    def session(self) -> PredictionSession:
        return self.run.session

    @property
    def report(self) -> Report:
        """The `Report`: plan, measurements, prediction history, targets, and ``actual`` at the end."""
        return self.run.report

    @property
    def attached(self) -> bool:
        """True while the engine's methods are wrapped (until the run's end, `finish`, `detach` or a failure)."""
        engine = self._engine()
        return engine is not None and engine.__dict__.get(_HANDLE_ATTR) is self

    @contextlib.contextmanager
    def validation(self) -> Iterator[None]:
        """``with prenet.validation():`` around an evaluation (optional: ``engine(...)`` under no_grad is found
        anyway, but only a block tells when an evaluation after the last step is over)."""
        with self.run.validation():
            yield
        self._after_last_step("eval")

    @contextlib.contextmanager
    def checkpoint(self) -> Iterator[None]:
        """``with prenet.checkpoint():`` around a save that does not go through ``engine.save_checkpoint``."""
        with self.run.checkpoint():
            yield
        self._after_last_step("ckpt")

    def _after_last_step(self, event: str) -> None:
        events = self.events
        if events is not None:
            events.fire(lambda: events.after_last_step(event))

    def finish(self) -> Report:
        """End the run now (after the loop, or a loop that stops before ``total_steps``): record it, write the report, detach."""
        if self.attached:
            self.run.end()
        self.detach()
        return self.report

    def detach(self) -> None:
        """Restore every wrapped method and remove every hook; idempotent. The report is kept."""
        self.session.close()


def attach(
    engine: Any,
    *,
    total_steps: int | None,
    eval_every: int | None = None,
    eval_batches: int | None = None,
    checkpoint_every: int | None = None,
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
) -> DeepSpeedHandle:
    """Start predicting the run of a `deepspeed.DeepSpeedEngine`; call it just before the training loop.

    Args:
        engine: the engine returned by ``deepspeed.initialize`` (with an optimizer).
        total_steps: optimizer steps the whole run makes, counted like ``engine.global_steps``
            (a resumed engine at step 1000 of 5000 takes ``total_steps=5000``); ``None``: the length
            is unknown and only a rate (time per step) is given, until `finish`.
        eval_every: the loop evaluates after every this many optimizer steps (``engine(...)`` under
            ``torch.no_grad()``, or a ``with prenet.validation():`` block); planned and predicted.
        eval_batches: batches in one evaluation, for its estimate until the first one is measured.
        checkpoint_every: the loop calls ``engine.save_checkpoint`` after every this many optimizer steps.
        report_path: where rank 0 writes the JSON report; default ``./prenet_report.json``.
        targets: other hardware to project onto (``["A100", "8x H100"]``); ``None`` for the default
            set, ``[]`` for none.
        metrics_every_n_steps: write ``prenet/*`` events to the engine's monitor every this many optimizer steps
            (``log_every_n_steps``, the old name, still works with a DeprecationWarning).
        warmup_steps, profile_steps, timing_steps, print_report, profile_layers, predictor, html,
        batch_convention, provider, allocator_probe: as for `PreNeTCallback` (steps are optimizer steps).

    Returns:
        A `DeepSpeedHandle` with ``.report``, ``.validation()``, ``.checkpoint()``, ``.finish()`` and ``.detach()``.

    Raises:
        TypeError: ``engine`` is not a training `DeepSpeedEngine`.
        ValueError: a bad argument, or the engine is already attached or past ``total_steps``.
    """
    _check_engine(engine)
    start_step = int(engine.global_steps)
    schedule = check_schedule(total_steps, start_step=start_step, eval_every=eval_every, eval_batches=eval_batches,
                              checkpoint_every=checkpoint_every, step_name="the engine's global_steps")
    config = loop_config(
        warmup_steps=warmup_steps, profile_steps=profile_steps, timing_steps=timing_steps,
        metrics_every_n_steps=metrics_interval(metrics_every_n_steps, log_every_n_steps, "attach", default=50),
        report_path=report_path, targets=targets,
        print_report=print_report, profile_layers=profile_layers, predictor=predictor, html=html,
        batch_convention=batch_convention, provider=provider, allocator_probe=allocator_probe,
    )
    if engine.__dict__.get(_HANDLE_ATTR) is not None:
        raise ValueError("this engine already has PreNeT attached; call .detach() on the first handle before attaching again")

    run = LoopRun(config, schedule, is_rank_zero=int(getattr(engine, "global_rank", 0)) == 0, start_step=start_step)
    handle = DeepSpeedHandle(engine, run)
    session = run.session
    engine.__dict__[_HANDLE_ATTR] = handle
    session.add_cleanup(lambda: engine.__dict__.pop(_HANDLE_ATTR, None) if engine.__dict__.get(_HANDLE_ATTR) is handle else None)
    pipeline = _is_pipeline(engine)
    try:
        device = torch.device(getattr(engine, "device", "cpu"))
        # a pipeline's train_batch is a whole optimizer step, its micro-batches inside DeepSpeed's schedule, where
        # a stage's forwards and backwards interleave: measured as steps, without a per-layer profile
        run.start(_current_run(engine), framework="deepspeed", device=device,
                  accumulate=1 if pipeline else int(engine.gradient_accumulation_steps()), sinks=_monitor_sinks(engine),
                  make_profiler=None if pipeline else lambda: module_profiler(
                      engine.module, clock=session.device_clock, device=device, precision=precision_of(engine)),
                  unknown_reason="attach(total_steps=None): the run's length was not given, so only a rate can be given")
        if not session.guard.disabled:  # a session that already stepped aside must not leave wrappers behind
            handle.events = EngineEvents(engine, run)
            handle.events.install(pipeline=pipeline)
            # quiet steps (`quiet_steps`) where a step is one batch: without accumulation, or a pipeline's train_batch
            session.quiet.enabled = pipeline or int(engine.gradient_accumulation_steps()) == 1
    except Exception as error:  # noqa: BLE001 - past validation, PreNeT problems never stop the run
        session.fail(error, where="deepspeed.attach")
    return handle


# ------------------------------------------------------------------------------------------------
def _check_engine(engine: Any) -> None:
    from deepspeed import DeepSpeedEngine

    if not isinstance(engine, DeepSpeedEngine):
        raise TypeError(f"attach() needs the DeepSpeedEngine returned by deepspeed.initialize(...), got "
                        f"{type(engine).__name__}; pass `engine` from `engine, optimizer, _, _ = deepspeed.initialize(...)`")
    if getattr(engine, "optimizer", None) is None:
        raise TypeError("attach() needs a training engine: this DeepSpeedEngine has no optimizer "
                        "(pass `optimizer=` or an \"optimizer\" section to deepspeed.initialize)")


def _monitor_sinks(engine: Any) -> list[Callable[[dict[str, float], int], None]]:
    """``prenet/*`` metrics to ``engine.monitor`` (TensorBoard, W&B, CSV, Comet) when enabled."""
    monitor = getattr(engine, "monitor", None)
    if monitor is None or not getattr(monitor, "enabled", False):
        return []

    def sink(metrics: dict[str, float], step: int) -> None:
        monitor.write_events([(name, value, step) for name, value in metrics.items()])

    return [sink]


def _is_pipeline(engine: Any) -> bool:
    from deepspeed.runtime.pipe.engine import PipelineEngine

    return isinstance(engine, PipelineEngine)


def pipeline_layout(engine: Any) -> dict[str, Any] | None:
    """``current.model_parallel`` of a `PipelineEngine` split over more than one stage (or a tensor-parallel
    ``mpu``): its stages, its tensor-parallel degree and its micro-batches a step, from its process grid."""
    if not _is_pipeline(engine):
        return None
    grid = engine.grid
    pp = int(grid.get_pipe_parallel_world_size())
    tp = int(grid.get_tensor_model_parallel_world_size()) if hasattr(grid, "get_tensor_model_parallel_world_size") else 1
    if pp <= 1 and tp <= 1:
        return None
    return {"tp": tp, "pp": pp, "micro_batches": int(engine.micro_batches),
            "source": f"a DeepSpeed PipelineEngine of {pp} stages, {int(engine.micro_batches)} micro-batches a step"}


def _current_run(engine: Any) -> dict[str, Any]:
    """What runs where, with the DeepSpeed configuration (and a pipeline's layout)."""
    own = pipeline_layout(engine)
    return describe_run(getattr(engine, "device", "cpu"), devices=getattr(engine, "world_size", 1),
                        precision=precision_of(engine), strategy=type(engine).__name__, framework="deepspeed",
                        deepspeed=describe_engine(engine), **({"model_parallel": own} if own else {}))
