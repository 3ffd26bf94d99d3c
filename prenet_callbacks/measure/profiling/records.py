"""One profiled layer and the ops it ran, JSON-safe: the pieces `LayerTable` and its readers share.

Times and counts are per optimizer step, averaged over the profiled steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from predictor_models.layer_features import LayerFeatures
from predictor_models.op_spec import OpSpec


def spec_to_dict(spec: OpSpec) -> dict[str, Any]:
    return {"op_class": spec.op_class, "dtype": spec.dtype, "flops": spec.flops,
            "bytes_read": spec.bytes_read, "bytes_written": spec.bytes_written,
            "dims": dict(spec.dims), "tf32": spec.tf32, "name": spec.name}


def spec_from_dict(d: dict[str, Any]) -> OpSpec:
    return OpSpec(op_class=d["op_class"], dtype=d["dtype"], flops=float(d["flops"]),
                  bytes_read=float(d["bytes_read"]), bytes_written=float(d["bytes_written"]),
                  dims=dict(d.get("dims", {})), tf32=bool(d.get("tf32", False)),
                  name=d.get("name", ""))


@dataclass
class OpEntry:
    """Identical calls of one op in one layer and phase, aggregated.

    ``spec`` describes ONE call; totals are ``spec.flops * count_per_step``. Merged entries
    (``name`` starting with ``"(merged"``) carry summed totals in a spec with count 1.
    """

    name: str
    phase: str                  # "fwd" | "bwd" | "opt"
    count_per_step: float
    seconds_per_step: float
    spec: OpSpec

    def to_dict(self) -> dict[str, Any]:
        spec = spec_to_dict(self.spec)
        if spec["name"] == self.name:
            del spec["name"]  # compact: the entry already carries it
        return {"name": self.name, "phase": self.phase, "count_per_step": self.count_per_step,
                "seconds_per_step": self.seconds_per_step, "spec": spec}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "OpEntry":
        return cls(name=d["name"], phase=d["phase"], count_per_step=float(d["count_per_step"]),
                   seconds_per_step=float(d["seconds_per_step"]),
                   spec=spec_from_dict({"name": d["name"], **d["spec"]}))


@dataclass
class LayerRecord:
    """One module (or the root bucket, or the optimizer pseudo-layer)."""

    name: str                   # qualified module name, "(root)" or "optimizer"
    module_type: str            # class name ("Linear"); compiled modules end with " (compiled)"
    calls_per_step: float
    forward_s: float            # per optimizer step, self time
    backward_s: float           # per optimizer step, self time (incl. checkpoint recompute)
    params: int                 # parameters owned (shared ones counted once, for the first owner)
    ops: list[OpEntry] = field(default_factory=list)
    features: LayerFeatures | None = None
    optimizer_s: float = 0.0    # only the optimizer pseudo-layer has this
    opaque: bool = False        # compiled: time measured as a whole, no per-op list

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "module_type": self.module_type,
                "calls_per_step": self.calls_per_step, "forward_s": self.forward_s,
                "backward_s": self.backward_s, "optimizer_s": self.optimizer_s,
                "params": self.params, "opaque": self.opaque,
                "ops": [o.to_dict() for o in self.ops],
                "features": self.features.to_dict() if self.features else None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LayerRecord":
        feats = d.get("features")
        return cls(name=d["name"], module_type=d.get("module_type", ""),
                   calls_per_step=float(d.get("calls_per_step", 0)),
                   forward_s=float(d.get("forward_s", 0)), backward_s=float(d.get("backward_s", 0)),
                   params=int(d.get("params", 0)), ops=[OpEntry.from_dict(o) for o in d.get("ops", [])],
                   features=LayerFeatures.from_dict(feats) if feats else None,
                   optimizer_s=float(d.get("optimizer_s", 0)), opaque=bool(d.get("opaque", False)))
