"""How numbers are shown to people: rounded, with units."""
from __future__ import annotations

import math


def format_duration(seconds: float | None) -> str:
    """``0.4 s``, ``12 s``, ``3m 05s``, ``1h 23m``, ``2d 4h``; ``—`` for unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    seconds = max(0.0, float(seconds))
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def format_step_time(seconds: float | None) -> str:
    """Step times: ``850 µs``, ``42.1 ms``, ``1.25 s``."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def format_usd(amount: float | None) -> str:
    if amount is None or not math.isfinite(amount):
        return "—"
    if 0 < amount < 0.005:
        return "<$0.01"
    if amount < 10:
        return f"${amount:.2f}"
    return f"${amount:,.0f}"


def format_count(value: float | None) -> str:
    """Large counts in engineering units: ``1.2 G``, ``350 M``, ``12 k``."""
    if value is None or not math.isfinite(value):
        return "—"
    for unit, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g}"


def format_percent(fraction: float | None) -> str:
    if fraction is None or not math.isfinite(fraction):
        return "—"
    return f"{fraction * 100:.0f}%"


def plural(count: float | None, noun: str) -> str:
    """``1 epoch``, ``12 epochs``, ``1,152 optimizer steps``."""
    if count is None:
        return f"? {noun}s"
    number = f"{count:,}" if isinstance(count, int) else f"{count:,.0f}"
    return f"{number} {noun}" if count == 1 else f"{number} {noun}s"
