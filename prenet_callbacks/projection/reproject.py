"""A saved run's op stream at another training precision: ``project_report(report, targets, precision=...)``.

The report records each op as the run executed it, at the run's precision. Another precision rewrites
them op by op, the way `estimate` prices an fp32 capture outside autocast's emulation (`precision.convert`):

- from a 32-true run: `convert` (mixed: GEMM-like ops in the half dtype at half the bytes, pointwise ops
  at half the bytes, norms read half, the optimizer untouched; true-half: everything in the half dtype;
  64-true: fp64); mixed targets also pay autocast's cast of each weight (once per call of a layer with
  parameters and GEMMs/convolutions) and the cast of its gradient back to the fp32 master;
- from a half-precision run to the other half dtype of the same kind (16-mixed <-> bf16-mixed): the
  half ops change dtype, nothing else;
- from a half-precision run to 32-true or 64-true: the half ops widen (twice the bytes); the run's
  recorded autocast casts stay priced (they are not told apart from the model's own ``.to`` calls);
- ``"fp8"``: bf16-mixed as above, then each layer the per-layer table calls ``Linear`` whose weight sides
  divide by 16 has its GEMMs replaced by torchao's float8 tensorwise ops (`fp8.forward_ops` /
  `fp8.backward_ops`, as `estimate(precision="fp8")` prices them).

- half targets: a convolution the run did not record in half precision pays cuDNN's NCHW layout transforms
  (`layout.layout_ops_from_dims`, as `estimate` prices them; the target drops them where cuDNN runs no
  tensor-core kernel for the dtype), unless ``channels_last`` says the model's tensors are channels-last.

- mixed targets: an fp32 activation entering a layer's GEMM or convolution (the model's input, the output
  of a layer norm or softmax autocast keeps in fp32, as the previous layer's last op says) is cast to the
  half dtype, and its gradient back; batch norm runs in its input's half dtype (`precision.convert`).

Not modelled: casts inside a layer's own ops (a pointwise chain autocast promotes to fp32 within a module:
`estimate` prices those from its emulated autocast).
The units keep their measured times; the anchor's predictions are of the ops as measured
(`Workload.measured_units`), so a GPU-measured run's anchored ratio carries the change of precision.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.ops import fp8
from prenet_callbacks.projection.ops.autocast import CAST_NAME
from prenet_callbacks.projection.ops.layout import layout_ops_from_dims
from prenet_callbacks.projection.ops.precision import Precision, activation_scale, convert, recorded_precision
from prenet_callbacks.projection.ops.workload import Unit

_WEIGHT_CLASSES = frozenset({"gemm", "conv", "recurrent"})


@dataclass
class Reprojection:
    """The units at the new precision (same order and measured times as the recorded ones)."""

    units: list[Unit]
    linears: int = 0                                           # Linear calls per step priced in FP8
    skipped: set[tuple[int, ...]] = field(default_factory=set)  # Linear weight shapes left in bf16
    notes: list[str] = field(default_factory=list)
    layout_convs: int = 0                                      # convolution calls given NCHW transforms


def requested_precision(precision: Any, run: Precision, current: dict[str, Any]) -> Precision | None:
    """`precision` parsed for a re-projection (the run's TF32 settings carry over); None when it is None
    or the run's own precision (the rows are then exactly those of the run's precision)."""
    if precision is None:
        return None
    target = recorded_precision(current, precision, allow_fp8=True)
    return None if target == run else target


def reprojection_note(run_name: str, target: Precision) -> str:
    """The sentence every re-projected row carries in its precision_note."""
    return (f"re-projection from the run's {run_name} to {target.name}: the recorded ops re-tuned op by op "
            "(docs/projection.md, 'Another precision'), not measured at this precision")


def memory_scale(run: Precision, target: Precision) -> float:
    """Saved activations at `target` relative to the run's (`activation_scale` is relative to fp32)."""
    return activation_scale(target) / activation_scale(run)


def _widened(spec: OpSpec, run: Precision) -> OpSpec:
    """The op as a 32-true run records it."""
    if run.half and spec.dtype == run.half:
        return replace(spec, dtype="float32", bytes_read=spec.bytes_read * 2, bytes_written=spec.bytes_written * 2)
    if run.name == "64-true" and spec.dtype == "float64":
        return replace(spec, dtype="float32", bytes_read=spec.bytes_read / 2, bytes_written=spec.bytes_written / 2)
    return spec


def spec_at(spec: OpSpec, run: Precision, target: Precision, phase: str) -> OpSpec:
    """One recorded op of a `run`-precision step as a `target`-precision step runs it."""
    if run.half and target.half and run.mixed == target.mixed:
        return replace(spec, dtype=target.half, tf32=False) if spec.dtype == run.half else spec
    return convert(_widened(spec, run), target, phase)


def _cast(numel: float, src: int, dst: int, dtype: str) -> OpSpec:
    return OpSpec("elementwise", dtype, float(numel), float(numel * src), float(numel * dst),
                  {"numel": float(numel), "inputs": 1.0}, False, CAST_NAME)


def _linear_shapes(ops: list[tuple[OpSpec, float]], params: float) -> list[tuple[int, int, int, float]] | None:
    """(M, N, K, calls) of each forward GEMM of a Linear layer; None when one is not a weight's GEMM."""
    shapes = []
    for spec, count in ops:
        if spec.op_class != "gemm":
            continue
        d = spec.dims or {}
        m, n, k = (int(d.get(key) or 0) for key in ("m", "n", "k"))
        m *= int(d.get("b") or 1)
        if not (m and n and k) or n * k > params + 0.5:
            return None
        shapes.append((m, n, k, count))
    return shapes or None


def reproject_units(units: list[Unit], layers: list[dict[str, Any]], run: Precision, target: Precision, *,
                    fused: bool = False, channels_last: bool = False) -> Reprojection:
    """`units` (recorded at `run`) at `target`; ``layers``: the report's per-layer table (types, params);
    ``channels_last``: the model's convolutions take channels-last tensors (no layout transforms)."""
    by_name = {str(layer.get("name", "?")): layer for layer in layers}
    casts = run.half is None and run.name != "64-true" and target.mixed
    fwd_ops = {u.name: u.ops for u in units if u.phase == "fwd"}
    out = Reprojection([])
    fp8_shapes: dict[str, list[tuple[int, int, int, float]]] = {}
    if target.fp8:
        for name, ops in fwd_ops.items():
            layer = by_name.get(name) or {}
            kind = str(layer.get("module_type") or layer.get("type") or "").removesuffix(" (compiled)")
            shapes = _linear_shapes(ops, float(layer.get("params") or 0)) if kind == "Linear" else None
            if not shapes:
                continue
            if all(n % fp8.ALIGN == 0 and k % fp8.ALIGN == 0 for _, n, k, _ in shapes):
                fp8_shapes[name] = shapes
                out.linears += int(round(sum(c for *_, c in shapes)))
            else:
                out.skipped.update((n, k) for _, n, k, _ in shapes)
    fp32_in = True   # what the next forward op reads is fp32 (the model's input; a norm autocast keeps fp32)
    input_casts: dict[str, tuple[float, float]] = {}   # layer -> (elements, calls) of its input's cast
    for unit in units:
        layer = by_name.get(unit.name) or {}
        params = float(layer.get("params") or 0)
        shapes = fp8_shapes.get(unit.name)
        converted = [(s, spec_at(s, run, target, unit.phase), c) for s, c in unit.ops
                     if not (shapes and s.op_class == "gemm")]
        ops = [(new, c) for _, new, c in converted]
        if target.half and not channels_last:   # convolutions newly in half precision: cuDNN's NCHW transforms
            for old, new, c in converted:
                transforms = layout_ops_from_dims(new) if old.dtype != new.dtype else []
                ops += [(t, c) for t in transforms]
                out.layout_convs += c if transforms else 0
        if shapes:
            ops += _fp8_ops(shapes, unit.phase, params, fused)
        elif casts and params > 0 and unit.phase in ("fwd", "bwd"):
            ops += _autocast_casts(fwd_ops.get(unit.name, []), params, unit.phase, target.half)
        if casts and not shapes:
            ops += _input_cast(unit, fp32_in, input_casts, target.half)
        if unit.phase == "fwd" and converted:
            fp32_in = not shapes and converted[-1][1].dtype == "float32"
        out.units.append(Unit(unit.name, unit.phase, ops, unit.measured_s, unit.python_s))
    if target.fp8:
        out.notes.extend(fp8.fp8_notes(out.linears, sorted(out.skipped), compiled=fused))
    if out.layout_convs:
        out.notes.append(f"{out.layout_convs:g} convolution calls per step assumed NCHW: in {target.half} they pay "
                         "cuDNN's layout transforms on tensor-core GPUs; channels_last=True (prenet report "
                         "--channels-last) if the model runs channels-last")
    return out


def _autocast_casts(fwd: list[tuple[OpSpec, float]], params: float, phase: str,
                    half: str) -> list[tuple[OpSpec, float]]:
    """Autocast's casts of one layer's parameters in a step recorded in fp32: each parameter tensor to the
    half dtype once per call (weight and bias apart when the GEMM's shape tells them), its gradient back to
    fp32 in backward."""
    heavy = [(s, c) for s, c in fwd if s.op_class in _WEIGHT_CLASSES]
    calls = sum(c for _, c in heavy)
    if not calls:
        return []
    d = heavy[0][0].dims or {}
    n, k = (float(d.get(key) or 0) for key in ("n", "k"))
    tensors = [n * k, n] if heavy[0][0].op_class == "gemm" and n and k and abs(params - n * k - n) < 0.5 else [params]
    src, dst, dtype = (4, 2, "float32") if phase == "fwd" else (2, 4, half)
    return [(_cast(numel, src, dst, dtype), calls) for numel in tensors]


def _input_elements(spec: OpSpec) -> float:
    """Elements of the activation a GEMM or convolution reads (not its weight); 0 when the dims do not say."""
    d = spec.dims or {}
    if spec.op_class == "gemm":
        return float(d.get("b") or 1) * float(d.get("m") or 0) * float(d.get("k") or 0)
    if spec.op_class == "conv":
        return float(d.get("n") or 0) * float(d.get("c_in") or 0) * float(d.get("h_in") or 0) * float(d.get("w_in") or 1)
    return 0.0


def _input_cast(unit: Unit, fp32_in: bool, input_casts: dict[str, tuple[float, float]],
                half: str) -> list[tuple[OpSpec, float]]:
    """Autocast's cast of an fp32 activation entering a layer's GEMM or convolution (the model's input, a
    layer norm's or softmax's output): in the forward to the half dtype, in the backward its gradient back."""
    if unit.phase == "bwd" and unit.name in input_casts:
        numel, calls = input_casts[unit.name]
        return [(_cast(numel, 2, 4, half), calls)]
    if unit.phase != "fwd" or not fp32_in:
        return []
    heavy = next(((s, c) for s, c in unit.ops if s.op_class in ("gemm", "conv")), None)
    numel = _input_elements(heavy[0]) if heavy else 0.0
    if not numel:
        return []
    input_casts[unit.name] = (numel, heavy[1])
    return [(_cast(numel, 4, 2, "float32"), heavy[1])]


def _fp8_ops(shapes: list[tuple[int, int, int, float]], phase: str, params: float,
             fused: bool) -> list[tuple[OpSpec, float]]:
    """A Linear's FP8 ops in one phase: forward GEMM + casts (+ the bf16 bias add), or the backward's."""
    ops: list[tuple[OpSpec, float]] = []
    for m, n, k, calls in shapes:
        if phase == "fwd":
            ops += [(spec, calls) for spec in fp8.forward_ops(m, n, k, 2, 4, fused)]
            if params >= n * k + n:   # the bias, added in bf16 after the GEMM
                ops.append((OpSpec("elementwise", "bfloat16", float(m * n), 4.0 * m * n + 2 * n, 2.0 * m * n,
                                   {"numel": float(m * n), "inputs": 2.0}, False, "aten::add"), calls))
        elif phase == "bwd":
            ops += [(spec, calls) for spec in fp8.backward_ops(m, n, k, fused)]
            ops.append((_cast(n * k, 2, 4, "bfloat16"), calls))   # the weight gradient to the fp32 master
    return ops
