"""The report's ``measured`` block, typed for its readers.

Written piece by piece while a run goes on (`prenet_callbacks.measure.measured`); read whole by the projection,
the panel and the page. Every key is optional: a run records what it got to measure. Keys this version
does not know are kept in ``extra`` (a newer writer's, or a benchmark's own).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from prenet_callbacks.report_parts._keyed import KeyedPart


@dataclass(frozen=True)
class Measured(KeyedPart):
    """What the run measured (see ``docs/report-schema.md``); None where it measured nothing of that kind."""

    phase_timing: Optional[str] = None          # "cuda_events" when step phases are device times
    memory: Optional[dict[str, Any]] = None     # the window's peak and what it is made of
    layers: Optional[dict[str, Any]] = None     # the per-module table (``layers``, ``limitations``...)
    host: Optional[dict[str, Any]] = None       # eager PyTorch's per-op host costs on this CPU
    coverage: Optional[dict[str, Any]] = None   # per-module sum against a clean step
    op_samples: Optional[dict[str, Any]] = None
    warmup_steps: Optional[int] = None
    profiled_steps: Optional[int] = None
    step_phases: Optional[dict[str, float]] = None   # one profiled optimizer step: data_s, forward_s...
    batch_s: Optional[float] = None
    clean_batches: Optional[int] = None
    batch_run_mean_s: Optional[float] = None
    contention: Optional[dict[str, Any]] = None   # clean batches' quantiles and the machine's load (`contention`)
    data_wait_s: Optional[float] = None
    compile_s: Optional[float] = None
    validation: Optional[dict[str, Any]] = None
    checkpoint: Optional[dict[str, Any]] = None
    epoch_boundary: Optional[dict[str, Any]] = None
    setup_s: Optional[float] = None
    timing: Optional[dict[str, Any]] = None
    absent: frozenset[str] = frozenset()
    extra: dict[str, Any] = field(default_factory=dict)

    def _out(self, key: str, value: Any) -> Any:
        return value   # nested tables are large and read-only here: no copies

    @property
    def layer_rows(self) -> list[dict[str, Any]]:
        """The per-module rows of the profile (empty without one)."""
        return list((self.layers or {}).get("layers") or [])
