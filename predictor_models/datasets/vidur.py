"""Vidur (MLSys'24, MIT licence) per-op times of one LLM decoder layer, FP16 forward.

Source: ``vidur/data/profiling/compute/<gpu>/<org>/<model>/mlp.csv``; times are summed CUDA kernel
durations (ms, 1 us resolution) from the torch profiler; we use the median.
Kept: QKV / output / MLP up / MLP down projections (GEMMs, shapes from the model config and the
tensor-parallel degree), input and post-attention norms (RMSNorm; LayerNorm for phi-2), the MLP
activation (SiLU-and-mul, or GELU for phi-2), the residual add, 
Excluded, and counted: RoPE (a fused custom kernel with no op-class shape rule), the embedding
(vocab-parallel: mask, gather and fill kernels summed, 5-6x its memory bound, not one gather), any entry whose
median is under 5 us (the 1 us resolution makes those +-10% or worse), duplicates of a shape
already loaded for that GPU.
Devices (Vidur's names): a100 = A100-SXM4-80GB, h100 = H100-SXM5 (both DGX/Azure SXM parts), a40 = A40.
"""
from __future__ import annotations

import csv
from pathlib import Path

from .common import LoadReport, Sample, elementwise_op, gemm_op, norm_op

SOURCE = "vidur"
DTYPE = "float16"
DEVICES = {"a100": "A100-SXM4-80GB", "h100": "H100-SXM5", "a40": "A40"}
MIN_SECONDS = 5e-6


def _ops(row: dict, model: str):
    """(entry, OpSpec) pairs for one CSV row."""
    t = float(row["num_tokens"])
    heads, kv = float(row["n_head"]), float(row["n_kv_head"])
    d, ffn, tp = float(row["n_embd"]), float(row["n_expanded_embd"]), float(row["num_tensor_parallel_workers"])
    gated = row["use_gated_mlp"].strip().lower() == "true"
    hd = d / heads
    norm_name = "aten::native_layer_norm" if "phi" in model else "aten::rms_norm"
    yield "attn_pre_proj", gemm_op(1, t, (heads + 2 * kv) * hd / tp, d, DTYPE, weight_shared=True, name="aten::mm")
    yield "attn_post_proj", gemm_op(1, t, d, heads * hd / tp, DTYPE, weight_shared=True, name="aten::mm")
    yield "mlp_up_proj", gemm_op(1, t, ffn * (2 if gated else 1) / tp, d, DTYPE, weight_shared=True, name="aten::mm")
    yield "mlp_down_proj", gemm_op(1, t, d, ffn / tp, DTYPE, weight_shared=True, name="aten::mm")
    yield "input_layernorm", norm_op(t, d, DTYPE, name=norm_name)
    yield "post_attention_layernorm", norm_op(t, d, DTYPE, name=norm_name)
    if gated:
        yield "mlp_act", elementwise_op(t * ffn / tp, 2, DTYPE, name="aten::silu_and_mul")
    else:
        yield "mlp_act", elementwise_op(t * ffn / tp, 1, DTYPE, name="aten::gelu")
    yield "add", elementwise_op(t * d, 2, DTYPE, name="aten::add")


def load(data_dir: str | Path) -> tuple[list[Sample], LoadReport]:
    """Load Vidur's per-op decoder-layer profiles."""
    root = Path(data_dir) / "vidur" / "data" / "profiling" / "compute"
    if not root.is_dir():
        raise FileNotFoundError(f"{root} not found")
    report = LoadReport(SOURCE)
    report.notes.append("FP16 forward, summed kernel durations (no launch gaps); median of repetitions")
    samples: list[Sample] = []
    seen: set = set()
    for path in sorted(root.glob("*/*/*/mlp.csv")):
        gpu, model = path.parts[-4], path.parts[-2]
        device = DEVICES.get(gpu)
        if device is None:
            report.exclude(f"unknown Vidur device {gpu}")
            continue
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle):
                report.exclude("RoPE (fused custom kernel)")
                report.exclude("embedding (vocab-parallel, several kernels)")
                try:
                    ops = list(_ops(row, model))
                except (KeyError, ValueError, ZeroDivisionError):
                    report.exclude("unparseable row")
                    continue
                for entry, op in ops:
                    try:
                        seconds = float(row[f"time_stats.{entry}.median"]) * 1e-3
                    except (KeyError, ValueError):
                        report.exclude("missing time")
                        continue
                    if seconds < MIN_SECONDS:
                        report.exclude("median under 5 us (1 us resolution)")
                        continue
                    ident = (device, op.name, op.key)   # dtype, FLOPs and bytes follow from the dims here
                    if ident in seen:
                        report.exclude("duplicate shape")
                        continue
                    seen.add(ident)
                    samples.append(Sample(op, device, seconds, SOURCE))
    report.kept = len(samples)
    return samples, report
