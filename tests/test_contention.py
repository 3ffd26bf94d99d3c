"""A busy machine (`prenet_callbacks.measure.contention`): named in one line from what was measured (the run's threads'
wait for a CPU; the load only when the steps' spread agrees), shown in the panel, and kept out of the host
time carried to other hardware."""
from __future__ import annotations

import copy
import math

import pytest

from prenet_callbacks.measure.contention import LINE_START, CpuWait, busy_line, contention, note_contention, thread_times
from prenet_callbacks.forecast.estimators import RobustDuration
from prenet_callbacks.forecast.plan import RunPlan
from prenet_callbacks.projection import project_report
from prenet_callbacks.outputs.render import render_text
from prenet_callbacks.session.machine import PredictionSession, SessionConfig
from tests.projection_fixtures import ScaledBound, make_report


def _batches(values) -> RobustDuration:
    batch = RobustDuration()
    for v in values:
        batch.add(v)
    return batch


STEADY = [0.010 + 0.0002 * (i % 5) for i in range(40)]


def test_a_quiet_machine_is_not_busy_and_says_nothing():
    found = contention(_batches(STEADY), threads=2, wait=0.02, cores=2, load=1.9)
    assert not found["busy"] and found["spread"] < 1.1 and found["p20_s"] == pytest.approx(0.0102, rel=0.02)
    assert found["cpu_wait"] == 0.02 and busy_line(found) is None
    assert contention(_batches([0.01] * 7), threads=1, cores=2, load=0.5) is None   # too few clean batches
    assert found["data_p20_s"] is None   # no data waits given
    # the data waits' clean quantile: most fetches take 50 us, one in four was preempted for 8 ms
    waits = [0.008 if i % 4 == 0 else 0.00005 for i in range(40)]
    assert contention(_batches(STEADY), threads=2, wait=0.4, cores=2, load=3.0,
                      data=_batches(waits))["data_p20_s"] == pytest.approx(0.00005)
    assert contention(_batches(STEADY), threads=2, data=_batches(waits[:7]))["data_p20_s"] is None  # too few


def test_a_lagging_load_average_alone_does_not_make_a_quiet_run_busy():
    # a minute after a busy neighbour stopped, the 1-minute load is still 4.4: the run's own threads did not wait
    assert not contention(_batches(STEADY), threads=2, wait=0.01, cores=2, load=4.4)["busy"]
    # without schedstat the load counts only when the steps' spread agrees
    assert not contention(_batches(STEADY), threads=2, cores=2, load=4.4)["busy"]
    flipping = [0.002 if i % 3 else 0.170 for i in range(60)]
    assert contention(_batches(flipping), threads=1, cores=2, load=3.2)["busy"]
    assert not contention(_batches(flipping), threads=1, cores=2, load=1.2)["busy"]   # a spread of the model's own


def test_a_wait_for_the_cpu_is_named_with_the_figures():
    flipping = [0.002 if i % 3 else 0.170 for i in range(60)]
    found = contention(_batches(flipping), threads=1, wait=0.43, cores=2, load=1.2)
    assert found["busy"] and found["spread"] == pytest.approx(85, rel=0.01)
    line = busy_line(found)
    assert line == (f"{LINE_START} (this run's threads waited for a CPU 43% of the time they were ready to run; "
                    "load average 1.2 on 2 cores; steps 2.0 ms to 170.0 ms (10th to 90th percentile)): the ETA "
                    "follows the run's pace here; other hardware is projected from its steps without the wait")


def test_the_report_keeps_one_current_busy_line_and_the_panel_shows_it():
    report = make_report(device="cpu")
    report.limitations[:] = ["something else"]
    note_contention(report.limitations, contention(_batches([0.01] * 20), threads=1, wait=0.3, cores=2, load=3.0))
    note_contention(report.limitations, contention(_batches([0.01] * 20), threads=1, wait=0.5, cores=2, load=4.0))
    assert report.limitations[0] == "something else" and len(report.limitations) == 2
    assert "50%" in report.limitations[1]
    panel = " ".join(render_text(report, width=200).split())
    assert f"• {LINE_START} (this run's threads waited for a CPU 50%" in panel
    note_contention(report.limitations, contention(_batches([0.01] * 20), threads=1, wait=0.0, cores=2, load=0.2))
    assert report.limitations == ["something else"]
    assert LINE_START not in render_text(report, width=200)


class _Threads:
    """Fake schedstat readings: thread id -> (ns on a CPU, ns waiting)."""

    def __init__(self) -> None:
        self.now: dict[str, tuple[int, int]] = {"1": (0, 0)}

    def __call__(self) -> dict[str, tuple[int, int]]:
        return dict(self.now)


def test_cpu_wait_is_the_intervals_share_of_runnable_time_spent_waiting():
    threads = _Threads()
    watch = CpuWait(threads)
    threads.now = {"1": (600, 400), "2": (300, 100)}     # thread 2 started meanwhile: counted from zero
    assert watch.share() == pytest.approx(500 / 1400)
    threads.now = {"1": (1600, 400)}                     # thread 2 ended: dropped; thread 1 ran and did not wait
    assert watch.share() == 0.0
    assert watch.share() is None                         # nothing ran since: no figure
    assert CpuWait(lambda: None).share() is None          # no schedstat (not Linux)


@pytest.mark.skipif(thread_times() is None, reason="this kernel exposes no /proc/self/task/*/schedstat")
def test_the_real_reading_covers_this_process_threads():
    watch = CpuWait()
    sum(i * i for i in range(200_000))
    share = watch.share()
    assert share is not None and 0.0 <= share <= 1.0


def _cpu_report(step_s: float, p20_s: float | None, wait: float | None = None, busy: bool = True,
                window_s: float = 0.5, window_wait: float | None = None):
    """A CPU run's report whose profiled window ran steps of ``window_s`` (0.5 s: the quiet pace) and whose
    timed steps averaged ``step_s``."""
    report = make_report(device="cpu")
    report.measured["step_phases"].update(other_s=0.0, data_s=0.0, forward_s=0.3 * window_s,
                                          backward_s=0.6 * window_s, optimizer_s=0.1 * window_s)
    report.predictions[-1]["step_s"] = step_s
    if p20_s is not None:
        report.measured["contention"] = {"p10_s": p20_s, "p20_s": p20_s, "p50_s": step_s, "p90_s": step_s * 2,
                                         "spread": 2.0, "cpu_wait": wait, "window_cpu_wait": window_wait,
                                         "load_1min": 3.0, "cores": 2, "threads": 1, "busy": busy}
    return report


def test_gpu_rows_come_from_the_steps_without_the_wait_not_the_slowed_mean():
    quiet = project_report(_cpu_report(0.5, None), ["H100"], predictor=ScaledBound())[1]
    # bursts: a third of the steps slowed 4x raise the mean to 1.0 s; the fast steps stay 0.5 s
    report = _cpu_report(1.0, 0.5)
    busy = project_report(report, ["H100"], predictor=ScaledBound())[1]
    assert busy["step_s"] == pytest.approx(quiet["step_s"], rel=0.02)
    assert busy["assumed"]["host"] == ("this run's own Python time (its steps without the wait for a CPU: the machine "
                                       "was busy) + dispatch and launch")
    (note,) = [n for n in report.projection["notes"] if n.startswith("the machine was busy")]
    assert note == ("the machine was busy: host time from what the wait slowed least: the run's own Python time "
                    "444.4 ms a step, from the 20th-percentile step (the mean step 1.00 s gives 944.4 ms)")
    # the profiled window ran while the machine was quiet, every timed step after it was slowed (no fast ones):
    # the window's own time beside its ops is the clean figure
    late = project_report(_cpu_report(1.0, 0.95, wait=0.05), ["H100"], predictor=ScaledBound())[1]
    assert late["step_s"] == pytest.approx(quiet["step_s"], rel=0.02)
    # steady contention: every step slowed alike (no fast steps), the threads waited half the time
    steady_report = _cpu_report(1.0, 0.95, wait=0.5)
    steady = project_report(steady_report, ["H100"], predictor=ScaledBound())[1]
    assert steady["step_s"] == pytest.approx(quiet["step_s"], rel=0.02)
    assert any("from the mean step less the 50% its threads waited for a CPU" in n
               for n in steady_report.projection["notes"])
    # the window ran slowed 2x with its threads waiting half the time, the timed steps a little less: the
    # window's own time less its wait is the cleanest figure
    both_report = _cpu_report(1.0, 0.95, wait=0.2, window_s=1.0, window_wait=0.5)
    both = project_report(both_report, ["H100"], predictor=ScaledBound())[1]
    assert both["step_s"] == pytest.approx(quiet["step_s"], rel=0.1)
    assert any("from the profiled window's own time beside its ops less the 50% its threads waited" in n
               for n in both_report.projection["notes"])
    # the framework's time between phases (Lightning's loop), measured in the window, less the window's wait
    framework_report = _cpu_report(1.0, 0.95, wait=0.2, window_s=1.0, window_wait=0.5)
    framework_report.measured["step_phases"]["other_s"] = 0.2
    project_report(framework_report, ["H100"], predictor=ScaledBound())
    assert any("; the framework's time between phases 100.0 ms (200.0 ms less its wait)" in n
               for n in framework_report.projection["notes"])
    # the data wait, measured on the timed steps, less their wait
    data_report = _cpu_report(1.0, 0.95, wait=0.5)
    data_report.measured["data_wait_s"] = 0.2
    data_row = project_report(data_report, ["H100"], predictor=ScaledBound())[1]
    assert any(n.endswith("; the data wait 100.0 ms (200.0 ms less its wait)") for n in data_report.projection["notes"])
    as_measured = copy.deepcopy(data_report)
    del as_measured.measured["contention"]
    assert data_row["phases_s"]["host"] < project_report(as_measured, ["H100"],
                                                         predictor=ScaledBound())[1]["phases_s"]["host"] - 0.09
    # the data wait's 20th-percentile batch, where a short fetch was not preempted: below the mean less the
    # threads' wait (spinning threads hide part of the wait), it is the clean figure
    quick_data = copy.deepcopy(data_report)
    quick_data.measured["contention"]["data_p20_s"] = 0.01
    quick_row = project_report(quick_data, ["H100"], predictor=ScaledBound())[1]
    assert any(n.endswith("; the data wait 10.0 ms (the 20th-percentile batch's; the mean 200.0 ms)")
               for n in quick_data.projection["notes"])
    # the clean step anchors the host time: a smaller data wait leaves its time to the Python residual
    assert quick_row["phases_s"]["host"] == pytest.approx(data_row["phases_s"]["host"], abs=1e-3)
    # a quantile above the mean less the wait changes nothing
    slow_data = copy.deepcopy(data_report)
    slow_data.measured["contention"]["data_p20_s"] = 0.15
    assert project_report(slow_data, ["H100"], predictor=ScaledBound())[1]["phases_s"] == data_row["phases_s"]
    # no profiled window (profile_layers=False): the timed steps alone
    bare = _cpu_report(1.0, 0.5)
    del bare.measured["step_phases"]
    assert project_report(bare, ["H100"], predictor=ScaledBound())[1]["step_s"] == pytest.approx(quiet["step_s"],
                                                                                                  rel=0.05)
    # without the figures (an older report) the mean is all there is
    slowed = project_report(_cpu_report(1.0, None), ["H100"], predictor=ScaledBound())[1]
    assert slowed["step_s"] > 1.5 * quiet["step_s"]
    # a quiet run: its fast quantile is scatter, not a busy machine; the mean is kept, no note
    for near_report in (_cpu_report(0.5, 0.47), _cpu_report(1.0, 0.5, busy=False)):
        near = project_report(near_report, ["H100"], predictor=ScaledBound())[1]
        assert not any("machine was busy" in n for n in near_report.projection["notes"])
        assert near["assumed"]["host"] == "this run's own Python time + dispatch and launch"
    assert project_report(_cpu_report(0.5, 0.47), ["H100"], predictor=ScaledBound())[1]["step_s"] == \
        pytest.approx(quiet["step_s"], rel=1e-6)


def _with_ops(report, total_s: float):
    """``report`` with its table's ops scaled to ``total_s`` a step (as measured in its profiled window)."""
    ops = [op for layer in report.measured["layers"]["layers"] for op in layer.get("ops", [])]
    scale = total_s / sum(op["seconds_per_step"] for op in ops)
    for op in ops:
        op["seconds_per_step"] *= scale
    return report


def test_ops_timed_in_a_window_slowed_more_than_the_steps_leave_python_time_from_the_other_figures():
    # quiet: steps of 0.5 s, 0.3 s of them the ops, 5 ms the data wait, the rest the model's Python
    quiet = project_report(_with_ops(_cpu_report(0.5, None), 0.3), ["H100"], predictor=ScaledBound())[1]
    # the window ran while the machine was busiest (everything 4x, its threads waiting 75% of the time), the timed
    # steps less so (2x, waiting half the time): the ops as measured (1.2 s) outlast the mean step (1.0 s), whose
    # residual is zero; the window's parts less its wait give the Python time back
    report = _with_ops(_cpu_report(1.0, 0.95, wait=0.5, window_s=2.0, window_wait=0.75), 1.2)
    busy = project_report(report, ["H100"], predictor=ScaledBound())[1]
    (note,) = [n for n in report.projection["notes"] if n.startswith("the machine was busy")]
    assert note.startswith("the machine was busy: host time from what the wait slowed least: the run's own Python "
                           "time 197.5 ms a step, from the mean step less the 50% its threads waited for a CPU")
    assert busy["phases_s"]["host"] == pytest.approx(quiet["phases_s"]["host"], rel=0.02)
    assert busy["step_s"] == pytest.approx(quiet["step_s"], rel=0.02)


def test_python_time_unread_when_every_residual_is_zero_uses_the_per_op_host_costs():
    # the window's ops as measured (1.2 s) outlast even the 20th-percentile step and the mean less its wait, and
    # the window waited too little to take them back: the Python time is unread, not zero
    report = _with_ops(_cpu_report(1.0, 0.6, wait=0.5, window_s=2.0, window_wait=0.1), 1.2)
    report.measured["data_wait_s"] = 0.0
    busy = project_report(report, ["H100"], predictor=ScaledBound())[1]
    (note,) = [n for n in report.projection["notes"] if n.startswith("the machine was busy")]
    assert "the run's own Python time unread" in note and "per-op host cost on this CPU" in note
    # a quiet report whose ops outlast its step reads a Python time of zero: dispatch and launch alone
    quiet_zero = _with_ops(_cpu_report(0.3, None), 1.2)
    quiet_zero.measured["data_wait_s"] = 0.0
    zero = project_report(quiet_zero, ["H100"], predictor=ScaledBound())[1]
    assert busy["phases_s"]["host"] > 1.5 * zero["phases_s"]["host"]   # the per-op costs hold the loop's Python


def test_a_session_reads_the_wait_at_each_prediction_and_names_the_busy_machine():
    clock, threads = [0.0], _Threads()
    session = PredictionSession(SessionConfig(warmup_steps=2, profile_steps=0, timing_steps=10, refine_every_n_steps=10,
                                              profile_layers=False, print_report=False), clock=lambda: clock[0])
    session.fit_start({"device": "cpu"})
    session.cpu_wait = CpuWait(threads)
    session.set_plan(RunPlan(total_batches=400, batches_per_epoch=400, max_epochs=1))
    waits = []
    for step in range(1, 41):
        session.batch_start()
        clock[0] += 0.01
        run, wait = threads.now["1"]
        busy = step > 20                                  # a neighbour starts half-way: the threads wait 40%
        threads.now = {"1": (run + 6_000_000, wait + (4_000_000 if busy else 0))}
        session.batch_end(stepped=True, global_step=step)
        found = session.report.measured.get("contention")
        if found and (not waits or waits[-1][0] != session.predictions.last_step):
            waits.append((session.predictions.last_step, found["cpu_wait"], found["busy"]))
    assert waits[0][1:] == (0.0, False) and waits[-1][1:] == (0.4, True)
    assert session.report.measured["contention"]["window_cpu_wait"] is None   # no profiling window here
    assert sum(1 for line in session.report.limitations if line.startswith(LINE_START)) == 1


def test_quantiles_and_the_fast_standard_error():
    batch = _batches([1.0, 2.0, 3.0, 4.0, 5.0])
    assert batch.quantile(0.0) == 1.0 and batch.quantile(0.5) == 3.0 and batch.quantile(1.0) == 5.0
    assert RobustDuration().quantile(0.5) is None
    assert batch.relative_stderr == pytest.approx(math.sqrt(2.5) / 3.0 / math.sqrt(5))
