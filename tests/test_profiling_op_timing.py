"""Op timing by torch.profiler ranges: the trace parse, the real profiler API on CPU, and the CUDA
path's correlation (kernels -> launching op -> our range) with device records fed in by hand."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity

from model_zoo import ZOO, train_steps
from prenet_callbacks.measure.clocks import CpuClock
from prenet_callbacks.measure.profiling import LayerTable, ModuleProfiler, ProfilerError, hook_snapshot
from prenet_callbacks.measure.profiling.op_timing import LABEL_PREFIX, ProfilerOpTimer, op_timer_for
from prenet_callbacks.measure.profiling.trace import label_times


@dataclass
class Ev:
    """A kineto event look-alike (the methods `label_times` reads)."""

    name_: str
    dev: DeviceType = DeviceType.CPU
    thread: int = 1
    start: int = 0
    end: int = 0
    corr: int = 0
    linked: int = 0
    user: bool = False

    def name(self): return self.name_
    def device_type(self): return self.dev
    def start_thread_id(self): return self.thread
    def start_ns(self): return self.start
    def end_ns(self): return self.end
    def duration_ns(self): return self.end - self.start
    def correlation_id(self): return self.corr
    def linked_correlation_id(self): return self.linked
    def is_user_annotation(self): return self.user


def kernel(linked: int, ns: int, name: str = "sm90_gemm") -> Ev:
    return Ev(name, DeviceType.CUDA, thread=0, start=10**6, end=10**6 + ns, linked=linked)


def test_device_source_follows_kernels_to_the_range_of_their_launching_op():
    events = [
        Ev("prenet#1", start=100, end=200, corr=1, user=True),             # main thread range
        Ev("aten::addmm", start=110, end=190, corr=11),
        Ev("aten::copy_", start=120, end=130, corr=12),                    # a child op launching too
        Ev("prenet#2", thread=2, start=150, end=300, corr=2, user=True),   # autograd's device thread
        Ev("aten::mm", thread=2, start=160, end=290, corr=21),             # starts inside #1's span,
        Ev("aten::add_", start=250, end=260, corr=31),                     # ... but on thread 2
        Ev("other#3", start=240, end=280, corr=3, user=True),              # someone else's range
        Ev("prenet#x", start=240, end=280, corr=4, user=True),             # not one of our numbers
        Ev("cudaLaunchKernel", start=255, end=258, corr=11, linked=31),    # CUPTI's id 11, not the op's
        kernel(11, 5000), kernel(12, 3000), kernel(21, 7000),
        kernel(31, 1000),                                                  # launched outside ranges
        kernel(99, 500),                                                   # launcher not in trace
        Ev("prenet#1", DeviceType.CUDA, start=0, end=10**9, linked=1, user=True),  # GPU-side annotation
    ]
    times = label_times(events, LABEL_PREFIX, source="device")
    assert times.seconds == pytest.approx({1: 8e-6, 2: 7e-6})
    assert times.unlabelled_s == pytest.approx(1.5e-6)
    assert times.labels == 2 and times.device_records == 5


def test_cpu_source_counts_direct_children_once():
    events = [
        Ev("prenet#7", start=0, end=100, corr=1, user=True),
        Ev("aten::addmm", start=10, end=60, corr=2),
        Ev("aten::expand", start=10, end=20, corr=3),    # same start as its parent: still a child
        Ev("aten::copy_", start=30, end=40, corr=4),
        Ev("aten::relu", start=60, end=90, corr=5),
        Ev("aten::sum", start=120, end=130, corr=6),     # outside every range
    ]
    times = label_times(events, LABEL_PREFIX, source="cpu")
    assert times.seconds == pytest.approx({7: 80e-9})
    with pytest.raises(ValueError, match="source="):
        label_times(events, LABEL_PREFIX, source="gpu")


def _op_counts(table: LayerTable) -> dict:
    return {(layer.name, op.phase, op.name, op.spec.flops): op.count_per_step
            for layer in table.layers for op in layer.ops}


def _profile(model, batch, **kw) -> tuple[LayerTable, ModuleProfiler]:
    train_steps(model, batch, 1)
    op_timer = kw.pop("op_timer", None)
    profiler = ModuleProfiler(model, **kw)
    if op_timer is not None:
        profiler.op_timer = op_timer
    profiler.start()
    train_steps(model, batch, 2, on_step=profiler.end_step)
    return profiler.stop(), profiler


def test_real_torch_profiler_on_cpu_times_every_captured_op():
    """The CUDA path's API use, run with the profiler's CPU activity: every op gets its range."""
    model, batch = ZOO["mlp"]()
    before = hook_snapshot(model)
    reference, _ = _profile(*ZOO["mlp"]())
    table, profiler = _profile(model, batch, op_timing="profiler")
    assert table.op_timing == "profiler" and table.clock == "cpu"
    assert _op_counts(table) == _op_counts(reference)          # same capture, other timer
    captured = sum(op.count_per_step for layer in table.layers for op in layer.ops) * table.steps
    assert profiler.op_timer.times.labels == captured
    assert all(op.seconds_per_step > 0 for layer in table.layers for op in layer.ops)
    hidden = table.layer("hidden")
    assert hidden.forward_s > 0 and hidden.backward_s > 0
    assert table.op_samples() is None                          # only CUPTI kernel times calibrate
    assert hook_snapshot(model) == before and not torch._C._autograd._profiler_enabled()


def _fake_cuda_kernels(events: list, ns_per_gemm: int) -> list:
    """Device records a GPU would add: one kernel per GEMM, launched by the op inside our range
    (the range's child, as under the real capture), plus noise the parse must ignore."""
    ranges = [e for e in events if e.is_user_annotation() and e.name().startswith(LABEL_PREFIX)]
    out = list(events)
    for e in events:
        if e.is_user_annotation() or e.device_type() != DeviceType.CPU:
            continue
        inside = any(r.start_thread_id() == e.start_thread_id() and r.start_ns() <= e.start_ns() < r.end_ns()
                     for r in ranges)
        if e.name() in ("aten::addmm", "aten::mm"):
            if inside:
                out.append(kernel(e.correlation_id(), ns_per_gemm))
            else:   # the outer dispatch of the same op: nothing is launched from there on a GPU
                out.append(kernel(e.correlation_id(), 10**9, name="never launched here"))
    for r in ranges:   # GPU-side copies of our ranges span their kernels and gaps: not op time
        out.append(Ev(r.name(), DeviceType.CUDA, start=0, end=10**9, linked=r.correlation_id(), user=True))
    return out


class FakeCudaClock(CpuClock):
    """Host time standing in for a GPU's timeline; counts the waits."""

    kind = "cuda"

    def __init__(self) -> None:
        super().__init__("cuda:1")
        self.waits = 0

    def wait(self, mark) -> None:
        self.waits += 1


def test_cuda_clock_needs_cupti():
    """A CUDA run whose torch build cannot record kernels gets a clear error at start, no hooks."""
    if ProfilerActivity.CUDA in torch.profiler.supported_activities():
        pytest.skip("this torch build records CUDA kernels: the refusal cannot happen here")
    model, _ = ZOO["mlp"]()
    before = hook_snapshot(model)
    profiler = ModuleProfiler(model, clock=FakeCudaClock())
    assert profiler.op_timer.kind == "cupti" and profiler.device == "cuda:1"
    with pytest.raises(ProfilerError, match="cannot record CUDA kernels"):
        profiler.start()
    assert hook_snapshot(model) == before and profiler.hook_count() == 0


def test_cupti_path_attributes_kernels_to_layers_and_phases(monkeypatch):
    model, batch = ZOO["mlp"]()
    real = ProfilerOpTimer.trace_events
    monkeypatch.setattr(ProfilerOpTimer, "trace_events",
                        lambda self, prof: _fake_cuda_kernels(real(self, prof), 1_000_000))
    timer = ProfilerOpTimer("device", activities=[ProfilerActivity.CPU])
    clock = FakeCudaClock()
    table, profiler = _profile(model, batch, op_timer=timer, clock=clock)
    assert table.op_timing == "cupti" and table.clock == "cuda" and table.device == "cuda:1"
    assert clock.waits == 1                       # the window's one wait for the device
    # 1 ms per GEMM: forward 1 each; backward 2 where the layer's input needs a gradient
    expected = {"inp": (1e-3, 1e-3), "hidden": (1e-3, 2e-3), "out": (1e-3, 2e-3)}
    for name, (fwd, bwd) in expected.items():
        layer = table.layer(name)
        assert (layer.forward_s, layer.backward_s) == pytest.approx((fwd, bwd)), name
    # ops without kernels get no time; nothing of the outer dispatch or the annotations leaks in
    assert table.layer("(root)").forward_s == 0 and table.layer("optimizer").optimizer_s == 0
    assert table.modules_s == pytest.approx(8e-3)
    # 8 GEMMs per step (3 forward, 5 backward): their outer dispatches' fake kernels stay unlabelled
    assert timer.unlabelled_s == pytest.approx(1.0 * 8 * table.steps)
    cov = table.coverage(0.016)
    assert {k: cov[k] for k in ("step_s", "modules_s", "ratio")} == pytest.approx(
        {"step_s": 0.016, "modules_s": 8e-3, "ratio": 0.5})
    # the kernels outside every op count towards the device's busy time, not towards the modules
    assert table.outside_ops_s == pytest.approx(timer.unlabelled_s / table.steps)
    assert cov["kernels_s"] == pytest.approx(8e-3 + table.outside_ops_s)
    assert cov["device_busy"] == pytest.approx(cov["kernels_s"] / 0.016)
    samples = table.op_samples()
    assert samples["timing"] == "cupti" and samples["device"] == "cuda:1"
    rows = samples["rows"]
    assert rows and {r["op_class"] for r in rows} == {"gemm"}
    assert all(r["seconds"] == pytest.approx(1e-3) for r in rows)
    assert sum(r["calls"] for r in rows) == pytest.approx(8)
    assert all({"flops", "bytes_read", "bytes_written", "dims", "dtype", "tf32", "name"} <= set(r) for r in rows)


def test_another_profiler_running_refuses_to_start_and_leaves_nothing():
    model, _ = ZOO["mlp"]()
    before = hook_snapshot(model)
    with torch.profiler.profile(activities=[ProfilerActivity.CPU]):
        profiler = ModuleProfiler(model, op_timing="profiler")
        with pytest.raises(ProfilerError, match="another torch.profiler"):
            profiler.start()
        assert hook_snapshot(model) == before and profiler.hook_count() == 0
    assert profiler.stop().layers == []


def test_op_timing_choices():
    assert op_timer_for("cpu").kind == "dispatch" and op_timer_for("cuda").kind == "cupti"
    assert op_timer_for("cpu", "profiler").kind == "profiler"
    with pytest.raises(ProfilerError, match="cannot time GPU kernels"):
        op_timer_for("cuda", "dispatch")
    with pytest.raises(ProfilerError, match="needs a CUDA clock"):
        op_timer_for("cpu", "cupti")
    with pytest.raises(ProfilerError, match="op_timing='fast'"):
        op_timer_for("cpu", "fast")
    with pytest.raises(ProfilerError, match="op_timing"):
        ModuleProfiler(torch.nn.Linear(2, 2), op_timing="cupti")


@pytest.mark.parametrize("name", sorted(ZOO))
def test_profiler_ranges_change_nothing_and_time_every_op(name):
    """Ranges around every op and compiled block (checkpoint recompute, custom Functions, RNNs,
    compiled backward): same weights, no hook left, every captured op and block has its time."""
    ref, batch = ZOO[name]()
    train_steps(ref, batch, 1)
    train_steps(ref, batch, 2)
    model, batch = ZOO[name]()
    before = hook_snapshot(model)
    table, profiler = _profile(model, batch, op_timing="profiler")
    assert hook_snapshot(model) == before and profiler.hook_count() == 0
    for (key, a), b in zip(ref.state_dict().items(), model.state_dict().values()):
        assert torch.equal(a, b), f"{name}: {key} differs with profiler ranges on"
    assert all(op.seconds_per_step > 0 for layer in table.layers for op in layer.ops)
    assert all(layer.forward_s > 0 and layer.backward_s > 0 for layer in table.layers if layer.opaque)
