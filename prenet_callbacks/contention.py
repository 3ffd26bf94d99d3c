"""A busy machine, seen from the run: how its clean steps spread, and what else loads the CPU.

Another CPU-bound process beside the run slows its steps by whatever share of the cores it takes, and
that share moves (a shared host ran this project's steps at 2 ms and 170 ms within a minute). The
mean of such steps is the run's real pace here, and the ETA uses it, but it is not the model's own
host time: carried to a GPU it would become every target's step. Two measurements say the machine is
busy: the spread of the recent clean batches (the 90th over the 10th percentile) and the 1-minute
load average beyond the run's own threads. `contention` gives both, read at each prediction (no
per-batch cost); the projection takes a CPU run's host time from its faster steps (`CLEAN_QUANTILE`)
whenever they are clearly faster than the mean.
"""
from __future__ import annotations

import os
from typing import Any

from prenet_callbacks.estimators import RobustDuration

# The clean steps' quantile the host time comes from: a step that nothing else slowed (the 20th
# percentile, not the minimum: one lucky step is not the model's pace).
CLEAN_QUANTILE = 0.2
_SPREAD_BUSY = 2.0        # p90 / p10 of clean batches at or above this: the steps are not one pace
_OTHERS_BUSY = 1.0        # load average beyond the run's own threads: at least one other busy core's worth
_MIN_BATCHES = 8
LINE_START = "the machine is busy"


def contention(batch: RobustDuration, *, threads: int, cores: int | None = None,
               load: float | None = None) -> dict[str, Any] | None:
    """The clean batches' quantiles and the machine's load; None before `_MIN_BATCHES` clean batches."""
    if len(batch.recent) < _MIN_BATCHES:
        return None
    cores = cores or os.cpu_count() or 1
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (OSError, AttributeError):   # not on this OS
            load = None
    p10, p20, p50, p90 = (batch.quantile(q) for q in (0.1, CLEAN_QUANTILE, 0.5, 0.9))
    others = max(0.0, load - threads) if load is not None else None
    spread = p90 / p10 if p10 else None
    busy = bool((spread is not None and spread >= _SPREAD_BUSY) or (others is not None and others >= _OTHERS_BUSY))
    return {"p10_s": p10, "p20_s": p20, "p50_s": p50, "p90_s": p90, "spread": round(spread, 3) if spread else None,
            "load_1min": round(load, 2) if load is not None else None, "cores": cores, "threads": threads,
            "busy": busy}


def busy_line(found: dict[str, Any] | None) -> str | None:
    """One line for the panel when the machine is busy, naming what was measured; None when it is not."""
    if not found or not found["busy"]:
        return None
    parts = []
    if found["load_1min"] is not None:
        parts.append(f"load average {found['load_1min']:.1f} on {found['cores']} cores beside this run's "
                     f"{found['threads']} thread{'s' if found['threads'] != 1 else ''}")
    if found["spread"]:
        parts.append(f"clean steps {_ms(found['p10_s'])} to {_ms(found['p90_s'])} (10th to 90th percentile)")
    return (f"{LINE_START}: " + "; ".join(parts) + ". The ETA follows the run's real pace here; other hardware is "
            "projected from the faster steps")


def note_contention(limitations: list[str], found: dict[str, Any] | None) -> None:
    """Keep one current busy-machine line among the report's limitations (replacing the previous one)."""
    limitations[:] = [line for line in limitations if not line.startswith(LINE_START)]
    line = busy_line(found)
    if line:
        limitations.append(line)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
