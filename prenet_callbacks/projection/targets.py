"""Which hardware to project onto: the documented default set, or the user's names.

The default set is a handful of popular cloud GPUs and nodes, cheap to top end, each with a
listed on-demand price in the catalog; the current device is always added as the first row.
"""
from __future__ import annotations

from typing import Sequence

from predictor_models.hardware import Target, UnknownHardwareError, parse_target

DEFAULT_TARGETS: tuple[str, ...] = (
    "T4",                  # cheapest common cloud GPU (16 GB)
    "L4",                  # current low-end inference/training GPU (24 GB)
    "A10G",                # AWS g5 (24 GB)
    "A100-SXM4-80GB",      # the workhorse
    "H100-SXM5",           # current top end
    "8x A100-SXM4-80GB",   # a full A100 node (NVLink3 + NVSwitch)
    "8x H100-SXM5",        # a full H100 node (NVLink4 + NVSwitch)
)


def resolve_targets(names: Sequence[str] | None) -> list[Target]:
    """Targets for `names` (None: `DEFAULT_TARGETS`). Unknown names raise `UnknownHardwareError`
    (a ValueError) whose message lists the closest catalog names; duplicates are dropped."""
    chosen = DEFAULT_TARGETS if names is None else names
    if isinstance(chosen, str):
        chosen = [chosen]
    out: list[Target] = []
    seen: set[tuple[int, str]] = set()
    for name in chosen:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"targets must be hardware names such as 'H100' or '8x H100', got {name!r}")
        target = parse_target(name)
        key = (target.count, target.accelerator.name)
        if key not in seen:
            seen.add(key)
            out.append(target)
    return out


__all__ = ["DEFAULT_TARGETS", "Target", "UnknownHardwareError", "resolve_targets"]
