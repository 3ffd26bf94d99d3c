"""How long a multi-process fit ran before the callback first heard of it.

Under DDP, ``trainer.fit()`` launches the other ranks and waits for the process group before any
callback hook runs (several seconds on CPU). That time belongs to the fit's wall time. Process
start times come from ``/proc`` (Linux): a rank spawned by ``fit()`` itself started when the fit
did; the launching rank of Lightning's subprocess launcher knows its children, which it started
at the beginning of ``fit()``. Elsewhere the start-up is not measured (the callback says so).
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from integrations.lightning_compat import launched_processes


def process_start_wall_time(pid: int | str = "self") -> float | None:
    """Wall-clock time (``time.time()`` scale) at which process ``pid`` started; None off Linux."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    # the command name (field 2) may hold spaces: count fields after its closing parenthesis
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        started_after_boot = int(fields[19]) / ticks
    except (IndexError, ValueError):
        return None
    return time.time() - (uptime - started_after_boot)


def startup_seconds(trainer: Any, *, created_at: float, now: float | None = None) -> float | None:
    """Seconds from the start of ``fit()`` to now, for multi-process fits; None when unknown or single-process.

    ``created_at`` is when the callback was constructed (before ``fit()``, in the launching process).
    """
    if trainer.world_size <= 1:
        return None
    now = time.time() if now is None else now
    children = launched_processes(trainer)
    starts = [process_start_wall_time(proc.pid) for proc in children if getattr(proc, "pid", None)]
    starts = [s for s in starts if s is not None]
    if starts:
        return max(0.0, now - min(starts))
    own = process_start_wall_time()
    if own is not None and own > created_at:
        return max(0.0, now - own)  # this rank was started by fit() itself
    return None
