"""What a projection needs to know about one training step, whether measured or captured offline.

A `Workload` is built either from a saved report (`from_report`) or by `estimate` from a model run
on the ``meta`` device. Ops are grouped in `Unit`s (one module in one phase); a unit may carry the
time measured for it on the current device, which anchors its projection.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.parallel import ZeroConfig
from prenet_callbacks.projection.precision import Precision

PHASES = ("fwd", "bwd", "opt")


@dataclass
class Unit:
    """One module's ops in one phase, per optimizer step; `measured_s` is its time on the current device."""

    name: str
    phase: str
    ops: list[tuple[OpSpec, float]]
    measured_s: float | None = None


@dataclass
class Workload:
    """One optimizer step of a training job on one device, plus what is needed around it."""

    units: list[Unit]
    params: float                      # parameter count (whole model)
    precision: Precision
    optimizer: str = "adamw"
    batch_size: int | None = None      # per-device micro-batch
    accumulate: int = 1                # micro-batches per optimizer step
    world: int = 1                     # devices of the measured run
    host_s: float = 0.0                # per step, does not scale with the GPU (data wait, Python)
    activation_bytes: float | None = None  # per device at batch_size
    activations_measured: bool = False
    anchor: object | None = None       # catalog Accelerator of the measured device (None: absolute)
    measured_step_s: float | None = None
    zero: ZeroConfig = field(default_factory=ZeroConfig)
    notes: list[str] = field(default_factory=list)

    def ops(self, phase: str | None = None) -> list[tuple[OpSpec, float]]:
        return [op for u in self.units if phase is None or u.phase == phase for op in u.ops]

    @property
    def kernels(self) -> float:
        """Kernel launches per step (free ops launch nothing)."""
        return sum(count for u in self.units for spec, count in u.ops if spec.bytes_moved > 0 or spec.flops > 0)
