"""What a projection needs to know about one training step, whether measured or captured offline.

A `Workload` is built either from a saved report (`from_report`) or by `estimate` from a model run
on the ``meta`` device. Ops are grouped in `Unit`s (one module in one phase, in execution order); a
unit may carry the time measured for it on the current device, which anchors its projection.

What runs differs per target (`Variant`): the SDPA kernel each attention call gets, the optimizer
implementation, and ``torch.compile``'s fusion. `Workload.flat_for` rewrites the step's ops (as flat
arrays, see `flat.py`) for one variant; everything else about the step stays the same.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.ops import attention
from prenet_callbacks.projection.ops.flat import Flat, flatten
from prenet_callbacks.projection.pricing.host import ExecutionOptions, HostCosts, default_host_costs, fuse_for_compile
from prenet_callbacks.projection.ops.layout import is_layout_op, runs_layout_transforms
from prenet_callbacks.projection.rows.memory import StateAccount
from prenet_callbacks.projection.ops.optimizer_ops import optimizer_ops
from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig
from prenet_callbacks.projection.ops.precision import Precision

PHASES = ("fwd", "bwd", "opt")
_PHASE_INDEX = {phase: i for i, phase in enumerate(PHASES)}
_SAME = object()   # `Unit.changed`: the field as it is


@dataclass
class Unit:
    """One module's ops in one phase, per optimizer step; `measured_s` is its time on the current device,
    `python_s` the host time of its own Python and autograd work measured in a CPU run."""

    name: str
    phase: str
    ops: list[tuple[OpSpec, float]]
    measured_s: float | None = None
    python_s: float | None = None
    sequence: tuple[int, ...] | None = None   # indices into `ops` in the order they ran (a capture's units)

    def changed(self, *, ops=_SAME, measured_s=_SAME, python_s=_SAME, sequence=_SAME) -> Unit:
        """A copy with the fields given changed: `dataclasses.replace` at a fifth of its cost (a tensor-parallel
        split of a 500-layer step makes thousands)."""
        return Unit(self.name, self.phase, self.ops if ops is _SAME else ops,
                    self.measured_s if measured_s is _SAME else measured_s,
                    self.python_s if python_s is _SAME else python_s,
                    self.sequence if sequence is _SAME else sequence)


class UnitViews(NamedTuple):
    """Per unit: its phase as an index into `PHASES`, its measured seconds and its measured Python seconds (NaN
    where it has none)."""

    phases: np.ndarray
    measured_s: np.ndarray
    python_s: np.ndarray

    def then(self, tail: "UnitViews") -> "UnitViews":
        """These units' views followed by ``tail``'s."""
        return UnitViews(*(np.concatenate([head, more]) for head, more in zip(self, tail)))


def unit_views(units: list[Unit]) -> UnitViews:
    """The units' `UnitViews`."""
    return UnitViews(np.fromiter((_PHASE_INDEX.get(u.phase, 0) for u in units), dtype=int, count=len(units)),
                     np.array([u.measured_s if u.measured_s is not None else np.nan for u in units], dtype=float),
                     np.array([u.python_s if u.python_s is not None else np.nan for u in units], dtype=float))


@dataclass(frozen=True)
class Variant:
    """What runs on one target: SDPA kernel per attention call, optimizer implementation, compile."""

    attention: tuple[tuple[OpSpec, str], ...] = ()
    optimizer_impl: str | None = None      # None: the ops as measured/captured
    compiled: bool = False
    batch_scale: float = 1.0               # per-device batch / the measured one (global batch convention)
    layout_transforms: bool = True         # the target's cuDNN transposes NCHW half convolutions (layout.py)

    def attention_label(self) -> str | None:
        kinds = sorted({backend for _, backend in self.attention})
        return "+".join(kinds) if kinds else None


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
    data_s: float = 0.0                # data-loader wait per step: host, not overlapped
    fixed_host_s: float = 0.0          # host time per step outside the kernels' issue (framework loop)
    host_from_clean_steps: bool = False  # a CPU run's host time from its steps without the wait (a busy machine)
    activation_bytes: float | None = None  # per device at batch_size
    activations_measured: bool = False
    state: StateAccount | None = None  # the run's measured (unsharded) model state
    anchor: object | None = None       # catalog Accelerator of the measured device (None: absolute)
    current_kind: str = "gpu"          # "gpu" | "cpu" | "none" (estimate)
    measured_step_s: float | None = None
    zero: ZeroConfig = field(default_factory=ZeroConfig)
    param_tensors: list[int] = field(default_factory=list)
    optimizer_impl: str | None = None  # named by the user; None: PyTorch's default on each device
    optimizer_ran: str | None = None   # implementation the "opt" units hold (None: an optimizer kept as measured)
    input_bytes: float = 0.0           # one host-to-device copy of the batch per step
    host_costs: HostCosts = field(default_factory=default_host_costs)
    host_issue_s: float | None = None  # host time per step the profiler saw issuing ops (GPU runs)
    options: ExecutionOptions = field(default_factory=ExecutionOptions)
    ran_compiled: bool = False
    validation_forward_s: float | None = None  # forward time per step on the current device
    measured_units: list[Unit] | None = None   # the units as the run recorded them, when `units` are re-tuned
    reprojected_from: str | None = None        # the run's precision, when `units` are re-tuned to another
    # forward/backward passes per step relative to the measured run (a report re-projected at another
    # accumulate): the measured per-pass host costs (python_s, data wait, loop, batch copy) follow it
    micro_batches: float = 1.0
    whatif_notes: list[str] = field(default_factory=list)   # what every projected row says about such options
    recompute: str | None = None       # activation checkpointing in the ops: None, "full" or "selective"
    notes: list[str] = field(default_factory=list)
    _variants: dict = field(default_factory=dict, repr=False)

    def rebuilt(self, **changes) -> "Workload":
        """A copy with `changes` (new units, ...) and none of this one's cached views of its ops."""
        return replace(self, _variants={}, **changes)

    def share_flats(self, head: Flat, head_measured: Flat | None = None, head_views: UnitViews | None = None) -> None:
        """Build the flat views (`flat`, `measured_flat`) on those of the first units, already flattened (the
        layout targets' ranks share their split's forward and backward and differ in their optimizer units).
        ``head`` must be ``flatten(self.units[:head.n_units])``, ``head_measured`` the same of the measured units,
        ``head_views`` ``unit_views(self.units[:head.n_units])`` (`views` goes on from it)."""
        self._variants["flat"] = flatten(self.units[head.n_units:], head)
        if head_measured is not None and self.measured_units is not None:
            self._variants["measured_flat"] = flatten(self.measured_units[head_measured.n_units:], head_measured)
        if head_views is not None:
            self._variants["unit views"] = head_views.then(unit_views(self.units[head.n_units:]))

    def options_ran(self) -> ExecutionOptions:
        """How the measured run executed (compiled modules were seen, or eager)."""
        return ExecutionOptions("default") if self.ran_compiled else ExecutionOptions()

    def ops(self, phase: str | None = None) -> list[tuple[OpSpec, float]]:
        return [op for u in self.units if phase is None or u.phase == phase for op in u.ops]

    @property
    def kernels(self) -> float:
        return float(self.unit_kernels().sum())

    @property
    def opt_dtype(self) -> str:
        return self.precision.state_dtype

    # ---- per-target variants ----------------------------------------------------------------
    def attention_specs(self) -> list[OpSpec]:
        """The distinct SDPA ops of the step (cached: units do not change after construction)."""
        def make() -> list[OpSpec]:
            seen: dict[OpSpec, None] = {}
            for spec in self.flat().specs:   # distinct, in order of appearance
                if spec.op_class == "attention" and spec not in seen and attention.shape_from_spec(spec):
                    seen[spec] = None
            return list(seen)

        return self.cached("attention_specs", make)

    def variant_for(self, accelerator, default_impl: str) -> Variant:
        """What runs on `accelerator` (None: the current CPU) under this workload's options."""
        backends = tuple((spec, attention.sdpa_backend(accelerator, spec.dtype, attention.shape_from_spec(spec)))
                         for spec in self.attention_specs())
        impl = self.optimizer_impl or default_impl
        if impl == self.optimizer_ran or self.optimizer_ran is None:
            impl = None   # as measured: the same implementation, or an optimizer whose kernels are not synthesised
        layout = runs_layout_transforms(accelerator, self.precision.compute_dtype) if self.has_layout_ops() else True
        return Variant(backends, impl, self.options.compiled and not self.ran_compiled, layout_transforms=layout)

    def has_layout_ops(self) -> bool:
        """Whether the step holds cuDNN's NCHW<->NHWC transforms (half convolutions of NCHW tensors)."""
        return self.cached("layout", lambda: any(is_layout_op(spec) for spec in self.flat().specs))

    def flat(self) -> Flat:
        """The measured/captured units' ops as flat arrays (cached: units' ops do not change)."""
        return self.cached("flat", lambda: flatten(self.units))

    def measured_flat(self) -> Flat:
        """The ops the run itself ran (what the anchor's predictions and the host calibration are of)."""
        if self.measured_units is None:
            return self.flat()
        return self.cached("measured_flat", lambda: flatten(self.measured_units))

    def measured_kernels(self) -> np.ndarray:
        """Kernel launches per unit in the run itself (equal to `unit_kernels` unless re-tuned)."""
        return self.measured_flat().kernels

    def cached(self, name: str, make):
        """``make()``, kept with the workload's other views of its units (which do not change once it is built)."""
        if name not in self._variants:
            self._variants[name] = make()
        return self._variants[name]

    def views(self) -> UnitViews:
        """The units' phases, measured seconds and measured Python seconds as arrays (cached)."""
        return self.cached("unit views", lambda: unit_views(self.units))

    def phase_index(self) -> np.ndarray:
        """Each unit's phase as an index into `PHASES` (cached)."""
        return self.views().phases

    def measured_seconds(self) -> np.ndarray:
        """Each unit's measured seconds, NaN where it has none (cached)."""
        return self.views().measured_s

    def anchored(self) -> bool:
        """Whether the run's device is a catalog GPU and some unit holds a time measured on it."""
        return self.anchor is not None and not np.isnan(self.measured_seconds()).all()

    def unit_kernels(self) -> np.ndarray:
        """Kernel launches per unit, in unit order."""
        return self.flat().kernels

    def flat_for(self, variant: Variant) -> Flat:
        """The ops as they run under `variant` (cached; the measured ones themselves when nothing changes)."""
        key = ("flat", variant)
        cached = self._variants.get(key)
        if cached is not None:
            return cached
        base = self.flat()
        math = {spec for spec, backend in variant.attention if backend == "math"}
        scale = variant.batch_scale
        drop_layout = not variant.layout_transforms
        if not math and variant.optimizer_impl is None and not variant.compiled and scale == 1.0 and not drop_layout:
            self._variants[key] = base
            return base

        def parts_of(spec: OpSpec, in_opt: bool) -> list[tuple[OpSpec, float]]:
            if drop_layout and is_layout_op(spec):
                return []
            parts = [(spec, 1.0)]
            if spec.op_class == "attention" and spec in math:
                # fused kernels are kept as recorded/captured; the math path is expanded
                parts = attention.ops_for(spec, "math") or parts
            if in_opt or (scale == 1.0 and not variant.compiled):
                return parts
            out = []
            for new, mult in parts:
                if scale != 1.0:
                    new = batch_scaled(new, scale)   # equal results are merged into one row by the flat view
                out.append(fuse_for_compile(new, mult) if variant.compiled else (new, mult))
            return out

        in_opt = np.array([u.phase == "opt" for u in self.units], dtype=bool)
        replace_opt = None
        if variant.optimizer_impl is not None:
            replace_opt = (optimizer_ops(self.optimizer, self.param_tensors or [int(self.params)], self.opt_dtype,
                                         variant.optimizer_impl, grad_scaler=self.precision.grad_scaler)
                           if self.params > 0 else [])
        flat = base.rewritten(parts_of, in_opt, replace_opt)
        self._variants[key] = flat
        return flat

    def activation_delta(self, variant: Variant, base_accelerator) -> float:
        """Activation bytes per device the variant's attention kernels save beyond the measured ones."""
        if not variant.attention:
            return 0.0
        key = ("delta", variant.attention, getattr(base_accelerator, "name", None))
        if key not in self._variants:
            self._variants[key] = self._activation_delta(variant, base_accelerator)
        return self._variants[key]

    def _activation_delta(self, variant: Variant, base_accelerator) -> float:
        counts: dict[OpSpec, float] = {}
        flat = self.flat()
        forward = np.array([u.phase == "fwd" for u in self.units], dtype=bool)[flat.unit_of]
        per_spec = np.bincount(flat.op_of, weights=flat.counts * forward, minlength=len(flat.specs))
        for spec, count in zip(flat.specs, per_spec.tolist()):
            if spec.op_class == "attention" and count:
                counts[spec] = counts.get(spec, 0.0) + count
        delta = 0.0
        for spec, backend in variant.attention:
            shape = attention.shape_from_spec(spec)
            if shape is None or spec not in counts:
                continue
            base = attention.sdpa_backend(base_accelerator, spec.dtype, shape)
            delta += counts[spec] * (attention.saved_bytes(shape, spec.dtype, backend)
                                     - attention.saved_bytes(shape, spec.dtype, base))
        return delta / self.micro_batches   # extra micro-batches re-use the memory: no more is saved at once


_BATCH_DIMS = {"gemm": ("m",), "conv": ("n",), "attention": ("b",), "norm": ("rows",), "elementwise": ("numel",),
               "data_movement": ("numel",), "pooling": ("numel_in", "numel_out"), "embedding": ("indices",),
               "recurrent": ("batch",)}


def batch_scaled(spec: OpSpec, scale: float) -> OpSpec:
    """An op at `scale` times the batch: FLOPs and bytes scale linearly (weights' reads included, which is
    optimistic for weight-heavy ops at small batches), and so does its batch-like shape feature."""
    dims = dict(spec.dims or {})
    for key in _BATCH_DIMS.get(spec.op_class, ()):
        if key in dims:
            dims[key] = dims[key] * scale
    return OpSpec(spec.op_class, spec.dtype, spec.flops * scale, spec.bytes_read * scale, spec.bytes_written * scale,
                  dims, spec.tf32, spec.name)
