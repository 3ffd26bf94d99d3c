"""Candidate rules for a validation run's cost before one is measured, scored on recorded fits.

    python benchmarks/validation_rules.py [RESULT.json ...] [--json OUT]

Each row of an ETA benchmark's result (`eta_accuracy.py`, default: the validation and default sets)
keeps ``validation_inputs``: what the first prediction's estimate could rest on (the sanity check's
batches as timed and with their page faults' cost taken off, the warm training forward, batch sizes)
and what a validation run then cost (the fit's validation time over its runs). For every candidate
rule this prints the per-run estimate against the measured cost, per workload, raw and at the run's
pace (`pace.py`: a neighbour slows validation batches as much as training ones), and each rule's
worst case. ``shipped`` is `prenet_callbacks.forecast.eta` itself, run on the same inputs.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS = [ROOT / "benchmarks/results/eta_accuracy_validation.json", ROOT / "benchmarks/results/eta_accuracy.json"]


def _ratio(x: dict[str, Any]) -> float:
    if x.get("train_batch_size") and x.get("val_batch_size"):
        return x["val_batch_size"] / x["train_batch_size"]
    return 1.0


def forward(x: dict[str, Any]) -> float | None:
    """The warm training forward (its eval-mode share) and data wait, per sample at the eval batch size."""
    if x.get("forward_per_batch_s") is None:
        return None
    r, share = _ratio(x), 1.0 if x.get("eval_forward_share") is None else x["eval_forward_share"]
    per_batch = x["forward_per_batch_s"] * share * r + (x.get("data_per_batch_s") or 0.0) * r
    return (x.get("sanity_fixed_s") or 0.0) + x["val_batches"] * per_batch


def replay(x: dict[str, Any], *, outside: bool = True) -> float | None:
    """The model's forward replayed in eval mode without autograd (`eval_probe`) and the data wait, per
    sample at the eval batch size; ``outside``: plus the training forward's time outside the model's call."""
    if x.get("eval_forward_s") is None:
        return None
    r = _ratio(x)
    rest = 0.0
    if outside and x.get("model_call_s") is not None and x.get("forward_per_batch_s") is not None:
        rest = max(0.0, x["forward_per_batch_s"] - x["model_call_s"])
    per_batch = x["eval_forward_s"] * r + rest + (x.get("data_per_batch_s") or 0.0) * r
    return (x.get("sanity_fixed_s") or 0.0) + x["val_batches"] * per_batch


def sanity_corrected(x: dict[str, Any]) -> float | None:
    """The sanity check's batches with their page faults' cost taken off (the old `sanity`)."""
    if x.get("sanity_per_batch_s") is None:
        return None
    return (x.get("sanity_fixed_s") or 0.0) + x["val_batches"] * x["sanity_per_batch_s"]


def sanity_raw(x: dict[str, Any]) -> float | None:
    """The sanity check's batches as timed, faults and all."""
    if x.get("sanity_raw_per_batch_s") is None:
        return None
    return (x.get("sanity_fixed_s") or 0.0) + x["val_batches"] * x["sanity_raw_per_batch_s"]


def _pair(a: Callable, b: Callable, how: Callable[[float, float], float]) -> Callable:
    def rule(x: dict[str, Any]) -> float | None:
        va, vb = a(x), b(x)
        if va is None or vb is None:
            return va if vb is None else vb  # one estimate: that one
        return how(va, vb)
    return rule


def shipped(x: dict[str, Any]) -> float | None:
    """`prenet_callbacks.forecast.eta`'s rule as it is now, on the recorded inputs."""
    sys.path.insert(0, str(ROOT))
    from prenet_callbacks.forecast.eta import RunMeasurements
    from prenet_callbacks.forecast.eta_validation import per_validation_run as _per_validation_run
    from prenet_callbacks.forecast.plan import RunPlan

    m = RunMeasurements(train_batch_size=x.get("train_batch_size"), val_batch_size=x.get("val_batch_size"),
                        eval_forward_share=x.get("eval_forward_share"), eval_forward_s=x.get("eval_forward_s"),
                        sanity_val_per_batch=x.get("sanity_per_batch_s"),
                        sanity_val_raw_per_batch=x.get("sanity_raw_per_batch_s"), sanity_val_fixed=x.get("sanity_fixed_s"),
                        sanity_page_faults_s=x.get("sanity_page_faults_s"), sanity_val_batches=x.get("sanity_batches"))
    for field, key in (("forward_per_batch", "forward_per_batch_s"), ("data_per_batch", "data_per_batch_s"),
                       ("batch", "batch_s"), ("model_call", "model_call_s")):
        if x.get(key) is not None:
            getattr(m, field).add(x[key])
    plan = RunPlan(total_batches=1, batches_per_epoch=1, val_batches=x["val_batches"])
    return _per_validation_run(plan, m, x.get("batch_s") or 1.0)[0]


RULES: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "forward x ratio": forward,
    "eval replay (model only)": lambda x: replay(x, outside=False),
    "eval replay": replay,
    "min(replay, raw)": _pair(replay, sanity_raw, min),
    "max(replay, raw)": _pair(replay, sanity_raw, max),
    "geomean(replay, raw)": _pair(replay, sanity_raw, lambda a, b: math.sqrt(a * b)),
    "sanity corrected": sanity_corrected,
    "sanity raw": sanity_raw,
    "min(forward, corrected) [old]": _pair(forward, sanity_corrected, min),
    "min(forward, raw)": _pair(forward, sanity_raw, min),
    "max(forward, corrected)": _pair(forward, sanity_corrected, max),
    "max(forward, raw)": _pair(forward, sanity_raw, max),
    "mean(forward, corrected)": _pair(forward, sanity_corrected, lambda a, b: (a + b) / 2),
    "mean(forward, raw)": _pair(forward, sanity_raw, lambda a, b: (a + b) / 2),
    "geomean(forward, raw)": _pair(forward, sanity_raw, lambda a, b: math.sqrt(a * b)),
    "shipped": shipped,
}


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    table, summary = [], {}
    for row in rows:
        x = row.get("validation_inputs") or {}
        measured = x.get("measured_per_run_s")
        if not measured or not x.get("val_batches"):
            continue
        pace = x.get("pace") or 1.0
        entry = {"workload": row["workload"], "measured_per_run_s": round(measured, 4), "pace": round(pace, 4),
                 "eval_train_batch_ratio": round(_ratio(x), 3), "sanity_batches": x.get("sanity_batches"),
                 "validation_share": row.get("validation_share"), "rules": {}}
        for name, rule in RULES.items():
            value = rule(x)
            if value is None:
                continue
            entry["rules"][name] = {"per_run_s": round(value, 4), "error": round(value / measured - 1, 4),
                                    "error_at_pace": round(value * pace / measured - 1, 4)}
        table.append(entry)
    for name in RULES:
        errors = [e["rules"][name] for e in table if name in e["rules"]]
        if not errors:
            continue
        summary[name] = {
            "workloads": len(errors),
            "median_abs_error_at_pace": round(statistics.median(abs(e["error_at_pace"]) for e in errors), 4),
            "worst_abs_error_at_pace": round(max(abs(e["error_at_pace"]) for e in errors), 4),
            "median_abs_error": round(statistics.median(abs(e["error"]) for e in errors), 4),
            "worst_abs_error": round(max(abs(e["error"]) for e in errors), 4),
        }
    return {"workloads": table, "rules": summary}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="*", help="eta_accuracy result files (default: validation and default sets)")
    parser.add_argument("--json", help="write the table here (default: benchmarks/results/validation_rules.json, "
                                       "for the default result files only)")
    args = parser.parse_args(argv)
    files = [Path(p) for p in args.results] or [p for p in DEFAULT_RESULTS if p.exists()]
    rows = [row for f in files for row in json.loads(f.read_text())["runs"]]
    result = score(rows)
    names = list(result["rules"])
    short = {name: name.split(" [")[0] for name in names}
    print(f"{'workload (error at pace)':44s} {'ratio':>5s} {'meas.':>7s} " + " ".join(f"{short[n][:14]:>14s}" for n in names))
    for e in result["workloads"]:
        cells = " ".join(f"{e['rules'][n]['error_at_pace']:+14.1%}" if n in e["rules"] else f"{'-':>14s}" for n in names)
        print(f"{e['workload'][:44]:44s} {e['eval_train_batch_ratio']:5.2f} {e['measured_per_run_s']:7.3f} {cells}")
    for key in ("median_abs_error_at_pace", "worst_abs_error_at_pace", "median_abs_error", "worst_abs_error"):
        print(f"{key:58s} " + " ".join(f"{result['rules'][n][key]:14.1%}" for n in names))
    if args.results and not args.json:
        # the committed table scores the default files: other files are only printed unless told where to write
        print("(not written: other result files than the default ones; pass --json OUT to keep the table)")
        return
    out = Path(args.json or ROOT / "benchmarks/results/validation_rules.json")
    named = " ".join(str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f) for f in files)
    out.write_text(json.dumps({"benchmark": "validation_rules", "command": "python benchmarks/validation_rules.py "
                               + named + (f" --json {args.json}" if args.json else ""),
                               **result}, indent=1) + "\n")


if __name__ == "__main__":
    main()
