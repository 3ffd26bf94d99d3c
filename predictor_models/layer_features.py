"""Per-layer static features aggregated from the layer's ops (the paper's CO, CM and CT).

- CO (operations): forward FLOPs of the layer.
- CM (memory): weight bytes, input bytes, output bytes of the layer.
- CT: CO divided by the device's peak FLOP/s for the layer's dtype (seconds); ``None`` when the
  device is unknown (e.g. CPU) or the catalog has no peak for that dtype.

Plus FLOPs split by phase, total bytes moved by the ops and arithmetic intensity. All numbers are
totals over whatever the caller aggregated (the profiler passes per-optimizer-step counts).
The accelerator is a parameter (anything with ``peak_flops(dtype, tf32=...)``) so that this
module does not import the hardware catalog.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Protocol

from predictor_models.op_spec import OpSpec

PHASES: tuple[str, ...] = ("fwd", "bwd", "opt")


class PeakFlops(Protocol):
    """What layer features need from `predictor_models.hardware.Accelerator`."""

    def peak_flops(self, dtype: str, tf32: bool = False) -> float: ...


@dataclass(frozen=True)
class LayerFeatures:
    """Static features of one layer; JSON-safe via `to_dict`."""

    co_flops: float                 # forward FLOPs (CO)
    cm_weight_bytes: float          # parameter bytes (CM)
    cm_input_bytes: float           # bytes of the layer's input tensors (CM)
    cm_output_bytes: float          # bytes of the layer's output tensors (CM)
    ct_seconds: float | None        # CO / peak FLOP/s of the dtype (CT); None if device unknown
    fwd_flops: float
    bwd_flops: float
    opt_flops: float
    bytes_moved: float              # bytes read + written by all the layer's ops
    arithmetic_intensity: float     # all FLOPs / bytes_moved (0 when nothing moves)
    dtype: str                      # dtype carrying most of the FLOPs (or bytes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LayerFeatures":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def layer_features(ops: Iterable[tuple[OpSpec, float, str]], *, weight_bytes: float = 0.0,
                   input_bytes: float = 0.0, output_bytes: float = 0.0,
                   accelerator: PeakFlops | None = None) -> LayerFeatures:
    """Aggregate a layer's ops into `LayerFeatures`.

    Args:
        ops: ``(spec, count, phase)`` triples; ``phase`` is one of `PHASES`, ``count`` how many
            times the op ran in the aggregated period.
        weight_bytes, input_bytes, output_bytes: the layer's CM terms, same period.
        accelerator: the device for CT; ``None`` gives ``ct_seconds=None``.
    """
    flops = {p: 0.0 for p in PHASES}
    moved = 0.0
    by_dtype: dict[tuple[str, bool], float] = {}
    for spec, count, phase in ops:
        flops[phase if phase in flops else "fwd"] += spec.flops * count
        moved += spec.bytes_moved * count
        if phase == "fwd":
            # weight by FLOPs, falling back to bytes so that flop-free layers still get a dtype
            key = (spec.dtype, spec.tf32)
            by_dtype[key] = by_dtype.get(key, 0.0) + (spec.flops or spec.bytes_moved * 1e-9) * count
    dtype, tf32 = max(by_dtype, key=by_dtype.__getitem__) if by_dtype else ("float32", False)
    total = flops["fwd"] + flops["bwd"] + flops["opt"]
    return LayerFeatures(
        co_flops=flops["fwd"], cm_weight_bytes=float(weight_bytes),
        cm_input_bytes=float(input_bytes), cm_output_bytes=float(output_bytes),
        ct_seconds=_compute_time(flops["fwd"], dtype, tf32, accelerator),
        fwd_flops=flops["fwd"], bwd_flops=flops["bwd"], opt_flops=flops["opt"],
        bytes_moved=moved, arithmetic_intensity=total / moved if moved > 0 else 0.0, dtype=dtype)


def _compute_time(flops: float, dtype: str, tf32: bool, accelerator: PeakFlops | None) -> float | None:
    if accelerator is None:
        return None
    try:
        peak = accelerator.peak_flops(dtype, tf32=tf32)
    except (KeyError, ValueError, TypeError, LookupError):
        return None  # the catalog has no peak for this dtype: unknown, not zero
    return flops / peak if peak else None
