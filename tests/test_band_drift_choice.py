"""The pace-drift allowance is rebuilt from a run's recorded band and chosen by the worst development repeat."""
from __future__ import annotations

import json
import math

import pytest

from benchmarks import band_drift_choice as choice


def _run(predicted: float, wall: float, drift: float, other: float, repeat: int = 0, sigma: float = 0.1) -> dict:
    """A protocol row whose band is ``drift`` and ``other`` (relative half-widths) in quadrature."""
    half = predicted * math.hypot(drift, other)
    return {"first_prediction_s": predicted, "first_band": [predicted - half, predicted + half],
            "first_band_parts": {"pace_drift": drift, "train_rate": other}, "user_wall_s": wall,
            "repeat": repeat, "pace_drift_sigma": sigma}


def test_the_recorded_allowance_rebuilds_the_recorded_band_and_others_rescale_its_drift_part():
    row = _run(100.0, 100.0, drift=0.2, other=0.1)
    assert choice.rebuilt_band(row, 0.1) == pytest.approx(tuple(row["first_band"]))
    low, high = choice.rebuilt_band(row, 0.05)          # half the allowance: the drift part halves
    assert (high - low) / 2 == pytest.approx(100.0 * math.hypot(0.1, 0.1))
    low, high = choice.rebuilt_band(row, 0.0)
    assert (high - low) / 2 == pytest.approx(10.0)


def test_an_asymmetric_band_keeps_its_other_reach_on_each_side():
    row = _run(100.0, 100.0, drift=0.2, other=0.0)
    row["first_band"] = [100.0 - math.hypot(20.0, 5.0), 100.0 + math.hypot(20.0, 30.0)]   # the allocator's reach
    low, high = choice.rebuilt_band(row, 0.0)
    assert (100.0 - low, high - 100.0) == pytest.approx((5.0, 30.0))


def test_rows_without_the_field_were_recorded_at_the_old_constant():
    row = _run(100.0, 100.0, drift=0.23, other=0.0)
    del row["pace_drift_sigma"]
    low, high = choice.rebuilt_band(row, choice.RECORDED_BEFORE_FIELD / 2)
    assert (high - low) / 2 == pytest.approx(11.5)


def test_the_choice_is_the_smallest_allowance_that_every_repeat_reaches(tmp_path):
    # repeat 0 is quiet (every wall within 5% of its prediction); repeat 1 has one run 15% off in ten
    quiet = [_run(100.0, 104.0, drift=0.2, other=0.05, repeat=0) for _ in range(10)]
    drifting = [_run(100.0, 104.0, drift=0.2, other=0.05, repeat=1) for _ in range(9)]
    drifting.append(_run(100.0, 115.0, drift=0.2, other=0.05, repeat=1))
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"runs": quiet + drifting}))
    groups = choice.repeats([str(path)])
    assert sorted(groups) == ["dev.json#0", "dev.json#1"]
    assert choice.choose(groups, 0.9) == 0.0                # 9 of 10 in the drifting repeat: 90%
    chosen = choice.choose(groups, 1.0)                     # every run: the 15% miss must be reached
    assert math.hypot(0.05, 2 * chosen) >= 0.15 > math.hypot(0.05, 2 * (chosen - 0.005))
    assert choice.choose({"only": [_run(100.0, 300.0, drift=0.2, other=0.0)]}, 1.0) is None


def test_the_script_writes_its_choice(tmp_path, capsys):
    dev, held = tmp_path / "dev.json", tmp_path / "held.json"
    dev.write_text(json.dumps({"runs": [_run(100.0, 108.0, drift=0.2, other=0.02, repeat=r) for r in range(2)]}))
    held.write_text(json.dumps({"runs": [_run(100.0, 130.0, drift=0.2, other=0.02)]}))
    out = tmp_path / "choice.json"
    assert choice.main(["--development", str(dev), "--held-out", str(held), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["chosen_sigma"] == 0.04                   # 2 x 0.04 = 8%, with 2% in quadrature: 8.2% >= 8%
    assert result["figures"]["0.04"]["held_out"]["coverage"] == 0.0   # reported, never used to choose
    assert "<- chosen" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--coverage"):
        choice.main(["--development", str(dev), "--coverage", "0"])
