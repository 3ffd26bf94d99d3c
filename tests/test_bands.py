"""Regime bands: built from measured errors, never narrower than the regime's, falling back when sparse."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from prenet_callbacks import estimate
from prenet_callbacks.projection.rows import bands
from predictor_models.hardware import lookup_hardware


def _rows(n: int, error: float, **regime) -> list[dict]:
    base = {"half": False, "method": "absolute", "matrix_units": True, "host_bound": False}
    base.update(regime)
    return [dict(base, log_error=math.log1p(error) * (i + 1) / n) for i in range(n)]


def test_table_is_the_90th_percentile_per_regime_with_fallbacks() -> None:
    rows = _rows(10, 0.5) + _rows(10, 0.1, half=True) + _rows(3, 2.0, half=True, host_bound=True)
    table = bands.build_table(rows)
    fp32 = bands.width_from(table, False, "absolute", True, False)
    half = bands.width_from(table, True, "absolute", True, False)
    assert fp32 == pytest.approx(math.log1p(0.5) * 0.91, rel=1e-3)
    assert half < fp32
    # 3 host-bound rows are too few for their own cell: the half/absolute/matrix cell (13 rows) answers
    sparse = bands.width_from(table, True, "absolute", True, True)
    assert sparse == table["half/absolute/matrix"]["width"]
    # nothing measured for anchored: the error of every measured step (23 rows), not a guess
    assert bands.width_from(table, False, "anchored", True, False) == table[bands.ALL_ROWS]["width"]
    assert table[bands.ALL_ROWS]["n"] == 23
    # an empty table: the flat fallback
    assert bands.width_from({}, False, "anchored", True, False) == pytest.approx(math.log1p(0.2))


def test_widen_keeps_a_wider_band_and_is_multiplicative() -> None:
    low, high = bands.widen(10.0, 9.0, 11.0, math.log(2.0))
    assert (low, high) == pytest.approx((5.0, 20.0))
    assert bands.widen(10.0, 1.0, 50.0, math.log(2.0)) == (1.0, 50.0)


def test_matrix_units() -> None:
    assert bands.has_matrix_units(lookup_hardware("A100"))
    assert not bands.has_matrix_units(lookup_hardware("P100"))


def test_every_target_row_holds_at_least_its_regime_band() -> None:
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512))
    x = torch.empty(4096, 512, device="meta")
    for precision in ("32-true", "bf16-mixed"):
        est = estimate(model, x, targets=["A100", "H100", "P100"], precision=precision)
        for row in est.rows:
            acc = lookup_hardware(row["name"])
            width = bands.regime_width(precision != "32-true", row["method"], acc, row["host_bound"])
            # rows are rounded to the microsecond
            assert row["step_low_s"] <= row["step_s"] * math.exp(-width) + 2e-6
            assert row["step_high_s"] >= row["step_s"] * math.exp(width) - 2e-6
            assert row["band_width"] == pytest.approx(math.expm1(width), abs=1e-4)


def test_the_shipped_table_is_the_one_the_committed_results_give() -> None:
    """`band_table.json` is derived from the committed evaluation results (`benchmarks/band_table.py`): a result
    rewritten without re-deriving the table would leave every row's band built from errors no file holds."""
    import json
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    from benchmarks.band_table import table_document

    shipped = json.loads(bands.TABLE_PATH.read_text())
    derived = json.loads(json.dumps(table_document()))
    assert shipped == derived, "run `python benchmarks/band_table.py` after rewriting an evaluation result"
