"""The ETA band's pace-drift allowance, chosen on the development split by its worst repeat (issue 39).

    python benchmarks/band_drift_choice.py --development FILE [FILE ...] [--held-out FILE ...]
                                           [--coverage 0.9] [--json OUT]

A host-timed run's band adds, in quadrature to its other parts, ``pace_drift``: two standard deviations
(`eta._HOST_DRIFT`) of the shared machine's pace over the rest of the run, as a share of the remaining time.
Every run of `eta_protocol.py` keeps its first prediction, its band and the band's parts, so its band can be
rebuilt at any other allowance without running it again: the pace-drift part is rescaled and the other parts
(the batch's standard error, validation, the allocator's reach ...) stay as they were.

The choice: the smallest allowance on a grid of 0.005 whose band holds the wall time the user saw (from
``fit()``/``train()``/``Tracker(...)``/``attach()`` to their return) in at least ``--coverage`` of the runs of
*every* development repeat (each file's repeats counted apart: the worst repeat decides, not the pooled set).
Held-out files are rebuilt at the chosen allowance and reported beside it, never used to choose.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# What every protocol run before the field `pace_drift_sigma` was recorded with (eta.py until 2026-12-06).
RECORDED_BEFORE_FIELD = 0.115
GRID = tuple(round(0.005 * i, 3) for i in range(41))   # 0 to 0.2


def rebuilt_band(row: dict[str, Any], sigma: float) -> tuple[float, float]:
    """``(low_s, high_s)``: the run's first band with its pace-drift part at ``sigma`` instead of the recorded one."""
    predicted = row["first_prediction_s"]
    low, high = row["first_band"]
    recorded = row.get("pace_drift_sigma", RECORDED_BEFORE_FIELD)
    drift_s = (row.get("first_band_parts") or {}).get("pace_drift", 0.0) * predicted
    scaled_s = drift_s * (sigma / recorded if recorded else 0.0)

    def reach(side_s: float) -> float:
        return math.sqrt(max(0.0, side_s**2 - drift_s**2) + scaled_s**2)

    return predicted - reach(predicted - low), predicted + reach(high - predicted)


def figures(rows: list[dict[str, Any]], sigma: float) -> dict[str, Any]:
    """Coverage of the user's wall time and the median half-width, every run rebuilt at ``sigma``."""
    held, widths = 0, []
    for row in rows:
        low, high = rebuilt_band(row, sigma)
        held += low <= row["user_wall_s"] <= high
        widths.append((high - low) / 2 / row["first_prediction_s"])
    return {"runs": len(rows), "coverage": round(held / len(rows), 4),
            "median_half_width": round(statistics.median(widths), 4), "widest_half_width": round(max(widths), 4)}


def repeats(paths: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Every file's runs, grouped by repeat: ``{"FILE#r": rows}``."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        for row in json.loads(Path(path).read_text())["runs"]:
            groups.setdefault(f"{Path(path).name}#{row.get('repeat', 0)}", []).append(row)
    return groups


def choose(development: dict[str, list[dict[str, Any]]], coverage: float) -> float | None:
    """The smallest allowance of the grid whose every development repeat reaches ``coverage``."""
    for sigma in GRID:
        if all(figures(rows, sigma)["coverage"] >= coverage for rows in development.values()):
            return sigma
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--development", nargs="+", required=True, help="eta_protocol.py files of the development split")
    parser.add_argument("--held-out", nargs="*", default=[], help="eta_protocol.py files of the held-out split (reported only)")
    parser.add_argument("--coverage", type=float, default=0.9, help="coverage every development repeat must reach")
    parser.add_argument("--json", help="write the choice and the figures here")
    args = parser.parse_args(argv)
    if not 0 < args.coverage <= 1:
        raise SystemExit(f"--coverage must be in (0, 1], got {args.coverage}")
    from prenet_callbacks.forecast.eta import _HOST_DRIFT

    development = repeats(args.development)
    held_out = repeats(args.held_out)
    chosen = choose(development, args.coverage)
    if chosen is None:
        raise SystemExit(f"no allowance up to {GRID[-1]} holds {args.coverage:.0%} of every development repeat")
    pooled_dev = [r for rows in development.values() for r in rows]
    pooled_held = [r for rows in held_out.values() for r in rows]
    table = {}
    for sigma in sorted({chosen, _HOST_DRIFT, RECORDED_BEFORE_FIELD}):
        table[str(sigma)] = {
            "development": figures(pooled_dev, sigma),
            "development_repeats": {k: figures(rows, sigma) for k, rows in development.items()},
            **({"held_out": figures(pooled_held, sigma),
                "held_out_repeats": {k: figures(rows, sigma) for k, rows in held_out.items()}} if held_out else {}),
        }
    for sigma, row in table.items():
        worst = min(f["coverage"] for f in row["development_repeats"].values())
        line = (f"sigma {sigma}: development {row['development']['coverage']:.1%} (worst repeat {worst:.1%}), "
                f"half-width {row['development']['median_half_width']:.1%}")
        if held_out:
            line += (f"; held out {row['held_out']['coverage']:.1%}, "
                     f"half-width {row['held_out']['median_half_width']:.1%}")
        print(line + ("  <- chosen" if float(sigma) == chosen else ""))
    if args.json:
        from benchmarks.result_file import write_result

        write_result(args.json, "band_drift_choice", argv, coverage_target=args.coverage, chosen_sigma=chosen,
                     shipped_sigma=_HOST_DRIFT, development_files=args.development, held_out_files=args.held_out,
                     figures=table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
