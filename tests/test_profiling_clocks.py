"""Device clocks, phase marks and the clean-step timer, with fake devices whose timeline lags the host."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from prenet_callbacks.measure.clocks import CpuClock, DeviceClock, clock_for
from prenet_callbacks.measure.phase_events import PhaseEvents
from prenet_callbacks.measure.step_timer import StepTimer


@dataclass
class Mark:
    device_t: float      # when the device reaches this mark


class LaggingDevice:
    """A device that runs queued work in order while the host launches it faster.

    ``launch(w)`` costs the host ``launch_s`` and queues ``w`` seconds of device work; the host
    blocks only when ``queue_depth`` steps of work are already waiting (CUDA's launch queue).
    A mark is reached when the device has run everything queued before it.
    """

    kind = "cuda"
    device = "cuda:0"

    def __init__(self, launch_s: float, queue_depth: float) -> None:
        self.host_t = 0.0
        self.free_at = 0.0          # the device is busy until then
        self.launch_s = launch_s
        self.queue_depth = queue_depth
        self.waits = 0

    def launch(self, work_s: float) -> None:
        # a full queue blocks the host until there is room
        self.host_t = max(self.host_t, self.free_at - self.queue_depth * work_s) + self.launch_s
        self.free_at = max(self.free_at, self.host_t) + work_s

    def host_sleep(self, seconds: float) -> None:
        self.host_t += seconds

    def mark(self) -> Mark:
        return Mark(max(self.free_at, self.host_t))

    def elapsed_s(self, start: Mark, end: Mark) -> float | None:
        if end.device_t > self.host_t:
            return None
        return end.device_t - start.device_t

    def wait(self, mark: Mark) -> None:
        self.waits += 1
        self.host_t = max(self.host_t, mark.device_t)

    def reset_peak_memory(self) -> None:
        pass

    def peak_memory_bytes(self) -> int | None:
        return None


def test_cpu_clock_and_clock_for():
    clock = clock_for("cpu")
    assert isinstance(clock, CpuClock) and isinstance(clock, DeviceClock)
    assert clock.kind == "cpu" and clock.device == "cpu"
    a, b = clock.mark(), clock.mark()
    assert clock.elapsed_s(a, b) >= 0 and clock.peak_memory_bytes() is None
    clock.wait(b)
    clock.reset_peak_memory()
    assert clock_for("meta").device == "meta" and clock_for("meta").kind == "cpu"
    with pytest.raises(ValueError, match="clock_for"):
        clock_for("cpu:x")


def test_cuda_clock_without_cuda_names_the_device(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="'cuda:1'.*not available"):
        clock_for("cuda:1")
    with pytest.raises(ValueError, match="not available"):
        clock_for(torch.device("cuda", 0))


class FakeEvent:
    recorded_on: list = []

    def __init__(self, enable_timing: bool = False) -> None:
        assert enable_timing
        self.stream = None
        self.done = False

    def record(self, stream=None) -> None:
        self.stream = stream
        FakeEvent.recorded_on.append(stream)

    def query(self) -> bool:
        return self.done

    def elapsed_time(self, other: "FakeEvent") -> float:
        return 250.0

    def synchronize(self) -> None:
        self.done = True


def test_cuda_clock_uses_its_own_device_stream_and_memory(monkeypatch):
    """A model on cuda:1 while the current device is 0: every call names device 1."""
    import torch

    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: ("stream of", device))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: calls.append(("reset", device)))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated",
                        lambda device=None: calls.append(("peak", device)) or 123)
    clock = clock_for("cuda:1")
    assert clock.kind == "cuda" and clock.device == "cuda:1"
    a, b = clock.mark(), clock.mark()
    assert a.stream == b.stream == ("stream of", torch.device("cuda", 1))
    assert clock.elapsed_s(a, b) is None                  # not reached: never blocks
    clock.wait(b)
    a.done = True
    assert clock.elapsed_s(a, b) == pytest.approx(0.25)
    clock.reset_peak_memory()
    assert clock.peak_memory_bytes() == 123
    assert calls == [("reset", torch.device("cuda", 1)), ("peak", torch.device("cuda", 1))]
    assert clock_for("cuda").device == "cuda:0"           # no index: the current device


def test_clocks_module_imports_no_torch():
    code = ("import sys, prenet_callbacks.measure.clocks, prenet_callbacks.measure.step_timer, prenet_callbacks.measure.phase_events; "
            "c = prenet_callbacks.measure.clocks.clock_for('cpu'); "
            "bad = [m for m in sys.modules if m.split('.')[0] == 'torch']; print(bad); assert not bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_phase_marks_use_the_given_clock_and_wait_once_for_the_last_mark():
    dev = LaggingDevice(launch_s=0.001, queue_depth=100)
    events = PhaseEvents(clock=dev)
    for _ in range(2):
        events.mark("forward"); dev.launch(0.3)
        events.mark("backward"); dev.launch(0.5)
        events.mark("after_backward"); dev.launch(0.05)
        events.mark("optimizer"); dev.launch(0.1)
        events.mark("end")
        events.end_step()
    # the host is far ahead: nothing is complete yet, and resolve must not need more than one wait
    assert dev.host_t < 0.1
    resolved = events.resolve()
    assert dev.waits == 1 and len(resolved) == 2
    # device phases, not the host's launch times
    assert resolved[1] == pytest.approx({"forward_s": 0.3, "backward_s": 0.5, "optimizer_s": 0.1,
                                         "other_s": 0.05})
    with pytest.raises(ValueError, match="unknown phase mark"):
        events.mark("sideways")


def test_step_timer_does_not_count_launch_rate_steps():
    """After a synchronisation the launch queue is empty: the host queues steps at its launch rate
    (1 ms) while the GPU needs 10 ms each. Host intervals between batch ends show 1 ms steps until
    the queue is full; the device intervals are 10 ms from the first step on."""
    dev = LaggingDevice(launch_s=0.001, queue_depth=5)
    timer = StepTimer(dev)
    host_ends, got = [], []
    timer.batch_end()                 # the synchronised point the run starts from
    for _ in range(20):
        dev.launch(0.010)             # one training step
        timer.batch_end()
        host_ends.append(dev.host_t)
        got.extend(timer.ready())     # never blocks: only what the device has finished
    host_steps = [b - a for a, b in zip(host_ends, host_ends[1:])]
    assert min(host_steps) == pytest.approx(0.001)          # the launch rate a host timer would count
    assert timer.pending > 0 and len(got) < 20               # the device lags: some not reached yet
    assert dev.waits == 0
    got.extend(timer.flush())
    assert dev.waits == 1 and len(got) == 20
    # the first step also holds its own launch (the queue was empty); then 10 ms each
    assert got == pytest.approx([0.011] + [0.010] * 19)


def test_step_timer_host_bound_steps_and_unclean_intervals():
    """When the host is the bottleneck the device waits for it: that wait is part of a step."""
    dev = LaggingDevice(launch_s=0.001, queue_depth=5)
    timer = StepTimer(dev)
    timer.batch_end()
    for i in range(4):
        dev.host_sleep(0.020)         # data loading: the GPU (2 ms per step) idles
        dev.launch(0.002)
        timer.batch_end(clean=i != 2, tag=i)
    dev.host_sleep(1.0)
    tagged = timer.ready_tagged()
    assert [tag for _, tag in tagged] == [0, 1, 3]            # the unclean interval is skipped
    # each interval is the host's period (20 ms loading + 1 ms launching); the first also holds
    # the 2 ms of device work after the first launch, measured from the idle start
    assert [s for s, _ in tagged] == pytest.approx([0.023, 0.021, 0.021])
    timer.break_run()
    timer.batch_end()                 # starts a new run: no interval across the break
    assert timer.pending == 0 and timer.ready() == []


def test_step_timer_never_holds_more_than_max_pending():
    dev = LaggingDevice(launch_s=0.0, queue_depth=10**6)
    timer = StepTimer(dev, max_pending=3)
    timer.batch_end()
    for _ in range(10):
        dev.launch(1.0)
        timer.batch_end()
    assert timer.pending == 3 and timer.dropped == 7 and dev.waits == 0
    with pytest.raises(ValueError, match="max_pending"):
        StepTimer(dev, max_pending=0)


def test_step_timer_open_close_times_a_forward_on_the_device_timeline():
    """A forward timed between an open and a close mark is its device time once the queue is full,
    not the host's launch time; a close without an open records nothing."""
    dev = LaggingDevice(launch_s=0.0005, queue_depth=5)
    timer = StepTimer(dev)
    timer.close()                       # nothing open: nothing recorded
    for _ in range(20):                 # fill the queue: the host runs ahead of the device
        dev.launch(0.010)
    timer.open()
    dev.launch(0.004)                   # the forward: 4 ms of device work, 0.5 ms to launch
    timer.close(tag="fwd")
    dev.launch(0.006)                   # the backward
    assert timer.ready() == []          # not reached yet: nothing waits
    dev.host_sleep(1.0)
    assert timer.ready_tagged() == [(pytest.approx(0.004), "fwd")]
