"""`estimate()` against the committed H200 step times (the development set of issue 23), on any machine.

    python benchmarks/estimate_h200.py [--json OUT]

The acceptance run (`benchmarks/gpu_acceptance.py`) measured ResNet-50, BERT-base and GPT-2-small
training steps on an H200 in 32-true and bf16-mixed (`benchmarks/results/gpu/h200-2026-11-30.json`).
This replays the prediction half of it on the CPU: the same models, batches, precisions, optimizer
and loss, captured on ``meta``, predicted for the H200, compared with the committed measurements.
Nothing is fitted to them.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import gpu_models  # noqa: E402
from benchmarks.step_errors import publish, step_summary  # noqa: E402

RESULT = ROOT / "benchmarks/results/gpu/h200-2026-11-30.json"


def rows(result: Path = RESULT) -> list[dict]:
    from prenet_callbacks import estimate

    measured = json.loads(result.read_text())["parts"]["estimate"]
    target = "H200-SXM"
    out = []
    cache: dict = {}
    for m in measured:
        build, _ = gpu_models.ESTIMATE_MODELS[m["model"]]
        with torch.device("meta"):
            model, make_batch, loss_fn = cache.get(m["model"]) or build()
            cache[m["model"]] = (model, make_batch, loss_fn)
            example = make_batch(m["batch"], "meta")
        est = estimate(model, example, targets=[target], precision=m["precision"], optimizer="adamw", loss_fn=loss_fn)
        predicted = est.step_seconds(target)
        row = est.row(target)
        out.append({"model": m["model"], "batch": m["batch"], "precision": m["precision"],
                    "measured_step_s": m["measured_step_s"], "predicted_step_s": round(predicted, 6),
                    "committed_prediction_s": m["predicted_step_s"],
                    "error": round(predicted / m["measured_step_s"] - 1, 4),
                    "band": [row.get("step_low_s"), row.get("step_high_s")], "host_bound": row.get("host_bound"),
                    "phases_s": row.get("phases_s")})
    return out


def summary(table: list[dict]) -> dict:
    return step_summary(table, "measured_step_s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows and summary here")
    args = parser.parse_args(argv)
    table = rows()
    for r in table:
        print(f"{r['model']:11s} b={r['batch']:<4d} {r['precision']:10s} measured {r['measured_step_s'] * 1e3:7.1f} ms  "
              f"predicted {r['predicted_step_s'] * 1e3:7.1f} ms ({r['error']:+.1%}; committed "
              f"{r['committed_prediction_s'] * 1e3:.1f})")
    result = {"benchmark": "estimate_h200", "rows": table, "summary": summary(table)}
    return publish(result, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
