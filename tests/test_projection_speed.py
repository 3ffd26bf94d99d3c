"""The projection speed benchmark's in-process part (the timings themselves are the benchmark's, not a test's)."""
from __future__ import annotations

import gc


def test_a_process_reports_its_times_and_the_collections_its_projections_set_off():
    from benchmarks.projection_speed import _time_in_this_process, targets

    callbacks = list(gc.callbacks)
    out = _time_in_this_process(24, targets(6, 1), repeats=2)
    assert gc.callbacks == callbacks                   # the watch is removed
    assert len(out["seconds"]) == 2 and all(s > 0 for s in out["seconds"])
    assert len(out["collections_per_projection"]) == 3 and all(c >= 0 for c in out["collections_per_projection"])
    assert out["collection_ms_per_projection"] >= 0
