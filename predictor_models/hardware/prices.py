"""Cloud prices: which listed price is *the* price of an accelerator.

Documented default (`default_price`): take each provider's most recent listing for the accelerator
(older snapshots of the same provider are history, not offers), prefer full-machine prices over
GPU-attachment-only ones (GCP N1 + GPU, where the host VM is billed on top), and use the lowest
per-GPU-hour price among them; ties go to the newest date. A price from a user override file
(provider "user") always wins.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from predictor_models.hardware.spec import Price

USER_PROVIDER = "user"


def current_listings(prices: Iterable[Price]) -> list[Price]:
    """Each provider's rows from its latest `price_date` only."""
    prices = list(prices)
    latest: dict[str, str] = {}
    for price in prices:
        if price.price_date > latest.get(price.provider, ""):
            latest[price.provider] = price.price_date
    return [p for p in prices if p.price_date == latest[p.provider]]


def default_price(prices: Iterable[Price]) -> Price | None:
    """The price costs are computed with (rule in the module docstring); None when nothing is listed."""
    listings = current_listings(prices)
    if not listings:
        return None
    user = [p for p in listings if p.provider == USER_PROVIDER]
    if user:
        return max(user, key=lambda p: p.price_date)
    full_machine = [p for p in listings if not p.gpu_only] or listings
    return min(full_machine, key=lambda p: (p.usd_per_gpu_hour, _neg_date(p.price_date)))


@lru_cache(maxsize=512)
def cached_default_price(prices: tuple[Price, ...]) -> Price | None:
    """`default_price` of an accelerator's (immutable) price list, computed once per list."""
    return default_price(prices)


def _neg_date(date: str) -> tuple[int, ...]:
    return tuple(-int(part) for part in date.split("-") if part.isdigit())


def format_price(price: Price | None) -> str:
    """'$2.49/h (2026-09-20)' or '-'."""
    if price is None:
        return "-"
    return f"${price.usd_per_gpu_hour:,.2f}/h ({price.price_date})"
