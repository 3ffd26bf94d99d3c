"""The profiler's result: one record per module (self time, exclusive of children), JSON-safe.

Times and counts are per optimizer step, averaged over the profiled steps. A layer's time is the
sum of the ops attributed to it (innermost module running), so summing layers never counts a
nanosecond twice; time in a parent's functional code stays with the parent.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prenet_callbacks.measure.profiling.op_samples import MAX_ROWS, op_sample_rows
from prenet_callbacks.measure.profiling.records import LayerRecord, OpEntry, spec_from_dict, spec_to_dict

# LayerRecord and OpEntry live in `records`, below this module, so that `op_samples` reads them
# without importing the table; they are re-exported here.
__all__ = ["LayerTable", "LayerRecord", "OpEntry", "spec_to_dict", "spec_from_dict", "ROOT_NAME",
           "OPTIMIZER_NAME"]

ROOT_NAME = "(root)"
OPTIMIZER_NAME = "optimizer"
# What evaluation does not run: dropout layers, and dropout's random masks inside other layers
# (attention dropout in a functional call).
_DROPOUT_MODULES = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"})
_DROPOUT_OPS = frozenset({"aten::bernoulli_", "aten::bernoulli", "aten::native_dropout", "aten::dropout",
                          "aten::feature_dropout", "aten::alpha_dropout", "aten::_fused_dropout"})


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
                "rows": op_sample_rows(self.layers, max_rows)}

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
