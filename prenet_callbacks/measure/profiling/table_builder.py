"""Turn a window's per-op accumulations into per-layer records: times, op specs, CO/CM/CT features.

CT (the paper's compute-time feature) is each layer's forward FLOPs over the device's peak, summed
op by op at each op's own dtype and math mode (TF32, FP32 matrix cores), so a bf16-mixed layer
with an fp32 norm gets both right. It is computed for every layer whenever the accelerator is known:
a layer without forward FLOPs has CT 0; an op whose dtype has no catalog peak falls back to the
run's precision.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from predictor_models.aten.call import OpCall
from predictor_models.aten.costs import op_spec_from_call
from predictor_models.aten.taxonomy import classify
from predictor_models.aten.unmodelled import UnmodelledCalls
from predictor_models.layer_features import LayerFeatures, layer_features
from predictor_models.op_spec import OpSpec
from prenet_callbacks.measure.profiling.attribution import ROOT
from prenet_callbacks.measure.profiling.layers import LayerRegistry
from prenet_callbacks.measure.profiling.records import LayerRecord, OpEntry

_MATRIX_CLASSES = frozenset({"gemm", "conv", "attention", "recurrent"})


def precision_dtype(precision: str | None) -> str:
    """The compute dtype of a Lightning precision string ("bf16-mixed" -> "bfloat16")."""
    text = str(precision or "32-true").lower()
    if "bf16" in text:
        return "bfloat16"
    if text.startswith("16") or text.startswith("fp16") or text in ("half", "amp"):
        return "float16"
    if text.startswith("64") or text in ("fp64", "double"):
        return "float64"
    return "float32"


class SpecMaker:
    """OpSpecs from captured calls, with the run's TF32 settings; one spec per distinct call.

    ``unmodelled`` counts the distinct calls whose shapes the cost model could not describe
    (their spec has 0 FLOPs); the profiler reports them among its limitations.
    """

    def __init__(self, tf32_matmul: bool, tf32_conv: bool) -> None:
        self.tf32_matmul = tf32_matmul
        self.tf32_conv = tf32_conv
        self.unmodelled = UnmodelledCalls()
        self._cache: dict[OpCall, OpSpec] = {}

    def __call__(self, call: OpCall) -> OpSpec:
        spec = self._cache.get(call)
        if spec is None:
            tf32 = self.tf32_conv if classify(call) == "conv" else self.tf32_matmul
            spec = self._cache[call] = op_spec_from_call(call, tf32=tf32, unmodelled=self.unmodelled)
        return spec


def _peak(accelerator: Any, dtype: str, tf32: bool, matrix: bool) -> float | None:
    try:
        try:
            peak = accelerator.peak_flops(dtype, tf32=tf32, matrix=matrix)
        except TypeError:   # a PeakFlops without the matrix keyword
            peak = accelerator.peak_flops(dtype, tf32=tf32)
    except (KeyError, ValueError, LookupError, TypeError):
        return None
    return float(peak) if peak else None


def compute_time(entries: Iterable[OpEntry], accelerator: Any, precision: str | None) -> float | None:
    """CT: forward FLOPs per step over the peak FLOP/s of each op's dtype; None without accelerator."""
    if accelerator is None:
        return None
    fallback = precision_dtype(precision)
    total = 0.0
    for e in entries:
        flops = e.spec.flops * e.count_per_step
        if e.phase != "fwd" or not flops:
            continue
        matrix = e.spec.op_class in _MATRIX_CLASSES
        peak = (_peak(accelerator, e.spec.dtype, e.spec.tf32, matrix)
                or _peak(accelerator, fallback, False, matrix))
        if peak:
            total += flops / peak
    return total


def layer_record(reg: LayerRegistry, idx: int, ops: list[tuple[OpCall, str, float, float]],
                 opaque: dict[tuple[int, str], float], steps: int, specs: SpecMaker, *,
                 accelerator: Any, precision: str | None, max_ops: int) -> LayerRecord:
    """One layer's record; `ops` are ``(call, phase, count, seconds)`` over the whole window."""
    entries = [OpEntry(name=call.name, phase=phase, count_per_step=count / steps,
                       seconds_per_step=secs / steps, spec=specs(call))
               for call, phase, count, secs in ops]
    by_phase = {p: sum(e.seconds_per_step for e in entries if e.phase == p)
                for p in ("fwd", "bwd", "opt")}
    for p in ("fwd", "bwd"):
        by_phase[p] += opaque.get((idx, p), 0.0) / steps
    feats: LayerFeatures = layer_features(((e.spec, e.count_per_step, e.phase) for e in entries),
                                          weight_bytes=reg.weight_bytes[idx],
                                          input_bytes=reg.in_bytes[idx] / steps,
                                          output_bytes=reg.out_bytes[idx] / steps,
                                          accelerator=None)
    feats = dataclasses.replace(feats, ct_seconds=compute_time(entries, accelerator, precision))
    return LayerRecord(name=reg.names[idx], module_type=reg.types[idx],
                       calls_per_step=reg.calls[idx] / steps, forward_s=by_phase["fwd"],
                       backward_s=by_phase["bwd"], optimizer_s=by_phase["opt"],
                       params=reg.params[idx], ops=cap_entries(entries, max_ops),
                       features=feats, opaque=reg.opaque[idx])


def layer_records(reg: LayerRegistry, ops: dict[tuple[int, str, OpCall], list[Any]],
                  opaque_time: dict[tuple[int, str], Any], timer: Any, steps: int, specs: SpecMaker, *,
                  accelerator: Any, precision: str | None, max_ops: int) -> tuple[list[LayerRecord], float]:
    """The records of every layer that ran (the root always), and the seconds their ops took.

    ``ops`` maps ``(layer, phase, call)`` to ``[count, seconds or timer handles]`` over the window;
    ``opaque_time`` maps ``(layer, phase)`` to the handles of compiled blocks. Parameters of layers
    that never ran go to their nearest kept ancestor (`LayerRegistry.fold_unused_params`).
    """
    per_layer: dict[int, list[tuple[OpCall, str, float, float]]] = {}
    op_total = 0.0
    for (layer, phase, call), (count, handles) in ops.items():
        secs = timer.resolve(handles) if timer.deferred else handles
        op_total += secs
        per_layer.setdefault(layer, []).append((call, phase, count, secs))
    opaque = {k: timer.resolve(v) for k, v in opaque_time.items()}
    op_total += sum(opaque.values())
    keep = [idx for idx in range(len(reg.names))
            if idx == ROOT or per_layer.get(idx) or reg.calls[idx]
            or any(k[0] == idx for k in opaque)]
    reg.fold_unused_params(set(keep))
    records = [layer_record(reg, idx, per_layer.get(idx, []), opaque, steps, specs,
                            accelerator=accelerator, precision=precision, max_ops=max_ops)
               for idx in keep]
    return records, op_total


def cap_entries(entries: list[OpEntry], cap: int) -> list[OpEntry]:
    """Keep the `cap` costliest entries; merge the rest per (phase, op class) into one each."""
    entries.sort(key=lambda e: e.seconds_per_step, reverse=True)
    if len(entries) <= cap:
        return entries
    kept, rest = entries[:cap - 1], entries[cap - 1:]
    merged: dict[tuple[str, str], list[OpEntry]] = {}
    for e in rest:
        merged.setdefault((e.phase, e.spec.op_class), []).append(e)
    for (phase, op_class), group in merged.items():
        spec = OpSpec(op_class=op_class, dtype=group[0].spec.dtype,
                      flops=sum(e.spec.flops * e.count_per_step for e in group),
                      bytes_read=sum(e.spec.bytes_read * e.count_per_step for e in group),
                      bytes_written=sum(e.spec.bytes_written * e.count_per_step for e in group),
                      dims={"merged_ops": float(len(group))}, name=f"(merged {len(group)} ops)")
        kept.append(OpEntry(name=spec.name, phase=phase, count_per_step=1.0,
                            seconds_per_step=sum(e.seconds_per_step for e in group), spec=spec))
    return kept
