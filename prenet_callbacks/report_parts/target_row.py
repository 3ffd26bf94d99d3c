"""One row of the report's ``targets`` table: the current device (measured) or a projected target.

The row's keys are spelled here only: the projection builds rows with `TargetRow.current` and
`TargetRow.projected`, readers get them back with `TargetRow.from_dict` (through `report_view`). The
JSON Schema's target-row properties list the same keys (``tests/test_report_parts.py`` checks both
ways), and ``docs/projection.md`` says what each means.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from prenet_callbacks.report_parts._keyed import KeyedPart

# A measured row has no band of its own and no usable-memory figure: it leaves those keys out.
_NOT_MEASURED = frozenset({"band_width", "memory_usable_gib"})


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(float(value), digits)


def label_for(name: str, devices: int | None) -> str:
    """``8x H100-SXM5`` for a multi-device row, the plain name otherwise."""
    devices = devices or 1
    return f"{devices}x {name}" if devices > 1 else str(name)


@dataclass(frozen=True)
class TargetRow(KeyedPart):
    """A target row, fields in the order the report writes them (see ``docs/projection.md``)."""

    name: str = "?"
    label: Optional[str] = None
    devices: int = 1
    nodes: int = 1
    gpus_per_node: Optional[int] = None
    current: bool = False
    step_s: Optional[float] = None
    step_low_s: Optional[float] = None
    step_high_s: Optional[float] = None
    relative_error: Optional[float] = None
    band_width: Optional[float] = None          # the regime's floor on the band (projected rows)
    steps: Optional[int] = None
    total_s: Optional[float] = None
    total_low_s: Optional[float] = None
    total_high_s: Optional[float] = None
    work_s: Optional[float] = None
    speedup: Optional[float] = None
    usd_per_gpu_hour: Optional[float] = None
    usd_per_hour: Optional[float] = None
    total_usd: Optional[float] = None
    price_date: Optional[str] = None
    price_provider: Optional[str] = None
    price_instance: Optional[str] = None
    price_instance_gpus: Optional[int] = None
    price_region: Optional[str] = None
    fits_memory: Optional[bool] = None
    memory_gib: Optional[float] = None
    memory_capacity_gib: Optional[float] = None
    memory_usable_gib: Optional[float] = None   # capacity less the runtime's reserve (projected rows)
    max_batch: Optional[int] = None
    batch_per_device: Optional[int] = None
    global_batch: Optional[int] = None
    batch_convention: Optional[str] = None
    method: str = ""
    phases_s: dict[str, Optional[float]] = field(default_factory=dict)
    comm_s: Optional[float] = None
    comm_exposed_s: Optional[float] = None
    communication: Optional[str] = None
    host_bound: bool = False
    unmodelled_share: Optional[float] = None
    precision: Optional[str] = None
    precision_note: Optional[str] = None
    assumed: dict[str, Any] = field(default_factory=dict)
    layout: Optional[dict[str, Any]] = None     # tensor/pipeline layout (model-parallel rows only)
    notes: tuple[str, ...] = ()
    absent: frozenset[str] = frozenset()
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def _in(cls, key: str, value: Any) -> Any:
        return tuple(value) if key == "notes" and isinstance(value, list) else value

    @property
    def display_label(self) -> str:
        """The row's label, else one built from its devices and name (hand-made and /1-era rows)."""
        return self.label or label_for(self.name, self.devices)

    # -- the two writers --------------------------------------------------------------------------
    @classmethod
    def current_device(cls, *, name: str, devices: int, step_s: float | None, steps: int | None,
                       total_s: float | None, total_low_s: float | None, total_high_s: float | None,
                       cost: Any, memory_gib: float | None, capacity_gib: float | None,
                       batch_per_device: int | None, accumulate: int, batch_convention: str,
                       phases_s: dict[str, float | None], host_bound: bool, precision: str,
                       assumed: dict[str, Any], layout: dict[str, Any] | None = None) -> "TargetRow":
        """The measured device's row: its step as measured, its run as the latest prediction says."""
        return cls(
            name=name, label=label_for(name, devices), devices=devices, nodes=1, gpus_per_node=devices,
            current=True, step_s=step_s, step_low_s=step_s, step_high_s=step_s, relative_error=None,
            steps=steps, total_s=total_s, total_low_s=total_low_s, total_high_s=total_high_s,
            work_s=step_s, speedup=1.0,
            **_prices(cost, usd_per_hour_digits=None, total_usd_digits=2),
            fits_memory=True, memory_gib=memory_gib, memory_capacity_gib=capacity_gib, max_batch=None,
            batch_per_device=batch_per_device,
            # a run that splits its model (its layout) has devices / (tp x pp) replicas, each taking a batch
            global_batch=(batch_per_device * (int(layout["dp"]) if layout else devices) * accumulate
                          if batch_per_device else None),
            batch_convention=batch_convention, method="measured", phases_s=phases_s,
            comm_s=None, comm_exposed_s=None, communication=None, host_bound=host_bound,
            unmodelled_share=0.0, precision=precision, precision_note=None, assumed=assumed, layout=layout,
            notes=(cost.note,) if cost is not None and cost.note else (), absent=_absent(_NOT_MEASURED, layout))

    @classmethod
    def projected(cls, *, name: str, label: str, devices: int, nodes: int, gpus_per_node: int,
                  step_s: float, step_low_s: float, step_high_s: float, relative_error: float,
                  band_width: float, steps: int | None, total_s: float | None, total_low_s: float | None,
                  total_high_s: float | None, work_s: float, speedup: float | None, cost: Any, memory: Any,
                  capacity_gib: float | None, usable_gib: float | None, batch_per_device: int | None,
                  accumulate: int, batch_convention: str, method: str, phases_s: dict[str, float | None],
                  comm_s: float, comm_exposed_s: float, communication: str | None, host_bound: bool,
                  unmodelled_share: float, precision: str, precision_note: str | None,
                  assumed: dict[str, Any], notes: list[str], layout: dict[str, Any] | None = None) -> "TargetRow":
        """A projected target's row, rounded as the report writes it. ``memory``: the memory fit
        (``fits``, ``total_bytes``, ``max_batch``) or None where it was not checked."""
        return cls(
            name=name, label=label, devices=devices, nodes=nodes, gpus_per_node=gpus_per_node, current=False,
            step_s=_round(step_s, 6), step_low_s=_round(step_low_s, 6), step_high_s=_round(step_high_s, 6),
            relative_error=round(relative_error, 4), band_width=round(band_width, 4), steps=steps,
            total_s=_round(total_s, 2), total_low_s=_round(total_low_s, 2), total_high_s=_round(total_high_s, 2),
            work_s=_round(work_s, 6), speedup=_round(speedup, 4),
            **_prices(cost, usd_per_hour_digits=4, total_usd_digits=4),
            fits_memory=None if memory is None else memory.fits,
            memory_gib=None if memory is None else round(memory.total_bytes / 2**30, 2),
            memory_capacity_gib=capacity_gib, memory_usable_gib=usable_gib,
            max_batch=None if memory is None else memory.max_batch, batch_per_device=batch_per_device,
            global_batch=batch_per_device * devices * accumulate if batch_per_device else None,
            batch_convention=batch_convention, method=method,
            phases_s={k: _round(v, 6) for k, v in phases_s.items()},
            comm_s=_round(comm_s, 6), comm_exposed_s=_round(comm_exposed_s, 6), communication=communication or None,
            host_bound=bool(host_bound), unmodelled_share=round(float(unmodelled_share), 3), precision=precision,
            precision_note=precision_note, assumed=assumed, layout=layout, notes=tuple(notes),
            absent=_absent(frozenset(), layout))


def _absent(keys: frozenset[str], layout: dict[str, Any] | None) -> frozenset[str]:
    """Rows without a model-parallel layout leave the key out (as every row did before prenet-report/2.1)."""
    return keys if layout is not None else keys | {"layout"}


def _prices(cost: Any, *, usd_per_hour_digits: int | None, total_usd_digits: int) -> dict[str, Any]:
    """The row's price fields from a `projection.cost.Cost` (all None without one)."""
    if cost is None:
        return dict.fromkeys(("usd_per_gpu_hour", "usd_per_hour", "total_usd", "price_date", "price_provider",
                              "price_instance", "price_instance_gpus", "price_region"))
    per_hour = cost.usd_per_hour if usd_per_hour_digits is None else _round(cost.usd_per_hour, usd_per_hour_digits)
    return {"usd_per_gpu_hour": cost.usd_per_gpu_hour, "usd_per_hour": per_hour,
            "total_usd": _round(cost.total_usd, total_usd_digits), "price_date": cost.price_date,
            "price_provider": cost.provider, "price_instance": cost.instance,
            "price_instance_gpus": cost.instance_gpus, "price_region": cost.region}
