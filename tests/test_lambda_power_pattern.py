"""The power-pattern analysis of the development sets (benchmarks/lambda_power_pattern.py): its rank correlation and
that it reads every committed row."""
from __future__ import annotations

import pytest

from benchmarks.lambda_power_pattern import rows, spearman, summary


def test_spearman_ranks_ties_and_too_few_rows():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # ties share their mean rank: ranks (1.5, 1.5, 3, 4) against (1, 2, 3, 4)
    assert spearman([5, 5, 6, 7], [1, 2, 3, 4]) == pytest.approx(0.949, abs=1e-3)
    assert spearman([1, 2], [2, 1]) is None and spearman([1, 1, 1], [1, 2, 3]) is None


def test_every_development_row_is_paired_with_its_power_or_named():
    kept, skipped = rows()
    assert kept and all(r["watts_per_tflop"] > 0 and r["bits"] in (16, 32) for r in kept)
    assert {r["gpu"] for r in skipped} <= {"GH200-96GB"}
    out = summary(kept)
    assert out["16-bit"]["n"] + out["32-bit"]["n"] == len(kept)
    hopper = out["16-bit"]["by_generation"]["Hopper"]["gpus"]
    assert [g["watts_per_tflop"] for g in hopper] == sorted(g["watts_per_tflop"] for g in hopper)
