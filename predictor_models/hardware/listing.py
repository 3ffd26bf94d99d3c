"""One dated on-demand price listing: the piece the catalog's data classes (`spec`) and the price rule
(`prices`) share. It imports nothing of the catalog, so `spec` -> `prices` -> `listing` has no circle."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Price:
    """One on-demand list price, per GPU-hour, as a provider published it on `price_date`."""

    provider: str
    instance_type: str
    gpus_per_instance: int
    usd_per_gpu_hour: float
    region: str
    price_date: str  # ISO date the source states
    source: str
    notes: str = ""
    gpu_only: bool = False  # True: the host VM is billed separately (not comparable with full-machine prices)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}
