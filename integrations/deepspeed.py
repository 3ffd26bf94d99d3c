"""`attach`: predict a raw DeepSpeed run's wall time a few optimizer steps in, and refine it.

    engine, *_ = deepspeed.initialize(model=model, config=config, ...)
    prenet = attach(engine, total_steps=10_000, report_path="runs/prenet_report.json")
    for batch in loader:                    # your loop, unchanged
        loss = engine(batch)
        engine.backward(loss)
        engine.step()
    prenet.report                           # the same `Report` as PreNeTCallback's

DeepSpeed has no callback API, so `attach` wraps the engine's ``forward``, ``backward``, ``step``
and ``save_checkpoint`` on that instance (see `integrations.deepspeed_hooks`) and feeds the shared
`PredictionSession`, exactly as the Lightning callback does. ``predicted_total_s`` is the wall time
from `attach()` to the end of optimizer step ``total_steps``; when that step ends the report is
finished and every wrapper removed. Rank 0 prints the table, writes the JSON report and logs
``prenet/*`` events to ``engine.monitor`` when one is enabled.
"""
from __future__ import annotations

import numbers
import os
import weakref
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from integrations.deepspeed_config import describe_engine, precision_of
from integrations.deepspeed_hooks import EngineEvents
from prenet_callbacks.config import validate_session_config
from prenet_callbacks.plan import plan_for_steps
from prenet_callbacks.render import print_report as render_report
from prenet_callbacks.report import Report
from prenet_callbacks.run_info import describe_run
from prenet_callbacks.session import PredictionSession

REPORT_FILENAME = "prenet_report.json"

# Instance attribute naming the live handle: a second attach would double-count every event. Kept
# on the engine (not in a module-level map) so that a dropped engine is collected with its handle.
_HANDLE_ATTR = "_prenet_handle"


class DeepSpeedHandle:
    """What `attach` returns: the live report, and the way to finish or detach early."""

    def __init__(self, engine: Any, session: PredictionSession) -> None:
        self._engine = weakref.ref(engine)
        self.session = session

    @property
    def report(self) -> Report:
        """The `Report`: plan, measurements, prediction history, targets, and ``actual`` at the end."""
        return self.session.report

    @property
    def attached(self) -> bool:
        """True while the engine's methods are wrapped (until the last step, `finish`, `detach` or a failure)."""
        engine = self._engine()
        return engine is not None and engine.__dict__.get(_HANDLE_ATTR) is self

    def finish(self) -> Report:
        """End the run now (e.g. a loop that stops before ``total_steps``): record it, write the report, detach."""
        if self.attached:
            self.session.fit_end()
        self.detach()
        return self.report

    def detach(self) -> None:
        """Restore every wrapped method and remove every hook; idempotent. The report is kept."""
        self.session.close()


def attach(
    engine: Any,
    *,
    total_steps: int,
    report_path: str | os.PathLike[str] | None = None,
    targets: Sequence[str] | None = None,
    warmup_steps: int = 3,
    profile_steps: int = 3,
    timing_steps: int = 20,
    log_every_n_steps: int = 50,
    print_report: bool = True,
    profile_layers: bool = True,
    predictor: Any = None,
) -> DeepSpeedHandle:
    """Start predicting the run of a `deepspeed.DeepSpeedEngine`; call it just before the training loop.

    Args:
        engine: the engine returned by ``deepspeed.initialize`` (with an optimizer).
        total_steps: optimizer steps the whole run makes, counted like ``engine.global_steps``
            (a resumed engine at step 1000 of 5000 takes ``total_steps=5000``).
        report_path: where rank 0 writes the JSON report; default ``./prenet_report.json``.
        targets: other hardware to project onto (``["A100", "8x H100"]``); ``None`` for the default
            set, ``[]`` for none.
        warmup_steps, profile_steps, timing_steps, log_every_n_steps, print_report, profile_layers,
        predictor: as for `PreNeTCallback` (steps are optimizer steps).

    Returns:
        A `DeepSpeedHandle` with ``.report``, ``.finish()`` and ``.detach()``.

    Raises:
        TypeError: ``engine`` is not a `DeepSpeedEngine` (or is a pipeline engine).
        ValueError: a bad argument, or the engine is already attached or past ``total_steps``.
    """
    _check_engine(engine)
    total_steps = _check_total_steps(total_steps, int(engine.global_steps))
    config = validate_session_config(
        warmup_steps=warmup_steps, profile_steps=profile_steps, timing_steps=timing_steps,
        log_every_n_steps=log_every_n_steps, report_path=report_path, targets=targets,
        print_report=print_report, profile_layers=profile_layers, predictor=predictor,
    )
    if config.report_path is None:
        config.report_path = Path.cwd() / REPORT_FILENAME
    if engine.__dict__.get(_HANDLE_ATTR) is not None:
        raise ValueError("this engine already has PreNeT attached; call .detach() on the first handle before attaching again")

    session = PredictionSession(config, is_rank_zero=int(getattr(engine, "global_rank", 0)) == 0)
    handle = DeepSpeedHandle(engine, session)
    engine.__dict__[_HANDLE_ATTR] = handle
    session.add_cleanup(lambda: engine.__dict__.pop(_HANDLE_ATTR, None) if engine.__dict__.get(_HANDLE_ATTR) is handle else None)
    try:
        session.printer = render_report  # the session prints on rank 0 only
        session.logger_sinks = _monitor_sinks(engine)
        session.fit_start(current=_current_run(engine))
        session.set_plan(plan_for_steps(total_steps, accumulate=int(engine.gradient_accumulation_steps()),
                                        start_step=int(engine.global_steps)))
        session.profile_model(lambda: _make_profiler(engine))
        if not session.disabled:  # a session that already stepped aside must not leave wrappers behind
            EngineEvents(engine, session, total_steps).install()
    except Exception as error:  # noqa: BLE001 - past validation, PreNeT problems never stop the run
        session.fail(error, where="deepspeed.attach")
    return handle


# ------------------------------------------------------------------------------------------------
def _check_engine(engine: Any) -> None:
    try:
        from deepspeed import DeepSpeedEngine
        from deepspeed.runtime.pipe.engine import PipelineEngine
    except ImportError as error:  # pragma: no cover - deepspeed is a dependency
        raise ImportError("integrations.deepspeed needs DeepSpeed: pip install deepspeed") from error
    if not isinstance(engine, DeepSpeedEngine):
        raise TypeError(f"attach() needs the DeepSpeedEngine returned by deepspeed.initialize(...), got "
                        f"{type(engine).__name__}; pass `engine` from `engine, optimizer, _, _ = deepspeed.initialize(...)`")
    if isinstance(engine, PipelineEngine):
        raise TypeError("attach() does not support pipeline-parallel engines (PipelineEngine.train_batch) yet")
    if getattr(engine, "optimizer", None) is None:
        raise TypeError("attach() needs a training engine: this DeepSpeedEngine has no optimizer "
                        "(pass `optimizer=` or an \"optimizer\" section to deepspeed.initialize)")


def _check_total_steps(total_steps: Any, global_steps: int) -> int:
    if isinstance(total_steps, bool) or not isinstance(total_steps, numbers.Integral):
        raise ValueError(f"total_steps must be a positive integer (optimizer steps in the whole run), got "
                         f"{total_steps!r} ({type(total_steps).__name__}); pass e.g. total_steps=1000")
    total_steps = int(total_steps)
    if total_steps < 1:
        raise ValueError(f"total_steps must be a positive integer, got {total_steps}; pass e.g. total_steps=1000")
    if total_steps <= global_steps:
        raise ValueError(f"total_steps={total_steps} is not beyond the engine's global_steps={global_steps}: "
                         "count total_steps from the start of the run, like engine.global_steps")
    return total_steps


def _monitor_sinks(engine: Any) -> list[Callable[[dict[str, float], int], None]]:
    """``prenet/*`` metrics to ``engine.monitor`` (TensorBoard, W&B, CSV, Comet) when enabled."""
    monitor = getattr(engine, "monitor", None)
    if monitor is None or not getattr(monitor, "enabled", False):
        return []

    def sink(metrics: dict[str, float], step: int) -> None:
        monitor.write_events([(name, value, step) for name, value in metrics.items()])

    return [sink]


def _current_run(engine: Any) -> dict[str, Any]:
    """What runs where, with the DeepSpeed configuration."""
    return describe_run(getattr(engine, "device", "cpu"), devices=getattr(engine, "world_size", 1),
                        precision=precision_of(engine), strategy=type(engine).__name__, framework="deepspeed",
                        deepspeed=describe_engine(engine))


def _make_profiler(engine: Any) -> Any:
    from prenet_callbacks.profiling import ModuleProfiler

    return ModuleProfiler(engine.module, device=torch.device(engine.device))
