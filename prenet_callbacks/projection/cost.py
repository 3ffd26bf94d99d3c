"""Cost of a run on a target: dated on-demand USD per GPU-hour x GPUs x hours."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cost:
    usd_per_gpu_hour: float | None
    usd_per_hour: float | None   # the whole target (all its GPUs)
    total_usd: float | None
    price_date: str | None


def run_cost(accelerator, count: int, seconds: float | None) -> Cost:
    """Cost of `seconds` on `count` such GPUs; None parts where the catalog lists no price."""
    per_gpu = getattr(accelerator, "usd_per_hour", None)
    date = getattr(accelerator, "price_date", None)
    if per_gpu is None:
        return Cost(None, None, None, None)
    node = per_gpu * count
    total = node * seconds / 3600.0 if seconds is not None else None
    return Cost(per_gpu, node, total, date)
