"""Cost of a run on a target: dated on-demand USD per GPU-hour x GPUs x hours.

The listing comes from `predictor_models.hardware.prices.choose_price`: the cheapest current listing of
an instance with the target's GPU count per node (else the per-GPU rate of the closest instance size,
said in `note`), of one provider when ``provider`` is given. The row says which listing it used.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cost:
    usd_per_gpu_hour: float | None
    usd_per_hour: float | None   # the whole target (all its GPUs)
    total_usd: float | None
    price_date: str | None
    provider: str | None = None
    instance: str | None = None
    instance_gpus: int | None = None
    region: str | None = None
    note: str = ""               # how the listing was chosen when it is not an exact match, or why none


def run_cost(accelerator, count: int, seconds: float | None, *, provider: str | None = None,
             gpus_per_node: int | None = None) -> Cost:
    """Cost of `seconds` on `count` such GPUs; None parts where the catalog lists no price.

    ``gpus_per_node``: GPUs per node of a multi-node target (instances are matched per node; default
    `count`). ``provider``: price with that provider's listings only; where it lists none for this GPU the
    cost is None and `note` says so."""
    per_node = int(gpus_per_node or count)
    choose = getattr(accelerator, "price_for", None)
    if choose is None:   # not a catalog entry: a plain default price, if any
        per_gpu = getattr(accelerator, "usd_per_hour", None)
        if per_gpu is None:
            return Cost(None, None, None, None)
        node = per_gpu * count
        return Cost(per_gpu, node, node * seconds / 3600.0 if seconds is not None else None,
                    getattr(accelerator, "price_date", None))
    choice = choose(per_node, provider)
    price = choice.price
    if price is None:
        note = ""
        if provider is not None:
            listed = sorted({p.provider for p in getattr(accelerator, "price_list", ())})
            note = (f"no price: {provider} lists no {accelerator.name}"
                    + (f" (listed by {', '.join(listed)})" if listed else " (no provider lists it)"))
        return Cost(None, None, None, None, note=note)
    per_gpu = price.usd_per_gpu_hour
    node = per_gpu * count
    total = node * seconds / 3600.0 if seconds is not None else None
    return Cost(per_gpu, node, total, price.price_date, price.provider, price.instance_type or None,
                price.gpus_per_instance, price.region or None, choice.note)


def listing_label(provider: str | None, instance: str | None, date: str | None, *, instance_chars: int = 40) -> str:
    """Who priced a row and when, for tables: "Lambda 8x NVIDIA H100 SXM, 2026-09-20" ("—" without a
    listing; an instance name longer than `instance_chars` is cut, ``instance_chars=0`` leaves it out)."""
    if not provider:
        return "—"
    instance = instance or ""
    if not instance_chars:
        instance = ""
    elif len(instance) > instance_chars:
        instance = instance[:instance_chars - 1] + "…"
    head = f"{provider} {instance}".strip()
    return f"{head}, {date}" if date else head
