"""The sanity check timed warm: first-touch page faults taken off, measured on this machine."""
from __future__ import annotations

import sys

import pytest

from prenet_callbacks.measure.sanity import SanityTimer, minor_faults, seconds_per_fault


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def __call__(self) -> int:
        return self.value


def timed(faults_per_batch: list[int], seconds_per_batch: list[float], *, cost: float | None = 2e-6,
          count: bool = True, fixed_s: float = 0.05) -> tuple[float, float, float] | None:
    counter = Counter()
    timer = SanityTimer(faults=counter if count else None, fault_cost=lambda: cost)
    now = 1.0
    timer.start(now)
    now += fixed_s
    for faults, seconds in zip(faults_per_batch, seconds_per_batch):
        counter.value += faults
        now += seconds
        timer.batch_end(now)
    return timer.result(now)


def test_faults_between_the_batches_come_off_the_per_batch_cost():
    # batch 2 took 0.130 s of which 15,000 faults at 2 us: 0.100 s warm
    per_batch, fixed, removed = timed([20_000, 15_000], [0.200, 0.130])
    assert per_batch == pytest.approx(0.100)
    assert removed == pytest.approx(35_000 * 2e-6)
    # the run's fixed part is what the warm run took beyond its batches: 0.38 - 0.07 - 2 x 0.1
    assert fixed == pytest.approx(0.05 + 0.200 + 0.130 - 0.070 - 0.200)


def test_without_fault_counts_the_sanity_check_is_taken_as_timed():
    assert timed([20_000, 15_000], [0.200, 0.130], count=False) == pytest.approx((0.130, 0.05 + 0.2 - 0.13, 0.0))
    assert timed([20_000, 15_000], [0.200, 0.130], cost=None) == pytest.approx((0.130, 0.05 + 0.2 - 0.13, 0.0))


def test_a_fault_cost_measured_under_load_never_erases_the_batch():
    per_batch, _, _ = timed([0, 100_000], [0.1, 0.1], cost=1e-5)  # 1 s of "faults" in a 0.1 s batch
    assert per_batch == pytest.approx(0.1 * 0.4)


def test_one_batch_gives_the_whole_run_per_batch():
    assert timed([1000], [0.2], fixed_s=0.0) == pytest.approx((0.2 - 1000 * 2e-6, 0.0, 1000 * 2e-6))
    assert SanityTimer().result(3.0) is None


@pytest.mark.skipif(sys.platform == "win32", reason="no resource module on Windows: no page-fault counts")
def test_this_machine_counts_faults_and_measures_their_cost():
    import mmap

    # an anonymous mapping is always fresh pages (a bytearray may reuse pages the allocator kept from earlier tests)
    buffer = mmap.mmap(-1, 16 << 20)
    before = minor_faults()
    for offset in range(0, 16 << 20, 4096):
        buffer[offset] = 1   # first touch of each page
    assert minor_faults() - before > 1000
    buffer.close()
    cost = seconds_per_fault()
    # a first-touch fault costs somewhere between 0.05 and 50 us on any machine this runs on
    assert cost is not None and 5e-8 < cost < 5e-5
