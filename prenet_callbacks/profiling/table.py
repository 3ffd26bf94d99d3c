"""The profiler's result: one record per module (self time, exclusive of children), JSON-safe.

Times and counts are per optimizer step, averaged over the profiled steps. A layer's time is the
sum of the ops attributed to it (innermost module running), so summing layers never counts a
nanosecond twice; time in a parent's functional code stays with the parent.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from predictor_models.layer_features import LayerFeatures
from predictor_models.op_spec import OpSpec
from prenet_callbacks.profiling.op_samples import MAX_ROWS, op_sample_rows

ROOT_NAME = "(root)"
OPTIMIZER_NAME = "optimizer"
# What evaluation does not run: dropout layers, and dropout's random masks inside other layers
# (attention dropout in a functional call).
_DROPOUT_MODULES = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"})
_DROPOUT_OPS = frozenset({"aten::bernoulli_", "aten::bernoulli", "aten::native_dropout", "aten::dropout",
                          "aten::feature_dropout", "aten::alpha_dropout", "aten::_fused_dropout"})


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


@dataclass
class LayerTable:
    """All layers of a profiled window.

    ``unattributed_s`` is per-step time inside the profiled windows not covered by any timed op:
    Python and framework overhead, views, GPU idle gaps, kernels launched outside captured ops.
    ``overhead_s`` is the per-step host time the profiler's own bookkeeping added (already taken
    out of ``unattributed_s`` on CPU; torch's Python-dispatch cost is not measurable from inside
    and stays in ``unattributed_s``). Neither is a good step time: use a plain timer outside the
    profiling window for that, and `coverage` to compare the two.

    ``outside_ops_s`` (CUDA) is per-step device time of kernels launched outside every timed op
    (kernels of the framework, a fused optimizer called outside the hooks).

    ``clock`` is the device clock's kind ("cpu"/"cuda"), ``op_timing`` how op times were taken
    ("dispatch": host clock around each op; "cupti": GPU kernel times from torch.profiler;
    "profiler": torch.profiler CPU op times), ``catalog_name`` the accelerator CT was computed for.
    """

    layers: list[LayerRecord]
    steps: int
    unattributed_s: float = 0.0
    overhead_s: float = 0.0
    outside_ops_s: float = 0.0
    device: str = "cpu"
    limitations: list[str] = field(default_factory=list)
    clock: str = "cpu"
    op_timing: str | None = None
    precision: str | None = None
    catalog_name: str | None = None

    def layer(self, name: str) -> LayerRecord:
        for rec in self.layers:
            if rec.name == name:
                return rec
        raise KeyError(f"no layer named {name!r}; have {[r.name for r in self.layers]}")

    @property
    def forward_s(self) -> float:
        return sum(r.forward_s for r in self.layers)

    @property
    def backward_s(self) -> float:
        return sum(r.backward_s for r in self.layers)

    @property
    def optimizer_s(self) -> float:
        return sum(r.optimizer_s for r in self.layers)

    def eval_forward_share(self) -> float | None:
        """The share of the forward's time that an evaluation forward still runs (None: no forward seen).

        In eval mode dropout is the identity: its layers' time, and its random-mask ops inside other
        layers, are not spent. In an encoder with dropout 0.1 on a CPU the masks alone are ~40% of the
        forward.
        """
        forward = self.forward_s
        if forward <= 0:
            return None
        dropout = sum(r.forward_s if r.module_type.removesuffix(" (compiled)") in _DROPOUT_MODULES
                      else sum(o.seconds_per_step for o in r.ops if o.phase == "fwd" and o.name in _DROPOUT_OPS)
                      for r in self.layers)
        return max(0.0, 1.0 - dropout / forward)

    @property
    def modules_s(self) -> float:
        """Sum of every layer's time per step (root and optimizer included): what the profile saw."""
        return self.forward_s + self.backward_s + self.optimizer_s

    def coverage(self, step_s: float | None) -> dict[str, float | None]:
        """``{step_s, modules_s, ratio}`` (and on CUDA ``kernels_s``, ``device_busy``) against a step time.

        `step_s` is the measured time of a step on the same clock: a clean (unprofiled) step where one
        is known, since the profiler slows the host several times over. ratio is modules_s / step_s
        (None without a step time): well below 1 is time the per-layer profile does not see (host
        gaps while the GPU waits for Python, data loading, unlabelled kernels); above 1 is overlap
        (kernels on several streams at once). On CUDA, ``kernels_s`` adds the kernels launched outside
        every op and ``device_busy`` = kernels_s / step_s is the share of the step the GPU computes:
        a host-bound step shows a low ``device_busy``, a profile that misses kernels a low
        ``modules_s / kernels_s``.
        """
        modules = self.modules_s
        out: dict[str, float | None] = {"step_s": step_s, "modules_s": modules,
                                        "ratio": modules / step_s if step_s else None}
        if self.clock == "cuda":
            kernels = modules + self.outside_ops_s
            out["kernels_s"] = kernels
            out["device_busy"] = kernels / step_s if step_s else None
        return out

    def op_samples(self, max_rows: int = MAX_ROWS) -> dict[str, Any] | None:
        """``{device, catalog_name, timing, rows}`` for self-calibration; None unless CUPTI-timed."""
        if self.op_timing != "cupti":
            return None
        return {"device": self.device, "catalog_name": self.catalog_name, "timing": "cupti",
                "rows": op_sample_rows(self, max_rows)}

    def to_dict(self) -> dict[str, Any]:
        return {"steps": self.steps, "unattributed_s": self.unattributed_s,
                "overhead_s": self.overhead_s, "outside_ops_s": self.outside_ops_s, "device": self.device, "clock": self.clock,
                "op_timing": self.op_timing, "precision": self.precision,
                "catalog_name": self.catalog_name, "modules_s": self.modules_s,
                "limitations": list(self.limitations),
                "layers": [r.to_dict() for r in self.layers]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LayerTable":
        return cls(layers=[LayerRecord.from_dict(r) for r in d.get("layers", [])],
                   steps=int(d.get("steps", 0)), unattributed_s=float(d.get("unattributed_s", 0)),
                   overhead_s=float(d.get("overhead_s", 0)), outside_ops_s=float(d.get("outside_ops_s", 0)),
                   device=d.get("device", "cpu"), limitations=list(d.get("limitations", [])),
                   clock=d.get("clock", "cpu"), op_timing=d.get("op_timing"),
                   precision=d.get("precision"), catalog_name=d.get("catalog_name"))
