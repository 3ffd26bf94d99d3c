"""The band's parts (`eta._band`): what the first prediction's half-width is made of, named in the report."""
from __future__ import annotations

import math

import pytest

from prenet_callbacks.forecast.eta import _HOST_DRIFT, RunMeasurements, predict_fit
from prenet_callbacks.measure.heap_faults import HeapRisk
from prenet_callbacks.forecast.plan import plan_for_steps
from prenet_callbacks.report_parts import Prediction

NAMES = {"train_rate", "validation", "checkpoints", "epoch_boundaries", "pace_drift", "allocator"}


def _measured(*, host_timed: bool, batch_s: float = 0.01) -> RunMeasurements:
    m = RunMeasurements(host_timed=host_timed, train_batch_size=32, val_batch_size=32, state_bytes=4e6)
    for i in range(20):
        m.batch.add(batch_s * (1 + 0.02 * (i % 3)))
        m.forward_per_batch.add(batch_s / 3)
    return m


def _predict(*, host_timed: bool = True, allocator=None):
    plan = plan_for_steps(1000, eval_every=250, eval_batches=20, checkpoint_every=500)
    return predict_fit(plan, _measured(host_timed=host_timed), done_batches=20, done_steps=20, elapsed_s=0.3,
                       allocator=allocator)


def _half_width(p) -> float:
    return (p.high_s - p.low_s) / 2 / p.predicted_total_s


@pytest.mark.parametrize("allocator", [None, HeapRisk(4000, 0.0, 1e-6), HeapRisk(4000, 4000.0, 1e-6)])
@pytest.mark.parametrize("host_timed", [True, False])
def test_parts_are_named_and_add_in_quadrature_to_the_half_width(host_timed, allocator):
    p = _predict(host_timed=host_timed, allocator=allocator)
    assert set(p.band_parts) == NAMES
    assert all(v >= 0 for v in p.band_parts.values())
    total = math.sqrt(sum(v**2 for v in p.band_parts.values()))
    assert total == pytest.approx(_half_width(p), abs=2e-4)   # parts are rounded to 4 places


def test_each_part_is_where_its_cause_is():
    host, device = _predict(host_timed=True), _predict(host_timed=False)
    # two sigmas of the host's drift over the remaining time (most of this run is still to come)
    assert 1.8 * _HOST_DRIFT < host.band_parts["pace_drift"] <= 2 * _HOST_DRIFT
    assert device.band_parts["pace_drift"] == 0.0
    assert host.band_parts["allocator"] == pytest.approx(0.0, abs=2e-4)   # no allocator state to reach
    assert host.band_parts["validation"] > 0 and host.band_parts["checkpoints"] > 0
    faulting = _predict(allocator=HeapRisk(4000, 0.0, 1e-6))             # +4 ms a batch possible
    assert faulting.band_parts["allocator"] > 0.05
    assert {k: v for k, v in faulting.band_parts.items() if k != "allocator"} == \
        {k: v for k, v in host.band_parts.items() if k != "allocator"}


def test_the_history_entry_keeps_the_parts_and_a_prediction_without_a_total_has_none():
    entry = Prediction.from_eta(_predict(), fit=1).to_dict()
    assert set(entry["band_parts"]) == NAMES
    unknown = predict_fit(plan_for_steps(None), _measured(host_timed=True), done_batches=20, done_steps=20,
                          elapsed_s=0.3)
    assert unknown.predicted_total_s is None and unknown.band_parts == {}
    old = {k: v for k, v in entry.items() if k != "band_parts"}   # a report written before band_parts
    assert "band_parts" not in Prediction.from_dict(old).to_dict()
