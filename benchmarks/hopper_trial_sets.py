"""The sets the Hopper trials of issue 38 are chosen and judged on, and how each run is reported.

Development: Lambda's ResNet-50 and BERT tables, v1 and v2 (`projection_lambda.py`, `projection_lambda_bert.py`), the
steps of their Hopper rows (H100 PCIe and SXM5, GH200, H200) and the AMP speed-up over FP32 there. Held out: the
committed H200 steps (`estimate_h200.py`), which nothing is chosen on. Used by `legacy_mma_trial.py` and
`compute_twin_trial.py`.
"""
from __future__ import annotations

import argparse
import statistics
from typing import Callable, Sequence

HOPPER = (9.0, 10.0)           # compute capability range of the Hopper rows


def _hopper(gpu: str) -> bool:
    from predictor_models.hardware import lookup_hardware

    cc = float(lookup_hardware(gpu).compute_capability or 0)
    return HOPPER[0] <= cc < HOPPER[1]


def _speedups(rows: list[dict], amp: str) -> list[dict]:
    """Per (model, GPU): predicted over measured AMP speed-up against FP32, minus 1."""
    index = {(r.get("model", "resnet50"), r["gpu"], r["precision"]): r for r in rows}
    out = []
    for (name, gpu, precision), r in index.items():
        fp32 = index.get((name, gpu, "32-true"))
        if precision != amp or fp32 is None:
            continue
        speed = lambda row, key: row["batch"] / row[key]  # noqa: E731
        measured = speed(r, "measured_s") / speed(fp32, "measured_s")
        predicted = speed(r, "predicted_s") / speed(fp32, "predicted_s")
        out.append({"model": name, "gpu": gpu, "measured": round(measured, 3), "predicted": round(predicted, 3),
                    "error": round(predicted / measured - 1, 4)})
    return out


def evaluate() -> dict:
    from benchmarks import estimate_h200, projection_lambda, projection_lambda_bert

    steps, speedups, summaries = [], [], {}
    for table in ("v1", "v2"):
        data, reference = projection_lambda.TABLES[table]
        resnet = projection_lambda.rows(data)
        summaries[f"resnet50_{table}"] = projection_lambda.summary(resnet, projection_lambda.relative(
            resnet, reference=reference))
        data, reference = projection_lambda_bert.TABLES[table]
        bert = projection_lambda_bert.rows(data)
        summaries[f"bert_{table}"] = projection_lambda_bert.summary(bert, projection_lambda_bert.relative(
            bert, group=("model", "precision"), reference=reference))
        steps += [{"table": table, "model": "resnet50", **r} for r in resnet] + [{"table": table, **r} for r in bert]
        speedups += [{"table": table, **s} for s in _speedups(resnet, "16-mixed") + _speedups(bert, "16-true")]
    hopper_steps = [r for r in steps if _hopper(r["gpu"])]
    hopper_speedups = [s for s in speedups if _hopper(s["gpu"])]
    h200 = estimate_h200.rows()
    return {"development": {
                "hopper_steps": [{k: r[k] for k in ("table", "model", "gpu", "precision", "error")} for r in hopper_steps],
                "hopper_step_worst_abs_error": round(max(abs(r["error"]) for r in hopper_steps), 4),
                "hopper_step_median_abs_error": round(statistics.median(abs(r["error"]) for r in hopper_steps), 4),
                "hopper_amp_speedups": hopper_speedups,
                "hopper_speedup_worst_abs_error": round(max(abs(s["error"]) for s in hopper_speedups), 4),
                "every_step_median_abs_error": round(statistics.median(abs(r["error"]) for r in steps), 4),
                "every_speedup_median_abs_error": round(statistics.median(abs(s["error"]) for s in speedups), 4),
                "summaries": summaries},
            "held_out": {"h200_rows": h200, "h200_summary": estimate_h200.summary(h200)}}



def finish(benchmark: str, variant: str, result: dict, argv, json_path: str | None) -> int:
    """Print a run's development and held-out summary; write ``result`` to ``json_path`` when given."""
    dev, held = result["development"], result["held_out"]["h200_summary"]
    print(f"{variant}: Lambda Hopper steps worst {dev['hopper_step_worst_abs_error']:.1%}, median "
          f"{dev['hopper_step_median_abs_error']:.1%}; Hopper AMP speed-up worst {dev['hopper_speedup_worst_abs_error']:.1%}; "
          f"every step median {dev['every_step_median_abs_error']:.1%}; H200 "
          + ", ".join(f"{p} median {c['median_error']:+.1%} worst {c['worst_abs_error']:.1%} in band {c['inside_band']}"
                      for p, c in held.items()))
    if json_path:
        from benchmarks.result_file import write_result

        write_result(json_path, benchmark, argv, **result)
    return 0


def run(benchmark: str, doc: str, variants: Sequence[str], install: Callable[[str], None], argv, **fields) -> int:
    """A trial's command line: ``--variant`` (one of ``variants``, set up by ``install``) and ``--json``; the run's
    ``fields``, then `evaluate`, reported by `finish`."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--variant", required=True, choices=variants)
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    install(args.variant)
    return finish(benchmark, args.variant, {"variant": args.variant, **fields, **evaluate()}, argv, args.json)
