"""BERT-base and BERT-large SQuAD fine-tuning steps on twelve GPUs in AMP and FP32 (Lambda's public benchmark).

    python benchmarks/projection_lambda_bert.py [--table v1|v2] [--attention eager|sdpa] [--json OUT]

Measurements: `benchmarks/data/lambda_bert_squad_train.json` (lambdal/deeplearning-benchmark, MIT): NVIDIA
DeepLearningExamples' BERT fine-tuned on SQuAD v1.1, sequence length 384, one GPU, the batch Lambda ran on each GPU, in
fp16 (AMP) or fp32 (TF32 matmuls on Ampere and later). A measured step is batch / sequences per second. A
development set of issue 38 (its item 3 names Lambda's tables): nothing is fitted to it.

Each step is predicted by `estimate()` as a user would, from the model alone: Hugging Face's ``BertForQuestionAnswering``
with the checkpoint's shape (uncased vocabulary, 512 positions), built on ``meta``, ``16-mixed`` or ``32-true`` with
``float32_matmul_precision="high"``, AdamW, the span loss. The replica differs from NVIDIA's model where it must:
DeepLearningExamples computes attention as matmul, softmax, dropout and matmul (``--attention eager``, the default:
Hugging Face's eager attention runs the same ops), and fuses the bias and GELU of the intermediate layer and its layer
norms (apex), which eager Hugging Face runs as separate kernels. Its ``--fp16`` is apex amp at opt_level O2 (the model
cast to fp16, fp32 master weights): estimated as ``16-true`` (``--amp-as 16-mixed``: autocast instead). These shift
every GPU's step alike, so the speed relative to the A100 80GB (what a user
comparing GPUs reads) is the figure to read first; the absolute error is reported beside it. Requires the
``transformers`` extra. ``--table v2``: Lambda's later runs on Hopper and Blackwell GPUs
(`benchmarks/data/lambda_bert_squad_train_v2.json`), speeds relative to that table's H100 SXM5.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.projection_lambda import REFERENCE, REFERENCE_V2, relative  # noqa: E402
from benchmarks.step_errors import publish, step_summary  # noqa: E402

DATA = ROOT / "benchmarks/data/lambda_bert_squad_train.json"
TABLES = {"v1": (DATA, REFERENCE),
          "v2": (ROOT / "benchmarks/data/lambda_bert_squad_train_v2.json", REFERENCE_V2)}
SEQUENCE = 384
# (precision, float32 matmul precision). NVIDIA's run_squad.py runs --fp16 through apex amp at opt_level O2: the model
# cast to fp16 (softmax and layer norms too), fp32 master weights in the optimizer, which "16-true" is nearest to;
# "16-mixed" (autocast) is the other reading, kept as --amp-as 16-mixed
PRECISIONS = {"amp": ("16-true", None), "fp32": ("32-true", "high")}
CONFIGS = {"bert_base_squad": {},
           "bert_large_squad": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                                "intermediate_size": 4096}}


def _model(name: str, attention: str):
    try:
        from transformers import BertConfig, BertForQuestionAnswering
    except ImportError as error:
        raise SystemExit("projection_lambda_bert.py needs the transformers extra: pip install -e '.[transformers]'") \
            from error
    with torch.device("meta"):
        return BertForQuestionAnswering(BertConfig(attn_implementation=attention, **CONFIGS[name]))


def rows(data: Path = DATA, attention: str = "eager", amp: str = "16-true") -> list[dict]:
    """One row per (model, precision, GPU): Lambda's step against `estimate()`'s. GPUs at one batch share a capture."""
    from prenet_callbacks import estimate

    table = json.loads(data.read_text())["rows"]
    out = []
    for name in CONFIGS:
        model = _model(name, attention)
        for key, (precision, matmul) in PRECISIONS.items():
            precision = amp if key == "amp" else precision
            by_batch: dict[int, list[dict]] = {}
            for entry in table:
                by_batch.setdefault(entry[name][key]["batch"], []).append(entry)
            for batch, entries in by_batch.items():
                with torch.device("meta"):
                    ids = torch.randint(0, 30522, (batch, SEQUENCE))
                    positions = torch.randint(0, SEQUENCE, (batch,))
                example = {"input_ids": ids, "start_positions": positions, "end_positions": positions}
                est = estimate(model, example, targets=[e["gpu"] for e in entries], precision=precision,
                               optimizer="adamw", float32_matmul_precision=matmul, loss_fn=lambda out: out.loss)
                by_class = _device_seconds_by_class(est, [e["gpu"] for e in entries])
                for entry in entries:
                    row = est.row(entry["gpu"])
                    measured = batch / entry[name][key]["sequences_per_s"]
                    out.append({"model": name, "gpu": entry["gpu"], "precision": precision, "batch": batch,
                                "measured_s": round(measured, 6), "predicted_s": row["step_s"],
                                "error": round(row["step_s"] / measured - 1, 4),
                                "band": [row["step_low_s"], row["step_high_s"]], "host_bound": row["host_bound"],
                                "device_s_by_class": by_class[entry["gpu"]]})
    return out


def _device_seconds_by_class(est, gpus: list[str]) -> dict[str, dict[str, float]]:
    """Per GPU, the step's predicted device seconds by op class (the shipped predictor on the captured ops): which
    classes carry a GPU's error, read from the file without running this again."""
    import numpy as np

    from predictor_models.hardware import lookup_hardware
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()
    ops = est.workload.ops()
    seconds = predictor.predict_matrix([spec for spec, _ in ops], [lookup_hardware(g) for g in gpus])
    seconds *= np.array([count for _, count in ops])[:, None]
    classes, class_of = np.unique([spec.op_class for spec, _ in ops], return_inverse=True)
    return {gpu: dict(zip(classes.tolist(), np.round(np.bincount(class_of, weights=seconds[:, j]), 6).tolist()))
            for j, gpu in enumerate(gpus)}


def summary(table: list[dict], rel: list[dict]) -> dict:
    """Per precision (both models): the step errors and the relative speed's MAPE; and per model and precision."""
    result = step_summary(table, "measured_s")
    for precision, cell in result.items():
        cell["relative_speed_mape"] = round(statistics.mean(abs(r["error"]) for r in rel
                                                            if r["precision"] == precision), 4)
        cell["by_model"] = {name: {"median_error": round(statistics.median(
                                       r["error"] for r in table if r["model"] == name and r["precision"] == precision), 4),
                                   "relative_speed_mape": round(statistics.mean(
                                       abs(r["error"]) for r in rel if r["model"] == name and r["precision"] == precision), 4)}
                            for name in CONFIGS}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", choices=sorted(TABLES), default="v1",
                        help="v1: twelve GPUs up to the H100 (reference A100 80GB SXM4); v2: Hopper and Blackwell "
                             "(reference H100 SXM5)")
    parser.add_argument("--attention", choices=("eager", "sdpa"), default="eager",
                        help="the replica's attention: eager (matmul, softmax, matmul, as NVIDIA's BERT) or sdpa (fused)")
    parser.add_argument("--amp-as", choices=("16-true", "16-mixed"), default="16-true",
                        help="how AMP is estimated: 16-true (apex O2, what NVIDIA's script runs) or 16-mixed (autocast)")
    parser.add_argument("--json", help="write the rows and summary here")
    args = parser.parse_args(argv)
    data, reference = TABLES[args.table]
    table = rows(data, attention=args.attention, amp=args.amp_as)
    rel = relative(table, group=("model", "precision"), reference=reference)
    for r in table:
        print(f"{r['model']:17s} {r['gpu']:16s} {r['precision']:9s} b={r['batch']:<4d} measured "
              f"{r['measured_s'] * 1e3:7.1f} ms  predicted {r['predicted_s'] * 1e3:7.1f} ms ({r['error']:+.1%})")
    result = {"benchmark": "projection_lambda_bert", "table": args.table, "reference": reference,
              "attention": args.attention,
              "amp_as": args.amp_as,
              "rows": table, "relative": rel, "summary": summary(table, rel)}
    return publish(result, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
