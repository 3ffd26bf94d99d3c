"""Cloud prices: which listed price is *the* price of a target of N GPUs of one accelerator.

Rule (`choose_price`), documented in docs/hardware.md:

1. Current listings only: each provider's rows from its latest `price_date` for the accelerator (older
   snapshots of the same provider are history, not offers).
2. A price from a user override file (provider "user") wins, unless another provider is asked for.
3. ``provider=`` keeps that provider's listings only (case-insensitive); none: no price, with a note.
4. Full-machine prices before GPU-attachment-only ones (GCP N1 + GPU, where the host VM is billed on top).
5. Listings whose instance has exactly the target's GPU count (per node for multi-node targets): the
   cheapest per GPU-hour, ties to the newest date. Where no instance has that count, the per-GPU rate of
   the closest instance size (a 1-GPU target: the smallest instance), cheapest among those, and a note
   says so: a 1-GPU row priced from an 8-GPU instance is an interpretation, not a listing.

`default_price` (what `Accelerator.usd_per_hour` shows) is the price of one GPU by this rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from predictor_models.hardware.listing import Price

USER_PROVIDER = "user"


@dataclass(frozen=True)
class PriceChoice:
    """The listing a cost uses (None: no price) and, when it is not a listing of the asked GPU count or
    there is none, a short note saying why."""

    price: Price | None
    note: str = ""
    exact: bool = True  # the listing's instance has the target's GPU count (or the price is the user's)


def current_listings(prices: Iterable[Price]) -> list[Price]:
    """Each provider's rows from its latest `price_date` only."""
    prices = list(prices)
    latest: dict[str, str] = {}
    for price in prices:
        if price.price_date > latest.get(price.provider, ""):
            latest[price.provider] = price.price_date
    return [p for p in prices if p.price_date == latest[p.provider]]


def choose_price(prices: Iterable[Price], gpus: int = 1, provider: str | None = None) -> PriceChoice:
    """The price of `gpus` GPUs (per node) of one accelerator whose price list is `prices` (rule above)."""
    listings = current_listings(prices)
    if provider is None:
        user = [p for p in listings if p.provider == USER_PROVIDER]
        if user:
            return PriceChoice(max(user, key=lambda p: p.price_date))
    else:
        wanted = provider.strip().lower()
        listings = [p for p in listings if p.provider.lower() == wanted]
    if not listings:
        return PriceChoice(None, "", False)
    pool = [p for p in listings if not p.gpu_only] or listings
    exact = [p for p in pool if p.gpus_per_instance == gpus]
    if exact:
        return PriceChoice(_cheapest(exact))
    size = min({p.gpus_per_instance for p in pool}, key=lambda n: (abs(n - gpus), n))
    chosen = _cheapest([p for p in pool if p.gpus_per_instance == size])
    note = (f"price: no {gpus}-GPU instance listed; per-GPU rate of {chosen.provider}'s {size}-GPU "
            f"{chosen.instance_type or 'instance'} ({chosen.price_date})")
    return PriceChoice(chosen, note, False)


def _cheapest(prices: list[Price]) -> Price:
    return min(prices, key=lambda p: (p.usd_per_gpu_hour, _neg_date(p.price_date)))


def default_price(prices: Iterable[Price]) -> Price | None:
    """The price of one GPU (rule in the module docstring); None when nothing is listed."""
    return choose_price(prices, 1).price


@lru_cache(maxsize=4096)
def cached_choice(prices: tuple[Price, ...], gpus: int = 1, provider: str | None = None) -> PriceChoice:
    """`choose_price` of an accelerator's (immutable) price list, computed once per list, count and provider."""
    return choose_price(prices, gpus, provider)


def cached_default_price(prices: tuple[Price, ...]) -> Price | None:
    """`default_price` of an accelerator's (immutable) price list, computed once per list."""
    return cached_choice(prices, 1, None).price


def _neg_date(date: str) -> tuple[int, ...]:
    return tuple(-int(part) for part in date.split("-") if part.isdigit())


def format_price(price: Price | None) -> str:
    """'$2.49/h (2026-09-20)' or '-'."""
    if price is None:
        return "-"
    return f"${price.usd_per_gpu_hour:,.2f}/h ({price.price_date})"


def describe_listing(price: Price | None) -> str:
    """'Lambda 8x NVIDIA H100 SXM, 8 GPUs, any, 2026-09-20' (for tables and notes) or '-'."""
    if price is None:
        return "-"
    parts = [price.provider, price.instance_type or "", f"{price.gpus_per_instance} GPU"
             + ("s" if price.gpus_per_instance != 1 else ""), price.region or "", price.price_date]
    return ", ".join(p for p in parts if p)
