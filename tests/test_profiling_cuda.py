"""What only a GPU can show: events on the model's device and stream, window peaks, kernel times
from CUPTI attributed to layers (backward on autograd's device threads included), no host time in
op times, coverage of a GPU-bound step, and step intervals read without blocking.

Every test here is marked ``cuda`` and skipped, with the reason, where CUDA is not available.
Each runs in a few seconds on one GPU (`pytest -m cuda`).
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

from model_zoo import train_steps
from prenet_callbacks.measure.clocks import CudaClock, clock_for
from prenet_callbacks.measure.memory_account import state_sizes
from prenet_callbacks.measure.phase_events import PhaseEvents
from prenet_callbacks.measure.profiling import ModuleProfiler
from prenet_callbacks.measure.step_timer import StepTimer

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"),
]

SLEEP_CYCLES = 50_000_000      # torch.cuda._sleep: ~25 ms at 2 GHz


def _gemm_mlp(dim: int, device: torch.device) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(),
                         nn.Linear(dim, dim)).to(device)


def _batch(n: int, dim: int, device: torch.device):
    x = torch.randn(n, dim, device=device)
    y = torch.randint(0, dim, (n,), device=device)
    return lambda: ((x,), y)


def _profile(model, batch, clock, steps=2):
    train_steps(model, batch, 2)       # warm-up: cuBLAS handles, allocator, CUPTI off
    torch.cuda.synchronize()
    profiler = ModuleProfiler(model, clock=clock)
    marks = []
    profiler.start()
    marks.append(clock.mark())

    def on_step():
        profiler.end_step()
        marks.append(clock.mark())
    train_steps(model, batch, steps, on_step=on_step)
    table = profiler.stop()
    clock.wait(marks[-1])
    step_s = clock.elapsed_s(marks[0], marks[-1]) / steps
    return table, step_s


def test_clock_marks_never_block_and_time_the_device():
    clock = clock_for("cuda")
    assert isinstance(clock, CudaClock) and clock.device == f"cuda:{torch.cuda.current_device()}"
    a = clock.mark()
    torch.cuda._sleep(SLEEP_CYCLES)
    b = clock.mark()
    assert clock.elapsed_s(a, b) is None        # queued behind the sleep kernel: not reached yet
    clock.wait(b)
    assert clock.elapsed_s(a, b) > 0.005


def test_clock_marks_on_the_current_stream_of_its_device():
    clock = clock_for("cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        a = clock.mark()
        torch.cuda._sleep(SLEEP_CYCLES)
        b = clock.mark()
    assert not b.query()                        # recorded behind the work on the side stream
    clock.wait(b)
    assert clock.elapsed_s(a, b) > 0.005


@pytest.mark.skipif(torch.cuda.is_available() and torch.cuda.device_count() < 2,
                    reason="needs two GPUs: a model on cuda:1 while the current device is cuda:0")
def test_model_on_a_second_gpu_is_timed_on_that_gpu():
    assert torch.cuda.current_device() == 0
    clock = clock_for("cuda:1")
    a = clock.mark()
    with torch.cuda.device(1):
        torch.cuda._sleep(SLEEP_CYCLES)
    b = clock.mark()
    clock.wait(b)
    assert clock.elapsed_s(a, b) > 0.005       # events on cuda:0 would see none of it
    big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda:1")
    del big
    clock.reset_peak_memory()
    assert clock.peak_memory_bytes() < 64 << 20


def test_peak_memory_is_the_windows_own():
    clock = clock_for("cuda")
    big = torch.empty(256 << 20, dtype=torch.uint8, device=clock.device)
    del big
    clock.reset_peak_memory()
    small = torch.empty(16 << 20, dtype=torch.uint8, device=clock.device)
    peak = clock.peak_memory_bytes()
    assert 16 << 20 <= peak < 256 << 20
    del small


def test_cupti_gemm_times_match_an_event_timed_gemm_and_cover_the_step():
    device = torch.device("cuda", torch.cuda.current_device())
    clock = clock_for(device)
    dim = 4096
    model = _gemm_mlp(dim, device)
    table, step_s = _profile(model, _batch(dim, dim, device), clock)
    assert table.op_timing == "cupti" and table.clock == "cuda" and table.device == clock.device
    hidden = table.layer("2")
    fwd = [o for o in hidden.ops if o.phase == "fwd" and o.spec.op_class == "gemm"]
    bwd = [o for o in hidden.ops if o.phase == "bwd" and o.spec.op_class == "gemm"]
    assert len(fwd) == 1 and sum(o.count_per_step for o in bwd) == 2   # backward ran on device threads
    # the same GEMM (the layer's own weights, a batch of the same shape) timed alone with events
    x = torch.randn(dim, dim, device=device)
    layer = model[2]
    with torch.no_grad():
        for _ in range(3):
            layer(x)
        start = clock.mark()
        for _ in range(10):
            layer(x)
        end = clock.mark()
    clock.wait(end)
    alone = clock.elapsed_s(start, end) / 10
    assert fwd[0].seconds_per_step == pytest.approx(alone, rel=0.25)
    cov = table.coverage(step_s)
    assert 0.8 <= cov["ratio"] <= 1.1, cov          # a GPU-bound step: the layers hold its time
    samples = table.op_samples()
    assert samples["timing"] == "cupti" and 0 < len(samples["rows"]) <= 2000
    assert all(r["seconds"] > 0 for r in samples["rows"])


def test_host_overhead_stays_out_of_gpu_op_times():
    """Tiny ops: the capture costs tens of microseconds of host time per op; the kernels take a few."""
    device = torch.device("cuda", torch.cuda.current_device())
    clock = clock_for(device)
    model = _gemm_mlp(64, device)
    batch = _batch(32, 64, device)
    train_steps(model, batch, 2)
    profiler = ModuleProfiler(model, clock=clock)
    profiler.start()
    host = clock_for("cpu")
    t0 = host.mark()
    train_steps(model, batch, 3, on_step=profiler.end_step)
    torch.cuda.synchronize()
    host_s = host.elapsed_s(t0, host.mark())
    table = profiler.stop()
    ops = [o for layer in table.layers for o in layer.ops]
    calls = sum(o.count_per_step for o in ops) * table.steps
    per_call = [o.seconds_per_step / o.count_per_step for o in ops if o.seconds_per_step > 0]
    assert per_call and max(per_call) < 50e-6
    assert sum(o.seconds_per_step for o in ops) * table.steps < 0.5 * host_s   # host time never leaked in
    assert host_s / calls > 2 * (sum(per_call) / len(per_call))


def test_compiled_block_gets_its_kernels():
    device = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(0)
    model = nn.Sequential(torch.compile(nn.Sequential(nn.Linear(512, 512), nn.ReLU()), backend="aot_eager"),
                          nn.Linear(512, 512)).to(device)
    table, _ = _profile(model, _batch(512, 512, device), clock_for(device))
    block = table.layer("0")
    assert block.opaque and block.forward_s > 0 and block.backward_s > 0


def test_step_timer_and_phase_events_on_the_gpu():
    clock = clock_for("cuda")
    timer = StepTimer(clock)
    phases = PhaseEvents(clock=clock)
    timer.batch_end()
    for _ in range(4):
        phases.mark("forward")
        torch.cuda._sleep(SLEEP_CYCLES)
        phases.mark("end")
        phases.end_step()
        timer.batch_end()
    early = timer.ready()                      # the host is ahead: not all reached, nothing waits
    assert len(early) < 4
    got = early + timer.flush()
    assert len(got) == 4
    assert max(got) < 1.5 * min(got)          # equal device steps, the launch rate nowhere
    resolved = phases.resolve()
    assert [p["forward_s"] for p in resolved] == pytest.approx(got, rel=0.2)


def test_state_sizes_match_what_the_allocator_holds():
    device = torch.device("cuda", torch.cuda.current_device())
    # cuBLAS workspaces (one per thread: backward runs on autograd's device thread) come first
    warm = _gemm_mlp(64, device)
    warm(torch.randn(8, 64, device=device)).sum().backward()
    del warm
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated(device)
    model = _gemm_mlp(1024, device)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(8, 1024, device=device)).sum().backward()
    opt.step()
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated(device) - before
    sizes = state_sizes(model, [opt])
    state = sizes["params_bytes"] + sizes["grads_bytes"] + sizes["optimizer_bytes"]
    assert state == pytest.approx(held, rel=0.02)
