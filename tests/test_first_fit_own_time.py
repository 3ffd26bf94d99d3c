"""The first-fit own-time benchmark's summary (the runs themselves take a training loop each)."""
from __future__ import annotations

from benchmarks.first_fit_own_time import PARTS, summarise


def test_the_summary_gives_each_figure_its_median_and_range_over_the_processes():
    runs = [{"fit_s": 8.0 + i, **{part: float(i * 10 + j) for j, part in enumerate(PARTS)}} for i in (2, 0, 1)]
    summary = summarise(runs)
    assert set(summary) == {"fit_s", *PARTS}
    assert summary["fit_s"] == {"median": 9.0, "min": 8.0, "max": 10.0}
    assert summary["profiling_s"] == {"median": 13.0, "min": 3.0, "max": 23.0}


def test_collections_are_counted_only_while_a_session_call_is_on_the_stack():
    import gc

    from benchmarks.first_fit_own_time import CollectionsInOwnTime
    from prenet_callbacks.session.own_time import OwnTime

    class Account(OwnTime):   # a subclass, so that the watch patches this class only
        pass

    seen = CollectionsInOwnTime()
    seen.watch(Account)
    account = Account()
    assert seen.accounts == [account]
    gc.callbacks.append(seen)
    try:
        gc.collect()                       # outside any session call: not PreNeT's
        assert seen.count == [0, 0, 0]
        start = account.enter()
        gc.collect()                       # inside one: counted, as a full collection
        account.leave(start)
        gc.collect(0)
    finally:
        gc.callbacks.remove(seen)
    assert seen.count == [0, 0, 1] and seen.seconds[2] > 0.0
