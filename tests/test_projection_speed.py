"""The projection speed benchmark's in-process part (the timings themselves are the benchmark's, not a test's)."""
from __future__ import annotations

import gc

import pytest


def test_a_process_reports_its_times_and_the_collections_its_projections_set_off():
    from benchmarks.projection_speed import _time_in_this_process, targets

    callbacks = list(gc.callbacks)
    out = _time_in_this_process(24, targets(6, 1), repeats=2)
    assert gc.callbacks == callbacks                   # the watch is removed
    assert len(out["seconds"]) == 2 and all(s > 0 for s in out["seconds"])
    assert len(out["collections_per_projection"]) == 3 and all(c >= 0 for c in out["collections_per_projection"])
    assert out["collection_ms_per_projection"] >= 0


def test_paired_summary_reads_each_side_and_the_pairs_ratios():
    from benchmarks.projection_speed_paired import summarise

    out = summarise([0.040, 0.050, 0.060, 0.045], [0.050, 0.050, 0.050, 0.060])
    assert out["pairs"] == 4 and out["this_median_ms"] == 47.5 and out["other_median_ms"] == 50.0
    assert out["ratio_median"] == 0.9        # ratios 0.8, 1.0, 1.2, 0.75
    assert out["share_faster"] == 0.5
    with pytest.raises(ValueError):
        summarise([0.1], [0.1, 0.2])


def test_two_warm_processes_time_projections_in_turn(tmp_path):
    """Both sides this checkout (an A/A): one time per side and pair, from two processes that stay warm."""
    from pathlib import Path

    from benchmarks.projection_speed_paired import run_pairs

    root = str(Path(__file__).resolve().parent.parent)
    this_s, other_s = run_pairs((root, root), pairs=3, layers=24, n_targets=6, layouts=1)
    assert len(this_s) == len(other_s) == 3 and all(s > 0 for s in this_s + other_s)


def test_the_pairs_also_time_the_predictor_alone():
    """``--predictor``: each side times `predict_matrix` on the predictor benchmark's ops (an A/A of this checkout)."""
    from pathlib import Path

    from benchmarks.projection_speed_paired import run_pairs

    root = str(Path(__file__).resolve().parent.parent)
    this_s, other_s = run_pairs((root, root), pairs=2, layers=24, n_targets=6, layouts=1, predictor_only=True)
    assert len(this_s) == len(other_s) == 2 and all(s > 0 for s in this_s + other_s)
