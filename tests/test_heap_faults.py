"""Steps that start or stop re-faulting their memory: the counts, the opted-in probe, and the band's reach.

By default the watch changes nothing (no ``malloc_trim``): it prices only what the run was seen paying."""
from __future__ import annotations

import ctypes
import sys
import types

import pytest
import torch

from integrations.loop import Tracker
from prenet_callbacks.measure import heap_faults
from prenet_callbacks.forecast.eta import RunMeasurements, predict_fit
from prenet_callbacks.measure.heap_faults import HeapRisk, HeapWatch, glibc_trim
from prenet_callbacks.forecast.plan import RunPlan
from prenet_callbacks.measure.sanity import minor_faults
from prenet_callbacks.session.machine import PredictionSession, SessionConfig
from prenet_callbacks.session.schedule import Schedule


class Faults:
    """A fault counter the test advances; ``trims`` counts the heap trims asked for."""

    def __init__(self) -> None:
        self.count = 0
        self.trims = 0

    def __call__(self) -> int:
        return self.count

    def trim(self) -> None:
        self.trims += 1


def _measured(batch_s: float = 0.01, n: int = 20) -> RunMeasurements:
    m = RunMeasurements()
    for _ in range(n):
        m.batch.add(batch_s)
    return m


def test_watch_counts_the_probe_batch_and_the_median_of_timed_ones():
    faults = Faults()
    watch = HeapWatch(faults, lambda: 1e-6, faults.trim)
    assert watch.risk() is None                        # nothing probed yet
    watch.batch_end(timing=False)                      # an untimed batch: not counted
    watch.start_probe()
    faults.count += 2000
    watch.batch_end(timing=False)                      # the probe: every page it touched was fresh
    for extra in (10, 0, 5000, 20):                    # one interval held an evaluation: the median ignores it
        faults.count += extra
        watch.batch_end(timing=True)
    faults.count += 9999
    watch.skip_interval()                              # a prediction ran in between: not a batch
    faults.count += 15
    watch.batch_end(timing=True)
    risk = watch.risk()
    assert faults.trims == 1
    assert risk.probe_faults == 2000 and risk.current_faults == 15
    assert risk.refault_s == pytest.approx(1985e-6) and risk.faulting_s == pytest.approx(15e-6)


def test_without_a_trim_the_watch_counts_timed_batches_and_probes_nothing():
    faults = Faults()
    watch = HeapWatch(faults, lambda: 1e-6)
    watch.start_probe()                                # asked for, not opted in: nothing happens
    faults.count += 2000
    watch.batch_end(timing=False)                      # an untimed batch: not a probe, not counted
    assert watch.risk() is None and watch.probe_faults is None
    for extra in (10, 30, 20):
        faults.count += extra
        watch.batch_end(timing=True)
    risk = watch.risk()
    assert risk.probe_faults is None and risk.current_faults == 20
    assert risk.refault_s == 0.0 and risk.faulting_s == pytest.approx(20e-6)   # only the state seen is priced


def test_a_run_that_faults_now_may_stop_and_one_that_does_not_may_start():
    clean, faulting = HeapRisk(2000, 0.0, 1e-6), HeapRisk(2000, 1800.0, 1e-6)
    assert clean.reach_s(1000) == pytest.approx((0.0, 2.0))
    assert faulting.reach_s(1000) == pytest.approx((1.8, 0.2))
    # batches of 10 ms, 1,000 left of a 10-s run: 2 ms more a batch is 20% of it, 1.8 ms less is 18%
    may_start, may_stop = clean.describe(0.010, 1000, 10.0), faulting.describe(0.010, 1000, 10.0)
    assert may_start.startswith("memory: each batch would take 2.0 ms (20% of a batch) longer if the C library's "
                                "allocator (glibc) starts handing freed memory back") and "(up to +20%)" in may_start
    assert may_stop.startswith("memory: each batch spends 1.8 ms (18% of a batch) asking the system again for 7 MB")
    assert "this may stop at any point" in may_stop and "(-18%)" in may_stop
    assert "MALLOC_TOP_PAD_=268435456 in the environment" in may_stop
    # the same faults beside batches of 100 ms (2% of a batch): not worth a note, however long the run
    assert clean.describe(0.100, 1000, 100.0) is None and faulting.describe(0.100, 100_000, 10_000.0) is None
    assert HeapRisk(2000, 0.0, 0.51e-6).describe(0.020, 1000, 20.0) is not None   # 1.02 ms of 20 ms: 5.1%
    assert HeapRisk(2000, 0.0, 0.49e-6).describe(0.020, 1000, 20.0) is None       # 0.98 ms: 4.9%
    unprobed_clean, unprobed_faulting = HeapRisk(None, 0.0, 1e-6), HeapRisk(None, 1800.0, 1e-6)
    assert unprobed_clean.reach_s(1000) == (0.0, 0.0) and unprobed_clean.describe(0.010, 1000, 10.0) is None
    assert unprobed_faulting.reach_s(1000) == pytest.approx((1.8, 0.0))       # measured on the run: it stays
    assert "this may stop" in unprobed_faulting.describe(0.010, 1000, 10.0)


def test_band_reaches_the_other_state_on_its_side_only():
    plan = RunPlan(total_batches=1000, batches_per_epoch=1000, max_epochs=1)
    m = _measured()
    kwargs = dict(done_batches=20, done_steps=20, elapsed_s=0.2)
    plain = predict_fit(plan, m, **kwargs)
    may_start = predict_fit(plan, m, allocator=HeapRisk(4000, 0.0, 1e-6), **kwargs)   # +4 ms a batch possible
    may_stop = predict_fit(plan, m, allocator=HeapRisk(4000, 4000.0, 1e-6), **kwargs)  # -4 ms a batch possible
    assert may_start.predicted_total_s == plain.predicted_total_s == may_stop.predicted_total_s  # the centre stays
    assert may_start.high_s >= plain.predicted_total_s + 980 * 4e-3                  # reaches the faulting state
    assert may_start.low_s == pytest.approx(plain.low_s)
    assert may_stop.low_s <= plain.predicted_total_s - 980 * 4e-3
    assert may_stop.high_s == pytest.approx(plain.high_s)
    assert "(glibc)" in may_start.note and plain.note is None
    unseen = predict_fit(plan, m, allocator=HeapRisk(None, 0.0, 1e-6), **kwargs)   # no probe: no state priced
    assert (unseen.low_s, unseen.high_s) == pytest.approx((plain.low_s, plain.high_s)) and unseen.note is None


def test_schedule_probes_an_untimed_step_after_the_first():
    assert Schedule(3, 3, 20).heap_probe_step == 2          # the last warm-up step
    assert Schedule(1, 3, 20).heap_probe_step == 3          # else the last profiled step
    assert Schedule(1, 0, 20).heap_probe_step is None       # only the first step is untimed: it faults anyway
    for schedule in (Schedule(3, 3, 20), Schedule(1, 3, 20)):
        assert not schedule.times(schedule.heap_probe_step)


def _session_run(allocator_probe: bool, watched: bool = True,
                 faults_per_batch: int = 2) -> tuple[PredictionSession, Faults, list[int]]:
    """A fake-clock session over 40 batches (two a step) whose counter fakes the faults (``watched``: under a
    glibc with ``malloc_trim``); the batches it trimmed at."""
    clock, faults = [0.0], Faults()
    session = PredictionSession(SessionConfig(warmup_steps=3, profile_steps=0, timing_steps=5, refine_every_n_steps=1000,
                                              profile_layers=False, print_report=False,
                                              allocator_probe=allocator_probe), clock=lambda: clock[0])
    session.count_faults, session.fault_cost = faults, lambda: 1e-6
    session.heap_trim = faults.trim if watched else None
    session.fit_start({"device": "cpu"})
    session.set_plan(RunPlan(total_batches=2000, batches_per_epoch=2000, max_epochs=1, accumulate=2))
    trims_at = []
    for batch in range(40):
        before = faults.trims
        session.batch_start()
        probing = faults.trims > before
        if probing:
            trims_at.append(batch)
        clock[0] += 0.01
        faults.count += 3000 if probing else faults_per_batch   # after a trim every page is fresh
        session.batch_end(stepped=batch % 2 == 1, global_step=(batch + 1) // 2)
    return session, faults, trims_at


def test_an_opted_in_session_trims_once_at_the_probe_steps_first_batch_and_its_band_reaches_the_faulting_state():
    session, faults, trims_at = _session_run(allocator_probe=True)
    assert trims_at == [4] and faults.trims == 1   # step 2's first batch (two batches a step), and only there
    first = session.report.first_prediction
    assert first["high_s"] - first["predicted_total_s"] >= (2000 - first["at_batch"]) * 2.9e-3
    assert "glibc" in first["note"]


def test_by_default_a_session_never_trims_and_prices_no_state_it_has_not_seen():
    session, faults, trims_at = _session_run(allocator_probe=False)
    assert faults.trims == 0 and trims_at == []
    assert session.heap_watch is not None and session.heap_watch.probe_faults is None   # it watched, counting
    first, unwatched = session.report.first_prediction, _session_run(False, watched=False)[0].report.first_prediction
    # the steps faulted 2 pages each (2 us of 10 ms): nothing to say, and the band reaches no state it has not seen
    assert (first["low_s"], first["high_s"]) == pytest.approx((unwatched["low_s"], unwatched["high_s"]))
    assert "glibc" not in (first["note"] or "")


def test_by_default_a_run_seen_faulting_keeps_that_cost_and_the_band_reaches_down_to_its_end():
    session, faults, _ = _session_run(allocator_probe=False, faults_per_batch=3000)   # 3 ms of each 10 ms batch
    unwatched = _session_run(False, watched=False, faults_per_batch=3000)[0].report.first_prediction
    first = session.report.first_prediction
    assert faults.trims == 0 and first["predicted_total_s"] == pytest.approx(unwatched["predicted_total_s"])
    # the faults were measured on the run: the band reaches the batches without them (3 ms each)
    assert first["predicted_total_s"] - first["low_s"] >= (2000 - first["at_batch"]) * 2.9e-3 > 0
    assert first["low_s"] < unwatched["low_s"]
    assert first["high_s"] == pytest.approx(unwatched["high_s"])                     # nothing unseen above
    assert "this may stop" in first["note"]


class _Libc:
    """Stands for glibc in `heap_faults.glibc_trim`: its ``malloc_trim`` records each call (and takes
    ctypes' ``argtypes``/``restype`` as a C function does: a Python function accepts attributes)."""

    def __init__(self, calls: list[int]) -> None:
        def malloc_trim(pad: int) -> int:
            calls.append(pad)
            return 0

        self.malloc_trim = malloc_trim


def _real_loop(tmp_path, monkeypatch, **options) -> tuple[Tracker, list[int]]:
    """A real Tracker loop (host clock, real page faults) with glibc's malloc_trim recorded, never called."""
    if not sys.platform.startswith("linux") or minor_faults() is None:
        pytest.skip("the heap watch runs on Linux, where getrusage counts minor faults")
    calls: list[int] = []
    monkeypatch.delenv("MALLOC_TOP_PAD_", raising=False)
    monkeypatch.setattr(heap_faults, "ctypes", types.SimpleNamespace(CDLL=lambda name: _Libc(calls),
                                                                     c_size_t=ctypes.c_size_t, c_int=ctypes.c_int))
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    tracker = Tracker(total_steps=30, model=model, optimizer=optimizer, report_path=tmp_path / "r.json",
                      warmup_steps=3, profile_steps=1, timing_steps=5, targets=[], print_report=False, html=False,
                      **options)
    for _ in range(30):
        with tracker.train_step():
            model(torch.randn(16, 32)).pow(2).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
    watch = tracker.run.session.heap_watch
    tracker.close()
    assert watch is not None and tracker.report.first_prediction is not None   # the watch was there
    return tracker, calls


def test_a_real_loop_by_default_never_calls_malloc_trim(tmp_path, monkeypatch):
    tracker, calls = _real_loop(tmp_path, monkeypatch)
    assert calls == []
    assert tracker.run.session.heap_watch.probe_faults is None


def test_a_real_loop_with_allocator_probe_trims_the_heap_once(tmp_path, monkeypatch):
    tracker, calls = _real_loop(tmp_path, monkeypatch, allocator_probe=True)
    assert calls == [0]                                     # malloc_trim(0), once, before the probe batch
    assert tracker.run.session.heap_watch.probe_faults is not None


def test_a_fake_clock_session_has_no_watch_and_a_real_one_on_a_cpu_has_one():
    fake = PredictionSession(SessionConfig(print_report=False), clock=lambda: 0.0)
    fake.fit_start({"device": "cpu"})
    assert fake.heap_watch is None          # a fake clock has no faults to match
    real = PredictionSession(SessionConfig(print_report=False))
    real.fit_start({"device": "cpu"})
    expected = sys.platform.startswith("linux") and minor_faults() is not None and glibc_trim() is not None
    assert (real.heap_watch is not None) == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's (Linux)")
def test_trim_returns_freed_memory_so_the_next_allocation_faults_again(monkeypatch):
    trim = glibc_trim()
    if trim is None:
        pytest.skip("this Linux's C library has no malloc_trim (not glibc)")
    big = torch.ones(4 << 20)   # 16 MB, freed below
    del big
    trim()
    before = minor_faults()
    torch.ones(4 << 20)
    assert minor_faults() - before > 1000   # 4,096 pages of 4 KB touched afresh
    monkeypatch.setenv("MALLOC_TOP_PAD_", "268435456")
    assert glibc_trim() is None             # the user keeps the heap's top: nothing to probe


def test_a_failing_opted_in_trim_makes_the_session_step_aside_with_one_warning():
    clock = [0.0]
    session = PredictionSession(SessionConfig(warmup_steps=3, profile_steps=0, timing_steps=5, print_report=False,
                                              profile_layers=False, allocator_probe=True), clock=lambda: clock[0])

    def broken_trim() -> None:
        raise OSError("malloc_trim is not what it seems")

    session.count_faults, session.fault_cost, session.heap_trim = Faults(), lambda: 1e-6, broken_trim
    session.fit_start({"device": "cpu"})
    session.set_plan(RunPlan(total_batches=100, batches_per_epoch=100, max_epochs=1))
    with pytest.warns(Warning, match="malloc_trim is not what it seems") as caught:
        for step in range(10):
            session.batch_start()
            clock[0] += 0.01
            session.batch_end(stepped=True, global_step=step + 1)
    assert len(caught) == 1 and session.guard.disabled   # warned once, then quiet: the loop went on
