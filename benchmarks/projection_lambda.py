"""ResNet-50 training steps on twelve GPUs in AMP and FP32 (Lambda's public benchmark), from the model alone.

    python benchmarks/projection_lambda.py [--table v1|v2] [--json OUT]

Measurements: `benchmarks/data/lambda_resnet50_train.json` (lambdal/deeplearning-benchmark, MIT): NVIDIA
DeepLearningExamples' ResNet-50 v1.5 on synthetic data, AMP (autocast + a static GradScaler) or FP32 (TF32
convolutions on Ampere and later, PyTorch's default), NCHW, SGD with momentum, cross-entropy, one GPU, the
batch Lambda ran on each GPU. A measured step is batch / images per second.

Each step is predicted by `estimate()` as a user would: the model built on ``meta``, the same batch,
precision, optimizer and loss, no measurement of any kind. Reported per precision: the signed and absolute
error of the step, the error of the speed relative to the A100-SXM4-80GB (what a user comparing GPUs
reads), and the share of measured steps inside the row's band. Nothing is fitted to these figures.

``--table v2``: Lambda's later runs of the same scripts on Hopper and Blackwell GPUs (H100 PCIe and SXM5, GH200, H200,
B200; `benchmarks/data/lambda_resnet50_train_v2.json`), speeds relative to the H100 SXM5 of that table.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import gpu_models  # noqa: E402
from benchmarks.step_errors import publish, step_summary  # noqa: E402

DATA = ROOT / "benchmarks/data/lambda_resnet50_train.json"
REFERENCE = "A100-SXM4-80GB"
# Lambda's later runs (Hopper and Blackwell, another container): their own reference GPU
REFERENCE_V2 = "H100-SXM5"
TABLES = {"v1": (DATA, REFERENCE),
          "v2": (ROOT / "benchmarks/data/lambda_resnet50_train_v2.json", REFERENCE_V2)}
CHANNELS_LAST = False
CUDNN_SEARCH = True   # main.py sets cudnn.benchmark = True: cuDNN times its algorithms (FP32 3x3s may run Winograd)
PRECISIONS = {"amp": "16-mixed", "fp32": "32-true"}


def rows(data: Path = DATA) -> list[dict]:
    from prenet_callbacks import estimate

    table = json.loads(data.read_text())["rows"]
    with torch.device("meta"):
        model = gpu_models.ResNet()
    out = []
    for key, precision in PRECISIONS.items():
        for entry in table:
            point = entry.get(key)
            if not point:
                continue
            batch = point["batch"]
            with torch.device("meta"):
                images = torch.randn(batch, 3, 224, 224)
                labels = torch.randint(0, 1000, (batch,))
            before, torch.backends.cudnn.benchmark = torch.backends.cudnn.benchmark, CUDNN_SEARCH
            try:
                est = estimate(model, images, targets=[entry["gpu"]], precision=precision, optimizer="sgd-momentum",
                               loss_fn=lambda out, labels=labels: F.cross_entropy(out, labels),
                               channels_last=CHANNELS_LAST)
            finally:
                torch.backends.cudnn.benchmark = before
            row = est.row(entry["gpu"])
            measured = batch / point["images_per_s"]
            out.append({"gpu": entry["gpu"], "precision": precision, "batch": batch, "measured_s": round(measured, 6),
                        "predicted_s": row["step_s"], "error": round(row["step_s"] / measured - 1, 4),
                        "band": [row["step_low_s"], row["step_high_s"]], "host_bound": row["host_bound"]})
    return out


def relative(table: list[dict], group: tuple[str, ...] = ("precision",), reference: str = REFERENCE) -> list[dict]:
    """Per ``group`` (the precision; also the model where a table holds several), each GPU's speed relative to
    ``reference`` (samples/s ratio), predicted against measured."""
    out = []
    for key in dict.fromkeys(tuple(r[g] for g in group) for r in table):
        mine = {r["gpu"]: r for r in table if tuple(r[g] for g in group) == key}
        ref = mine.get(reference)
        if ref is None:
            continue
        for gpu, r in mine.items():
            if gpu == reference:
                continue
            measured = (r["batch"] / r["measured_s"]) / (ref["batch"] / ref["measured_s"])
            predicted = (r["batch"] / r["predicted_s"]) / (ref["batch"] / ref["predicted_s"])
            out.append({"gpu": gpu, **dict(zip(group, key)), "measured_speed": round(measured, 4),
                        "predicted_speed": round(predicted, 4), "error": round(predicted / measured - 1, 4)})
    return out


def summary(table: list[dict], rel: list[dict]) -> dict:
    result = step_summary(table, "measured_s")
    for precision, cell in result.items():
        speed = [abs(r["error"]) for r in rel if r["precision"] == precision]
        cell["relative_speed_mape"] = round(statistics.mean(speed), 4) if speed else None
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", choices=sorted(TABLES), default="v1",
                        help="v1: twelve GPUs up to the H100 (reference A100 80GB SXM4); v2: Hopper and Blackwell "
                             "(reference H100 SXM5)")
    parser.add_argument("--json", help="write the rows and summary here")
    args = parser.parse_args(argv)
    data, reference = TABLES[args.table]
    table = rows(data)
    rel = relative(table, reference=reference)
    for r in table:
        print(f"{r['gpu']:16s} {r['precision']:9s} b={r['batch']:<5d} measured {r['measured_s'] * 1e3:7.1f} ms  "
              f"predicted {r['predicted_s'] * 1e3:7.1f} ms ({r['error']:+.1%})")
    result = {"benchmark": "projection_lambda", "table": args.table, "reference": reference, "rows": table, "relative": rel,
              "summary": summary(table, rel)}
    return publish(result, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
