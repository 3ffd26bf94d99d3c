"""Where `estimate()` misses a measured GPU step: device time per op class, measured against predicted.

    python benchmarks/op_table_compare.py benchmarks/results/gpu/<run>.json [--json OUT]

`benchmarks/gpu_acceptance.py` profiles one real training step of each `estimate()` model at its first batch
and stores every aten op's self device time (``top_ops``' ``op_table``). This rebuilds the same `estimate()`
on ``meta`` (model, batch, precision, AdamW, the row's GPU), prices each captured op on that GPU with the
shipped predictor, and sums both sides per op class (`predictor_models.aten.taxonomy.classify` names the
measured ops' classes). cuDNN's NCHW<->NHWC transforms run inside the convolution's call, so the profiler
gives their time to the convolution: the predicted transforms are counted with ``conv`` here. The step's
measured wall time and host issue time stand beside the sums: what the device sums do not explain is the
host's, or the ops the table left out (it keeps the 250 most expensive op and shape groups).

Nothing is fitted: it says which classes an H200's (or any GPU's) bf16 steps are mispriced in. Where the run also
kept its kernel table (``kernel_table``), each row says how much device time went to which tensor-core instruction
family (`kernel_family`): on a Hopper GPU, Ampere-era kernels cannot reach the tensor peak the predictor divides by.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measured_by_class(op_table: list[dict]) -> dict[str, float]:
    """Seconds per op class of a profiled step's op table (self device time; self CPU time on a CPU run)."""
    from predictor_models.aten_ops import OpCall, classify

    out: dict[str, float] = defaultdict(float)
    for row in op_table:
        micros = row.get("self_device_us", row.get("self_cpu_us", 0.0))
        out[classify(OpCall(row["op"]))] += float(micros) * 1e-6
    return dict(out)


# What a kernel's name says about the tensor-core instruction it issues (first match wins). A Hopper GPU reaches its
# tensor peak only through warpgroup MMA (wgmma; Blackwell through tcgen05): kernels built for it name sm90 (sm100,
# sm120). Ampere-era kernels (mma.sync: cuBLAS/cuDNN sm80 kernels, FlashAttention-2) run on a Hopper GPU well below
# that peak (Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", arXiv:2402.13499).
# Whether the H200's bf16 steps run such kernels is what this tells.
KERNEL_FAMILIES = (
    ("native_mma", ("sm90", "sm100", "sm120", "gmma", "warpgroup", "tcgen05")),
    ("flash_attention_2", ("flash_fwd", "flash_bwd")),
    ("mma_sync", ("sm80", "sm86", "sm89", "s16816", "s1688", "cutlass_80", "ampere_", "_80_tensorop")),
    ("older_tensor_cores", ("sm70", "sm75", "volta_", "turing_", "s884")),
)


def kernel_family(name: str) -> str:
    """The tensor-core family a device kernel's name names (`KERNEL_FAMILIES`), else "other" (CUDA cores)."""
    lowered = name.lower()
    return next((family for family, marks in KERNEL_FAMILIES if any(m in lowered for m in marks)), "other")


def kernel_families(kernel_table: list[dict]) -> dict[str, float]:
    """Device milliseconds per kernel family of a profiled step's kernel table (`gpu_acceptance.kernel_table`)."""
    out: dict[str, float] = defaultdict(float)
    for row in kernel_table:
        out[kernel_family(row["kernel"])] += float(row["device_us"]) * 1e-3
    return {family: round(ms, 3) for family, ms in sorted(out.items(), key=lambda kv: -kv[1])}


def predicted_by_class(workload, device, predictor) -> dict[str, float]:
    """Seconds per op class of a captured step's ops on ``device`` (layout transforms counted as ``conv``)."""
    from prenet_callbacks.projection.ops.layout import LAYOUT_NAME

    ops = [(spec, count) for unit in workload.units for spec, count in unit.ops]
    if not ops:
        return {}
    seconds = predictor.predict_matrix([spec for spec, _ in ops], [device])[:, 0]
    out: dict[str, float] = defaultdict(float)
    for (spec, count), value in zip(ops, seconds):
        out["conv" if spec.name == LAYOUT_NAME else spec.op_class] += float(value) * count
    return dict(out)


def compare(row: dict, predictor) -> dict | None:
    """One acceptance ``estimate`` row with an op table: per class measured, predicted and their ratio."""
    import torch

    from benchmarks import gpu_models
    from predictor_models.hardware import lookup_hardware
    from prenet_callbacks import estimate

    table = next((part["op_table"] for part in row.get("top_ops") or [] if "op_table" in part), None)
    if not table or row["model"] not in gpu_models.ESTIMATE_MODELS:
        return None
    build, _ = gpu_models.ESTIMATE_MODELS[row["model"]]
    with torch.device("meta"):
        model, make_batch, loss_fn = build()
        example = make_batch(row["batch"], "meta")
    est = estimate(model, example, targets=[row["target"]], precision=row["precision"], optimizer="adamw",
                   loss_fn=loss_fn)
    measured = measured_by_class(table)
    predicted = predicted_by_class(est.workload, lookup_hardware(row["target"]), predictor)
    classes = sorted(set(measured) | set(predicted), key=lambda c: -max(measured.get(c, 0.0), predicted.get(c, 0.0)))
    kernels = next((part["kernel_table"] for part in row.get("top_ops") or [] if "kernel_table" in part), None)
    return {"model": row["model"], "batch": row["batch"], "precision": row["precision"], "target": row["target"],
            "measured_step_ms": round(row["measured_step_s"] * 1e3, 3) if row.get("measured_step_s") else None,
            "host_issue_ms": round(row["host_issue_s"] * 1e3, 3) if row.get("host_issue_s") else None,
            "measured_ops_ms": round(sum(measured.values()) * 1e3, 3),
            "predicted_ops_ms": round(sum(predicted.values()) * 1e3, 3),
            "classes": {c: {"measured_ms": round(measured.get(c, 0.0) * 1e3, 3),
                            "predicted_ms": round(predicted.get(c, 0.0) * 1e3, 3),
                            "predicted_over_measured": round(predicted[c] / measured[c], 3)
                            if measured.get(c) and predicted.get(c) else None} for c in classes},
            "kernel_families_ms": kernel_families(kernels) if kernels else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result", help="a gpu_acceptance.py JSON whose estimate rows carry op tables")
    parser.add_argument("--json", help="write the comparison here")
    args = parser.parse_args(argv)
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()
    rows = json.loads(Path(args.result).read_text())["parts"].get("estimate") or []
    out = [c for c in (compare(row, predictor) for row in rows) if c is not None]
    if not out:
        print(f"{args.result}: no estimate row holds an op table (gpu_acceptance.py records one per model on a GPU)")
        return 1
    for c in out:
        print(f"{c['model']} batch {c['batch']} {c['precision']} on {c['target']}: step {c['measured_step_ms']} ms "
              f"(host issue {c['host_issue_ms']} ms), ops measured {c['measured_ops_ms']} ms, predicted "
              f"{c['predicted_ops_ms']} ms")
        for name, v in c["classes"].items():
            print(f"  {name:14s} measured {v['measured_ms']:9.3f} ms  predicted {v['predicted_ms']:9.3f} ms  "
                  f"ratio {v['predicted_over_measured']}")
        if c["kernel_families_ms"]:
            print("  kernels by family (ms): " + ", ".join(f"{k} {v}" for k, v in c["kernel_families_ms"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"benchmark": "op_table_compare", "source": args.result, "rows": out},
                                              indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
