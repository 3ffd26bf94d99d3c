"""The first-fit own-time benchmark's summary (the runs themselves take a training loop each)."""
from __future__ import annotations

from benchmarks.first_fit_own_time import PARTS, summarise


def test_the_summary_gives_each_figure_its_median_and_range_over_the_processes():
    runs = [{"fit_s": 8.0 + i, **{part: float(i * 10 + j) for j, part in enumerate(PARTS)}} for i in (2, 0, 1)]
    summary = summarise(runs)
    assert set(summary) == {"fit_s", *PARTS}
    assert summary["fit_s"] == {"median": 9.0, "min": 8.0, "max": 10.0}
    assert summary["profiling_s"] == {"median": 13.0, "min": 3.0, "max": 23.0}
