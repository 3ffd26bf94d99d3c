"""benchmarks/gc_probe.py's watcher: collections per generation, those started in this project's code, promotions."""
from __future__ import annotations

import gc

from benchmarks.gc_probe import ROOT, Collections


def _watched(seen: Collections, action) -> None:
    gc.callbacks.append(seen)
    try:
        action()
    finally:
        gc.callbacks.remove(seen)


def test_a_middle_collection_counts_its_survivors_as_promoted_and_a_young_one_promotes_nothing() -> None:
    seen = Collections(sites=True)
    enabled = gc.isenabled()
    gc.disable()   # no automatic collection between the explicit ones moves the lists on first
    try:
        gc.collect(1)
        kept = [[i] for i in range(2_000)]   # 2,000 young lists that survive
        _watched(seen, lambda: gc.collect(0))
        assert seen.count == [1, 0, 0] and seen.promoted == 0
        kept += [[i] for i in range(2_000)]
        _watched(seen, lambda: gc.collect(1))
    finally:
        if enabled:
            gc.enable()
    assert seen.count == [1, 1, 0] and 4_000 <= seen.promoted < 4_100   # both batches, and a few of the test's own
    assert seen.in_prenet == [0, 0, 0]    # started from this test, not from the project's code
    seen.reset()
    assert (seen.count, seen.in_prenet, seen.promoted) == ([0, 0, 0], [0, 0, 0], 0)
    del kept


def test_a_collection_started_in_the_projects_code_is_counted_there() -> None:
    seen = Collections(sites=True)
    # a frame whose code lives in the project's package, as PreNeT's own calls and its profiler's are
    code = compile("gc.collect(0)", str(ROOT / "prenet_callbacks" / "session" / "machine.py"), "exec")
    _watched(seen, lambda: exec(code, {"gc": gc}))
    assert seen.count == [1, 0, 0] and seen.in_prenet == [1, 0, 0]
    plain = Collections()   # without sites: counts alone
    _watched(plain, lambda: exec(code, {"gc": gc}))
    assert plain.count == [1, 0, 0] and plain.in_prenet == [0, 0, 0]
