"""The A/B benchmarks' shared rotation (`benchmarks.quiet_steps_ab.three_way`) and what `lightning_batch_cost`
derives from it: each way first, middle and last in turn, medians of what every run of a way holds, and the
per-batch excess of PreNeT placed beside its own time. Fake fits, no training."""
from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import lightning_batch_cost
from benchmarks.quiet_steps_ab import three_way


def test_three_way_rotates_the_order_and_takes_medians_of_what_every_run_holds(tmp_path):
    calls = []

    def fit(mode: str, out: Path) -> dict:
        calls.append(mode)
        return {"mode": mode, "median_step_us": {"a": 10.0, "b": 20.0, "c": 30.0}[mode] + len(calls),
                "own_per_batch_us": 5.0 if mode == "a" else None}

    result = three_way(fit, 3, tmp_path, modes=("a", "b", "c"))
    assert calls == ["c", "a", "b", "c", "c", "b", "a", "b", "a", "c"]     # a warm-up of the last way, then rotated
    assert [r["mode"] for r in result["runs"]] == calls[1:]
    assert result["summary"]["a"] == {"median_step_us": 10.0 + 7, "own_per_batch_us": 5.0}   # calls 2, 7, 9
    assert result["summary"]["c"] == {"median_step_us": 30.0 + 5}   # calls 4, 5, 10; None is not a figure


def test_lightning_batch_cost_places_the_excess_beside_the_own_time(tmp_path, monkeypatch):
    steps = {"none": [1000.0, 1010.0, 990.0], "empty": [1015.0, 1030.0, 1000.0], "prenet": [1060.0, 1070.0, 1050.0]}

    def fake_fit(mode: str, out: Path) -> dict:
        fake_fit.seen[mode] = fake_fit.seen.get(mode, -1) + 1
        step = steps[mode][max(0, fake_fit.seen[mode] - (1 if mode == "none" else 0))]
        return {"mode": mode, "median_step_us": step, "own_per_batch_us": 30.0 if mode == "prenet" else None,
                "fit_s": 1.0}

    fake_fit.seen = {}
    monkeypatch.setattr(lightning_batch_cost, "tiny_fit", fake_fit)
    out = tmp_path / "cost.json"
    assert lightning_batch_cost.main(["--rounds", "3", "--out", str(tmp_path / "runs"), "--json", str(out)]) == 0
    import json

    excess = json.loads(out.read_text())["excess_us"]
    assert excess["prenet"] == pytest.approx(1060.0 - 1000.0) and excess["empty"] == pytest.approx(1015.0 - 1000.0)
    assert excess["prenet_beyond_a_callback_and_own_time"] == pytest.approx(1060.0 - 1015.0 - 30.0)
    assert excess["prenet_within_rounds"] == pytest.approx(60.0) and excess["empty_within_rounds"] == pytest.approx(15.0)


def test_phase_period_ab_builds_samplers_without_the_period_only_inside_its_every_way():
    from benchmarks.phase_period_ab import sampler_without_period
    from prenet_callbacks.measure.phase_sampling import EVERY, PERIOD_S, PhaseSampler

    with sampler_without_period(True):
        sampler = PhaseSampler()
        sampler.start_when(True, step_s=PERIOD_S / 100)
        assert (sampler.every, sampler.period_s) == (EVERY, None)
    with sampler_without_period(False):
        assert PhaseSampler().period_s == PERIOD_S
    with pytest.raises(RuntimeError), sampler_without_period(True):
        raise RuntimeError("a failing run")
    sampler = PhaseSampler()                      # restored after a failure too
    sampler.start_when(True, step_s=PERIOD_S / 100)
    assert sampler.every > EVERY


def test_interleave_runs_each_loop_in_chunks_flipping_the_order_and_times_each_side_alone(monkeypatch):
    from benchmarks import interleaved_overhead

    clock = {"t": 0.0}
    monkeypatch.setattr(interleaved_overhead.time, "perf_counter", lambda: clock["t"])
    order = []

    def loop(label: str, steps: int, step_s: float):
        for step in range(1, steps + 1):
            clock["t"] += step_s
            order.append(label)
            if step < steps:
                yield step
        clock["t"] += 5 * step_s   # the close after the last step
        return {"label": label, "steps": steps}

    state = interleaved_overhead.interleave([loop("a", 5, 1.0), loop("b", 5, 2.0)], chunk=2)
    # rounds of two steps: a b, then b a, then a b (the last step and the close in one chunk each)
    assert "".join(order) == "aabbbbaaab"
    assert [s["result"]["label"] for s in state] == ["a", "b"]
    assert [s["s"] for s in state] == [5 * 1.0 + 5 * 1.0, 5 * 2.0 + 5 * 2.0]   # own steps and close, not the other's


def test_interleaved_overhead_summary_reads_the_ratio_of_each_repeat():
    from benchmarks.interleaved_overhead import summarise

    runs = [{"a_s": 10.1, "b_s": 10.0, "ratio": 1.01, "steps": 100, "own_time_s": 0.05},
            {"a_s": 9.9, "b_s": 10.0, "ratio": 0.99, "steps": 100, "own_time_s": 0.05},
            {"a_s": 10.05, "b_s": 10.0, "ratio": 1.005, "steps": 100, "own_time_s": None}]
    summary = summarise("loop", runs, aa=False)
    assert summary["ratio_median"] == 1.005 and summary["ratio_spread"] == 0.02
    assert summary["within_target"] is True and summary["own_time_share_median"] == round(0.05 / 10.0, 5)
    assert summarise("loop", runs, aa=True)["within_target"] is None


def test_relay_runs_one_thread_at_a_time_in_turns_and_counts_only_each_ones_own_seconds(monkeypatch):
    import threading

    from benchmarks import interleaved_overhead

    clock = {"t": 0.0}
    monkeypatch.setattr(interleaved_overhead.time, "perf_counter", lambda: clock["t"])
    relay = interleaved_overhead.Relay(["A", "B"])
    log = []

    def side(me: str, steps: int, step_s: float) -> None:
        relay.begin(me)
        for step in range(1, steps + 1):
            clock["t"] += step_s     # only the side whose turn it is ever runs, so this is its own time
            log.append(me)
            if step % 2 == 0:
                relay.hand_over(me)
        relay.finish(me)

    threads = [threading.Thread(target=side, args=("B", 3, 2.0)), threading.Thread(target=side, args=("A", 5, 1.0))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)
    # A starts (first in the order) whichever thread starts first; B's last step ends it, A runs on alone
    assert "".join(log) == "AABBAABA"
    assert relay.seconds == {"A": 5.0, "B": 6.0}


def test_threaded_pair_takes_turns_and_raises_a_sides_error_in_the_caller(monkeypatch):
    from benchmarks import interleaved_overhead

    clock = {"t": 0.0}
    monkeypatch.setattr(interleaved_overhead.time, "perf_counter", lambda: clock["t"])
    log = []

    def run(me: str, hand_over) -> dict:
        for step in range(1, 5):
            clock["t"] += {"A": 1.0, "B": 3.0}[me]
            log.append(me)
            hand_over()
        return {"steps": 4, "side": me}

    state = interleaved_overhead.threaded_pair(run, ["B", "A"])
    assert "".join(log) == "BABABABA"
    assert state["A"] == {"s": 4.0, "result": {"steps": 4, "side": "A"}} and state["B"]["s"] == 12.0

    def broken(me: str, hand_over) -> dict:
        hand_over()
        if me == "A":
            raise RuntimeError("side A failed")
        return {}

    with pytest.raises(RuntimeError, match="side A failed"):
        interleaved_overhead.threaded_pair(broken, ["A", "B"])
