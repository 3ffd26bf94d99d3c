"""Host-bound set: small-batch CNN training steps on six GPUs, predicted from the model alone.

    python benchmarks/projection_hostbound.py          # prints the rows; projection_accuracy.py includes it

Measurements: ryujaehun/pytorch-gpu-benchmark (MIT), batch 12 of 3x224x224, FP32 and pure FP16, on
A100-SXM4-40GB, TITAN RTX, TITAN V, RTX 2080 Ti, TITAN Xp and GTX 1080 Ti; the medians used are in
``benchmarks/data/ryujaehun_batch12_train.json`` with the commit and files they come from. A timed
step there is ``model.zero_grad()`` (PyTorch ~1.7: one zero-fill kernel per parameter tensor), the
host-to-device copy of the batch, forward, cross-entropy and backward; no optimizer step.

Each model is captured once on ``meta`` and projected with the host constants in
``prenet_callbacks/projection/pricing/host_constants.json`` (this project's machine, see
``benchmarks/projection_host.py``) and `host.LAUNCH_S`; nothing is fitted to these measurements.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import projection_models as pm  # noqa: E402

from predictor_models.op_spec import OpSpec  # noqa: E402
from prenet_callbacks.projection.estimation import workload_from_capture  # noqa: E402
from prenet_callbacks.projection.ops.capture import capture_step  # noqa: E402
from prenet_callbacks.projection.pricing.host import ExecutionOptions  # noqa: E402
from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig  # noqa: E402
from prenet_callbacks.projection.ops.precision import parse_precision  # noqa: E402
from prenet_callbacks.projection.rows.project import RunShape, project_targets  # noqa: E402
from prenet_callbacks.projection.targets import parse_projection_target  # noqa: E402
from prenet_callbacks.projection.ops.workload import Unit  # noqa: E402

DATA = HERE / "data/ryujaehun_batch12_train.json"
MODELS = {"resnet18": lambda: pm.resnet18(1000, cifar=False), "resnet34": pm.resnet34, "resnet50": pm.resnet50,
          "resnet101": pm.resnet101, "resnet152": pm.resnet152, "vgg16": pm.vgg16, "mobilenet_v2": pm.mobilenet_v2}


def _zero_grad_unit(capture, dtype: str) -> Unit:
    """``model.zero_grad()`` as PyTorch 1.x ran it: a zero-fill kernel per parameter tensor."""
    size = 2 if dtype == "float16" else 4
    ops: dict[OpSpec, float] = {}
    for numel in capture.param_tensors:
        spec = OpSpec("elementwise", dtype, float(numel), 0.0, float(numel * size), {"numel": numel, "inputs": 0},
                      False, "aten::zero_")
        ops[spec] = ops.get(spec, 0.0) + 1.0
    # a Python loop calling p.grad.zero_(): per tensor the loop's own Python (~2 us) plus aten dispatch
    return Unit("zero_grad", "fwd", list(ops.items()), python_s=2e-6 * len(capture.param_tensors))


def hostbound_rows(predictor) -> list[dict]:
    data = json.loads(DATA.read_text())
    measured: dict[tuple[str, str], list[dict]] = {}
    for row in data["rows"]:
        measured.setdefault((row["model"], row["precision"]), []).append(row)
    out = []
    for (model, precision), rows in sorted(measured.items()):
        with torch.device("meta"):
            net = MODELS[model]()
        dtype = torch.float16 if precision == "16-true" else torch.float32
        if dtype == torch.float16:
            net = net.half()
        x = torch.empty(12, 3, 224, 224, device="meta", dtype=dtype)
        labels = torch.empty(12, dtype=torch.long, device="meta")
        capture = capture_step(net, x, loss_fn=lambda out: F.cross_entropy(out, labels))
        # PyTorch 1.7 (2020) ran FP32 convolutions and matmuls on TF32 by default on Ampere
        # ... and benchmark_models.py sets cudnn.benchmark = True: cuDNN times its algorithms (Winograd for FP32 3x3s)
        prec = parse_precision(precision, "high", conv_tf32=True, conv_search=True)
        workload = workload_from_capture(capture, prec, "none", ZeroConfig(), ExecutionOptions())
        workload.units.insert(0, _zero_grad_unit(capture, "float16" if precision == "16-true" else "float32"))
        targets = [parse_projection_target(r["gpu"]) for r in rows]
        projected = project_targets(workload, targets, predictor, RunShape())
        for row, proj in zip(rows, projected):
            out.append({"source": "ryujaehun", "model": model, "precision": precision, "gpu": row["gpu"],
                        "measured_s": row["median_ms"] / 1e3, "predicted_s": proj["step_s"],
                        "host_bound": proj["host_bound"], "group": f"{model}/{precision}"})
    return out


def summary(rows: list[dict]) -> dict:
    errors = [abs(r["predicted_s"] / r["measured_s"] - 1) for r in rows]
    by_gpu = {}
    for gpu in sorted({r["gpu"] for r in rows}):
        e = [abs(r["predicted_s"] / r["measured_s"] - 1) for r in rows if r["gpu"] == gpu]
        by_gpu[gpu] = round(statistics.fmean(e), 4)
    return {"n": len(rows), "mape": round(statistics.fmean(errors), 4), "median": round(statistics.median(errors), 4),
            "max": round(max(errors), 4), "by_gpu": by_gpu,
            "host_bound_rows": sum(1 for r in rows if r["host_bound"])}


if __name__ == "__main__":
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    result = hostbound_rows(default_predictor()[0])
    for r in result:
        print(f"{r['model']:13s} {r['precision']:8s} {r['gpu']:15s} measured {r['measured_s'] * 1e3:7.1f} ms  "
              f"predicted {r['predicted_s'] * 1e3:7.1f} ms  {'host-bound' if r['host_bound'] else ''}")
    print(summary(result))
