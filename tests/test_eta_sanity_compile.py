"""A sanity check during which a graph compiled: its first batch's excess is that graph's one-off, not a fixed
cost of every validation run (issue 24: a compiled encoder's validation estimated at 0.85 s a run for 0.29 s)."""
from __future__ import annotations

import pytest

from prenet_callbacks.measure.sanity import SanityTimer, graphs_compiled


def _timed(graphs_during: int) -> tuple[float, float, float]:
    graphs = iter([5, 5 + graphs_during])
    timer = SanityTimer(faults=None, compiled=lambda: next(graphs))
    timer.start(0.0)
    timer.batch_end(0.9)   # the first batch: the eval graph's first call
    timer.batch_end(1.0)   # a warm batch: 0.1 s
    return timer.result(1.05)


def test_fixed_part_kept_without_a_compilation():
    per_batch, fixed, removed = _timed(0)
    assert per_batch == pytest.approx(0.1) and fixed == pytest.approx(1.05 - 0.2) and removed == 0.0


def test_fixed_part_dropped_when_a_graph_compiled_during_the_check():
    per_batch, fixed, _ = _timed(1)
    assert per_batch == pytest.approx(0.1) and fixed == 0.0


def test_graph_count_reads_dynamo_counters():
    torch = pytest.importorskip("torch")
    before = graphs_compiled()
    f = torch.compile(lambda x: x * 3 + 1, backend="eager")
    f(torch.ones(4))
    assert graphs_compiled() == before + 1
