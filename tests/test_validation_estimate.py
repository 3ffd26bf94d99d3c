"""A validation run estimated before one is measured (issue 24), from synthetic measurements.

The rule: where the model's forward was replayed in eval mode (`eval_probe`) and a sanity check ran,
the smaller of the two (a cold sanity check has no upper bound); one of them where only one exists; else the sanity check and the warm training forward scaled to the eval batch, both
high-side estimates of a warm validation run, the smaller used. The page-fault-corrected
sanity figure is not an estimate (faults can recur in every real validation run) but the band reaches it,
and the band reaches every candidate where they disagree.
"""
from __future__ import annotations

import pytest

from prenet_callbacks.forecast.eta import RunMeasurements, predict_fit
from prenet_callbacks.forecast.eta_validation import validation_estimate as _validation_estimate, validation_uncertainty as _validation_uncertainty
from prenet_callbacks.forecast.plan import RunPlan


def plan(val_batches: int = 8, **kwargs) -> RunPlan:
    defaults = dict(total_batches=384, batches_per_epoch=32, max_epochs=12, val_batches=val_batches, val_check_batch=32)
    defaults.update(kwargs)
    return RunPlan(**defaults)


def measurements(*, batch_s=0.047, forward_s=0.02, data_s=0.001, train_bs=64, val_bs=128, sanity_raw=None,
                 sanity_faults_per_batch=0.0, sanity_batches=2, host_timed=True) -> RunMeasurements:
    m = RunMeasurements(train_batch_size=train_bs, val_batch_size=val_bs, eval_forward_share=1.0, host_timed=host_timed)
    for _ in range(20):
        m.batch.add(batch_s)
        m.forward_per_batch.add(forward_s)
        m.data_per_batch.add(data_s)
    if sanity_raw is not None:
        m.sanity_val_raw_per_batch = sanity_raw
        m.sanity_val_per_batch = sanity_raw - sanity_faults_per_batch
        m.sanity_val_fixed = 0.0
        m.sanity_page_faults_s = sanity_faults_per_batch * sanity_batches
        m.sanity_val_batches = sanity_batches
    return m


def first_prediction(p: RunPlan, m: RunMeasurements):
    return predict_fit(p, m, done_batches=15, done_steps=15, elapsed_s=1.0)


def test_issue_24_cnn_eval_batch_twice_the_training_batch_faults_in_every_validation_run():
    # issue 24: sanity batches of 128 took 37 ms each, 24 ms of it page faults; the real validation runs
    # (8 batches) took 0.26-0.30 s because they fault too. The old rule took the faults off and then the
    # smaller of that and the forward estimate: 8 x 13 ms = 0.10 s, -63%.
    p, m = plan(), measurements(forward_s=0.02, sanity_raw=0.037, sanity_faults_per_batch=0.024)
    measured_per_run = 0.28
    estimate = _validation_estimate(p, m, m.batch.mean)
    assert estimate.how == "sanity"
    assert estimate.per_run_s == pytest.approx(measured_per_run, rel=0.1)
    assert "sanity check (2 batches at the eval batch size, as timed)" in estimate.basis
    assert "page faults in the sanity check may not recur" in estimate.basis
    # the band reaches the fault-corrected figure, in case the faults do not recur
    rel = _validation_uncertainty(p, m, estimate.per_run_s, estimate.how, estimate)
    assert estimate.per_run_s * (1 - 2 * rel) <= 8 * 0.013 + 1e-9


def test_the_whole_run_band_holds_the_issue_24_cnn():
    p, m = plan(), measurements(forward_s=0.02, sanity_raw=0.037, sanity_faults_per_batch=0.024)
    first = first_prediction(p, m)
    # what the fit then takes: its batches at the measured rate and 12 validation runs of 0.28 s
    actual = 1.0 + (384 - 15) * 0.047 + 12 * 0.28 + 13 * 0.0
    assert first.low_s <= actual <= first.high_s
    assert first.predicted_total_s == pytest.approx(actual, rel=0.02)
    assert first.validation_source == "sanity"


def test_a_sanity_check_slower_than_the_forward_bound_gives_way_to_it():
    # a cold sanity check 2.2x the warm forward's figure: the forward is the tighter bound, the band reaches both
    p, m = plan(), measurements(forward_s=0.02, val_bs=64, sanity_raw=0.046)
    estimate = _validation_estimate(p, m, m.batch.mean)
    warm = 8 * (0.02 + 0.001)
    assert (estimate.how, estimate.per_run_s) == ("warm", pytest.approx(warm))
    assert "training forward x batch ratio (eval batch 64 / training batch 64)" in estimate.basis
    assert "the sanity check was 2.2x higher" in estimate.basis
    assert "the estimates span 0.168-0.368 s a run and the band covers them" in estimate.basis
    rel = _validation_uncertainty(p, m, estimate.per_run_s, estimate.how, estimate)
    assert estimate.per_run_s * (1 + 2 * rel) >= 8 * 0.046 - 1e-9


def test_without_a_sanity_check_the_forward_alone_is_used_with_a_wide_band():
    # num_sanity_val_steps=0: the training forward records autograd and runs train-mode layers; eval
    # kernels can be several times cheaper (CPU LSTM inference), so the band reaches far below it
    p, m = plan(), measurements(forward_s=0.02, val_bs=None)
    estimate = _validation_estimate(p, m, m.batch.mean)
    assert estimate.how == "warm"
    assert "no sanity check" in estimate.basis and "eval batch size unknown" in estimate.basis
    assert _validation_uncertainty(p, m, estimate.per_run_s, estimate.how, estimate) >= 0.5


def test_agreeing_estimates_keep_a_narrow_validation_term():
    p, m = plan(), measurements(forward_s=0.02, val_bs=64, sanity_raw=0.02)
    estimate = _validation_estimate(p, m, m.batch.mean)
    assert estimate.how == "sanity" and "band covers" not in estimate.basis
    assert _validation_uncertainty(p, m, estimate.per_run_s, estimate.how, estimate) == pytest.approx(0.15)


def test_a_measured_validation_run_ends_the_estimate():
    p, m = plan(), measurements(sanity_raw=0.037, sanity_faults_per_batch=0.024)
    m.validation_run.add(0.3)
    estimate = _validation_estimate(p, m, m.batch.mean)
    assert (estimate.how, estimate.per_run_s, estimate.basis) == ("measured", 0.3, "measured (1 run)")


def test_the_basis_is_in_the_prediction_and_its_note_when_validation_is_large():
    p, m = plan(val_batches=40), measurements(forward_s=0.02, sanity_raw=0.037, sanity_faults_per_batch=0.024)
    first = first_prediction(p, m)
    assert first.to_dict()["validation_basis"].startswith("sanity check (2 batches")
    assert "validation not measured yet" in first.note and "estimated from: sanity check" in first.note


def test_a_shared_hosts_band_allows_for_its_pace_and_a_gpus_does_not():
    p = plan()
    host = first_prediction(p, measurements(sanity_raw=0.03, val_bs=64, forward_s=0.03))
    gpu = first_prediction(p, measurements(sanity_raw=0.03, val_bs=64, forward_s=0.03, host_timed=False))
    assert host.predicted_total_s == pytest.approx(gpu.predicted_total_s)
    remaining = host.predicted_total_s - host.elapsed_s
    # a run whose machine slows by 10% after the first prediction is inside a shared host's band
    assert host.high_s >= host.elapsed_s + 1.1 * remaining
    assert gpu.high_s - gpu.low_s < host.high_s - host.low_s


def _replayed(m: RunMeasurements, *, eval_s: float, call_s: float) -> RunMeasurements:
    m.eval_forward_s = eval_s
    for _ in range(16):
        m.model_call.add(call_s)
    return m


def test_a_cold_sanity_check_far_above_the_replayed_eval_forward_gives_way_to_it():
    p = plan()
    m = _replayed(measurements(forward_s=0.02, sanity_raw=0.05), eval_s=0.006, call_s=0.016)
    replay = 8 * (0.006 * 2 + (0.02 - 0.016) + 0.001 * 2)   # eval forward x ratio, outside the call, data
    estimate = _validation_estimate(p, m, m.batch.mean)
    assert estimate.how == "warm" and estimate.basis.startswith("the model's eval forward replayed warm")
    assert "the smaller of it and the sanity check" in estimate.basis and "x higher" in estimate.basis
    assert estimate.per_run_s == pytest.approx(replay)
    assert estimate.low_s == pytest.approx(replay) and estimate.high_s == pytest.approx(8 * 0.05)
    rel = _validation_uncertainty(p, m, estimate.per_run_s, estimate.how, estimate)
    assert estimate.per_run_s * (1 + 2 * rel) >= 8 * 0.05 - 1e-9   # the band reaches the sanity check


def test_a_sanity_check_below_the_replay_is_used():
    p = plan()
    m = _replayed(measurements(forward_s=0.02, sanity_raw=0.015), eval_s=0.006, call_s=0.016)
    estimate = _validation_estimate(p, m, m.batch.mean)
    assert estimate.how == "sanity" and estimate.per_run_s == pytest.approx(8 * 0.015)
    assert estimate.basis.startswith("the sanity check (2 cold batches")


def test_without_a_sanity_check_the_replay_comes_before_the_training_forward():
    p = plan()
    m = _replayed(measurements(forward_s=0.02, train_bs=64, val_bs=32), eval_s=0.008, call_s=0.018)
    estimate = _validation_estimate(p, m, m.batch.mean)
    assert estimate.how == "warm" and "replayed" in estimate.basis and "eval batch 32 / training batch 64" in estimate.basis
    assert estimate.per_run_s == pytest.approx(8 * (0.008 * 0.5 + 0.002 + 0.001 * 0.5))
    # the training forward (autograd, train-mode layers) stays a candidate the band reaches
    assert estimate.high_s == pytest.approx(8 * (0.02 * 0.5 + 0.001 * 0.5))


def test_scoring_other_result_files_leaves_the_committed_table_alone(tmp_path, capsys):
    """`benchmarks/validation_rules.py` on other files than its defaults prints its table and writes nothing unless
    told where (it once overwrote the committed `validation_rules.json` with another split's scores)."""
    from pathlib import Path

    from benchmarks.validation_rules import main

    root = Path(__file__).resolve().parents[1]
    committed = root / "benchmarks/results/validation_rules.json"
    before = committed.read_text()
    source = root / "benchmarks/results/issue39_saves/eta_protocol_development_saves.json"
    main([str(source)])
    assert committed.read_text() == before
    assert "not written" in capsys.readouterr().out
    out = tmp_path / "rules.json"
    main([str(source), "--json", str(out)])
    assert "cnn_dropout_eval_4x_metrics" in out.read_text()
