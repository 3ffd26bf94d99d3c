"""Per-precision error summary of predicted against measured steps, shared by the step benchmarks."""
from __future__ import annotations

import json
import statistics
from pathlib import Path


def step_summary(table: list[dict], measured_key: str) -> dict[str, dict]:
    """``{precision: {n, median_error, median_abs_error, worst_abs_error, inside_band}}`` over rows with
    ``precision``, signed ``error`` (predicted / measured - 1), ``band`` [low, high] and ``measured_key``."""
    result = {}
    for precision in sorted({r["precision"] for r in table}):
        mine = [r for r in table if r["precision"] == precision]
        errs = [r["error"] for r in mine]
        inside = [r for r in mine if None not in r["band"] and r["band"][0] <= r[measured_key] <= r["band"][1]]
        result[precision] = {"n": len(errs), "median_error": round(statistics.median(errs), 4),
                             "median_abs_error": round(statistics.median(map(abs, errs)), 4),
                             "worst_abs_error": round(max(map(abs, errs)), 4), "inside_band": f"{len(inside)}/{len(errs)}"}
    return result


def publish(result: dict, json_path: str | None) -> int:
    """Print the result's summary and write the whole result to ``json_path`` when given; the exit code."""
    print(json.dumps(result["summary"], indent=1))
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=1) + "\n")
    return 0
