"""The providers the price table knows, and checking a ``provider=`` name against them.

Kept apart from `prices` (the price rule, which the catalog's data classes use) because it reads the
catalog itself: `providers` -> `catalog` -> `spec` -> `prices` -> `listing`, no circle."""
from __future__ import annotations

from typing import Iterable

from predictor_models.hardware.catalog import default_catalog


def known_providers(entries: Iterable) -> list[str]:
    """Providers with at least one listing among catalog `entries` (accelerators), sorted, case kept."""
    names: dict[str, str] = {}
    for entry in entries:
        for price in getattr(entry, "price_list", ()):
            names.setdefault(price.provider.lower(), price.provider)
    return sorted(names.values(), key=str.lower)


def check_provider(provider: object, entries: Iterable | None = None) -> str | None:
    """`provider` as the catalog spells it (case-insensitive match), None for None; anything else raises
    ValueError listing the known providers. `entries`: the catalog (default: the default catalog)."""
    if provider is None:
        return None
    if entries is None:
        entries = default_catalog()
    known = known_providers(entries)
    if not isinstance(provider, str) or not provider.strip():
        raise ValueError(f"provider must be a provider name such as 'Lambda', got {provider!r}; known: "
                         f"{', '.join(known)}")
    for name in known:
        if name.lower() == provider.strip().lower():
            return name
    raise ValueError(f"unknown provider {provider!r}; the price table knows: {', '.join(known)} (a user price "
                     f"file adds 'user'); leave provider unset for the cheapest listing of any provider")
