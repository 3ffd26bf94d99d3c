"""Eager PyTorch's host side on a GPU: issuing kernels, and how that overlaps with the GPU.

In eager mode the CPU runs the model's Python, records autograd nodes, dispatches every aten op and
launches its kernel; the GPU runs the kernels from a queue. A step is as long as the slower of the
two, except where one waits on the other (a big kernel followed by many tiny ones is fine; many
tiny ones first hold the big one back). `simulate` plays the step unit by unit (module x phase, in
execution order): the host issues each unit's kernels at a steady rate and the GPU starts a kernel
once it is issued and the previous one is done:

    g_u = max(g_{u-1} + G_u,  h_start_u + H_u/k_u + G_u,  h_end_u + G_u/k_u)

(k_u kernels, H_u host and G_u device seconds in unit u); the step ends at max(h_end, g_end).

Host seconds per kernel come from three places, best first:
- the run itself on a GPU: the host time the profiler saw (``measured.host.issue_s``), or, without it,
  the part of the measured step the device times do not explain (see `calibrate_host_scale`);
- the run itself on a CPU: the model's own Python and autograd time per step (step time minus data
  wait, framework overhead and the measured op times), plus per kernel the aten dispatch cost and
  the CUDA launch below;
- otherwise (`estimate`): eager per-op costs measured on this machine's CPU (`measure_host_costs`,
  stored in ``host_constants.json`` by ``benchmarks/projection_host.py``) plus the launch cost.

`LAUNCH_S` = 3.8 us, the host time per back-to-back launch of a short kernel in NVIDIA's "Getting
Started with CUDA Graphs" (A. Gray, NVIDIA Technical Blog, 2019: 20 launches of a 2.9 us kernel took
3.8 us each without synchronisation, 9.6 us with a synchronisation after each, 3.4 us as a graph).

Options (stated in each row's ``assumed``): CUDA graphs replay a captured step: host time per step
~ `GRAPH_REPLAY_S`, nothing per kernel. ``torch.compile`` (Inductor) fuses pointwise and norm kernels
and replaces the per-op Python/autograd path by generated code: `COMPILE_POINTWISE_KERNELS` of those
kernels remain, moving `COMPILE_POINTWISE_BYTES` of their bytes, each costing `COMPILED_KERNEL_S` of
host time plus the launch; ``mode="reduce-overhead"``/``"max-autotune"`` add CUDA graphs. These
three factors are assumptions of this model, not measurements (see docs/projection.md).
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

LAUNCH_S = 3.8e-6
GRAPH_REPLAY_S = 20e-6
COMPILED_KERNEL_S = 2.0e-6
COMPILE_POINTWISE_KERNELS = 0.4
COMPILE_POINTWISE_BYTES = 0.5
COMPILE_MODES = ("none", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
FUSIBLE_CLASSES = frozenset({"elementwise", "norm", "data_movement", "pooling"})
HOST_ERROR = 0.3          # band half-width of host seconds (constants from another CPU and PyTorch build)
CONSTANTS_PATH = Path(__file__).with_name("host_constants.json")
# Before `benchmarks/projection_host.py` has written host_constants.json: round figures of eager
# PyTorch 2.x on a server CPU (forward op from Python, backward op from the autograd engine).
_FALLBACK = {"fwd_op_s": 20e-6, "bwd_op_s": 10e-6, "aten_op_s": 2e-6, "opt_step_s": 100e-6,
             "source": "fallback: no host_constants.json"}


@dataclass(frozen=True)
class HostCosts:
    """Host seconds of eager PyTorch on the CPU that feeds the GPU (launch excluded, see `LAUNCH_S`)."""

    fwd_op_s: float       # one forward op called from Python: module code, autograd record, dispatch
    bwd_op_s: float       # one backward op run by the autograd engine (C++): dispatch
    aten_op_s: float      # the aten dispatch of one op alone (added to a CPU run's measured Python time)
    opt_step_s: float     # optimizer.step()'s Python per step (foreach / fused)
    launch_s: float = LAUNCH_S
    source: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HostCosts":
        keys = ("fwd_op_s", "bwd_op_s", "aten_op_s", "opt_step_s")
        values = {k: float(data[k]) for k in keys}
        return cls(**values, launch_s=float(data.get("launch_s", LAUNCH_S)), source=str(data.get("source", "")))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@lru_cache(maxsize=1)
def default_host_costs() -> HostCosts:
    """The costs measured on this project's machine (``host_constants.json``), else round fallbacks."""
    try:
        data = json.loads(CONSTANTS_PATH.read_text())
        return HostCosts.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError):
        return HostCosts.from_dict(_FALLBACK)


@dataclass(frozen=True)
class ExecutionOptions:
    """How the step is executed on the target: eager (default), ``torch.compile`` mode, CUDA graphs."""

    compile: str = "none"
    cuda_graphs: bool = False

    def __post_init__(self) -> None:
        if self.compile not in COMPILE_MODES:
            raise ValueError(f"compile must be one of {', '.join(COMPILE_MODES)}, got {self.compile!r}; "
                             "e.g. compile='default' for torch.compile(model)")
        if not isinstance(self.cuda_graphs, bool):
            raise ValueError(f"cuda_graphs must be True or False, got {self.cuda_graphs!r}")

    @property
    def compiled(self) -> bool:
        return self.compile != "none"

    @property
    def graphs(self) -> bool:
        return self.cuda_graphs or self.compile in ("reduce-overhead", "max-autotune")

    def label(self) -> str:
        text = "eager" if not self.compiled else f"torch.compile({self.compile})"
        return text + (" + CUDA graphs" if self.cuda_graphs and self.compile not in ("reduce-overhead",
                                                                                 "max-autotune") else "")


def unit_host_seconds(kernels: np.ndarray, phases: np.ndarray, costs: HostCosts, options: ExecutionOptions,
                      python_s: np.ndarray | None = None) -> np.ndarray:
    """Host seconds per unit, ``kernels``' shape: ``(U,)`` or ``(U, targets)``. `phases` ``(U,)``: 0 fwd,
    1 bwd, 2 opt. `python_s`: measured Python time per unit (NaN where unknown); where known it replaces
    the generic per-op cost, plus aten dispatch per kernel."""
    kernels = np.asarray(kernels, dtype=float)
    if options.graphs:
        return np.zeros_like(kernels)
    if options.compiled:
        return kernels * (COMPILED_KERNEL_S + costs.launch_s)
    column = (slice(None),) + (None,) * (kernels.ndim - 1)   # (U,) -> (U, 1) for a 2-D `kernels`
    per_op = np.where(phases == 0, costs.fwd_op_s, costs.bwd_op_s)[column]
    host = kernels * (per_op + costs.launch_s)
    opt = np.flatnonzero(phases == 2)
    if opt.size:
        host[opt[0]] += costs.opt_step_s
    if python_s is not None:
        known = ~np.isnan(python_s)
        host = np.where(known[column], np.nan_to_num(python_s)[column] + kernels * (costs.aten_op_s + costs.launch_s),
                        host)
    return host


def simulate(host: np.ndarray, device: np.ndarray, kernels: np.ndarray) -> np.ndarray:
    """Step time per target of units issued by the host in order and run by the GPU: unit by unit, its kernels are
    ready once the host has issued its share of them and done once the GPU has run them after the previous unit's;
    the step is the later of the host's end and the GPU's.

    host: (U,) or (U, T) seconds; device: (U,) or (U, T) seconds; kernels: (U,) or (U, T). Returns (T,)."""
    host = np.asarray(host, dtype=float)
    device = np.asarray(device, dtype=float)
    if device.ndim == 1:
        device = device[:, None]
    if host.ndim == 1:
        host = host[:, None]
    if host.shape[0] == 0:
        return np.zeros(max(device.shape[1], host.shape[1]))
    host, device = np.broadcast_arrays(host, device)
    return simulate_band(host, device, kernels, np.ones(1), np.ones((device.shape[1], 1)))[:, 0]


def simulate_band(host: np.ndarray, device: np.ndarray, kernels: np.ndarray, host_band: np.ndarray,
                  device_band: np.ndarray) -> np.ndarray:
    """`simulate` of every band edge at once: target ``t``'s edge ``e`` issues ``host[:, t] * host_band[e]`` and
    runs ``device[:, t] * device_band[t, e]``. Returns ``(T, E)``.

    host, device: (U, T) seconds; kernels: (U, T) or (U,); host_band: (E,); device_band: (T, E). A band edge scales
    every unit's host or device time by one factor, so the running sums `simulate` takes are the as-is ones scaled:
    they are taken once per target rather than once per edge (a projection's sums over units are most of its
    simulation; the answer moves by float rounding only)."""
    host = np.asarray(host, dtype=float)
    device = np.asarray(device, dtype=float)
    host_band = np.asarray(host_band, dtype=float)
    device_band = np.asarray(device_band, dtype=float)
    if host.shape[0] == 0:
        return np.zeros((device.shape[1], host_band.shape[0]))
    k = np.maximum(np.asarray(kernels, dtype=float), 1.0)
    if k.ndim == 1:
        k = k[:, None]
    h_end = np.cumsum(host, axis=0)
    done = np.cumsum(device, axis=0)
    issued_early = h_end - host
    issued_early += host / k           # a unit's first kernel is issued after its share of the host time
    device_late = device / k           # its last kernel runs after the host has issued the whole unit
    # edge by edge on (units, targets) arrays: one (units, targets, edges) array broadcast along its last axis of
    # three ran NumPy's inner loops three elements at a time and took twice as long (the same operations per element)
    lag = np.empty((device.shape[1], host_band.shape[0]))
    for edge, a in enumerate(host_band):
        b = device_band[:, edge]
        early = issued_early * a
        early += device * b
        late = device_late * b
        late += h_end * a
        np.maximum(early, late, out=early)
        early -= done * b
        np.max(early, axis=0, out=lag[:, edge])
    np.maximum(lag, 0.0, out=lag)
    return np.maximum(h_end[-1][:, None] * host_band[None, :], done[-1][:, None] * device_band + lag)


def simulate_groups(host: np.ndarray, device: np.ndarray, kernels: np.ndarray, group: np.ndarray, groups: int,
                    host_band: np.ndarray, device_band: np.ndarray) -> np.ndarray:
    """`simulate_band` of each group of units on its own (``group``: each unit's group, ``0 .. groups - 1``), all
    groups in one call: ``(groups, E)``. host, device, kernels: ``(U,)``; device_band: ``(groups, E)``.

    The groups stand side by side as the call's targets, each column its units in order, padded at the end with units
    that take no time: a padded unit ends no later than the column's last unit, so each column's answer is that of
    its units alone (the same sums in the same order)."""
    group = np.asarray(group, dtype=np.int64)
    order = np.argsort(group, kind="stable")
    per_group = np.bincount(group, minlength=groups)
    slots = np.arange(len(order)) - np.repeat(np.cumsum(per_group) - per_group, per_group)
    rows = int(per_group.max(initial=0))
    padded = [np.zeros((rows, groups)), np.zeros((rows, groups)), np.ones((rows, groups))]
    for values, into in zip((host, device, kernels), padded):
        into[slots, group[order]] = np.asarray(values, dtype=float)[order]
    return simulate_band(*padded, host_band, device_band)


def calibrate_host_scale(host: np.ndarray, device: np.ndarray, kernels: np.ndarray, target_s: float,
                         max_scale: float = 3.0) -> float:
    """The factor on `host` (<= `max_scale`) for which `simulate` gives `target_s` on the measured GPU.

    1.0 when the measured step is already explained without more host time (GPU-bound)."""
    host = np.asarray(host, dtype=float)
    device = np.asarray(device, dtype=float).reshape(-1, 1)
    if target_s <= float(simulate(host, device, kernels)[0]) or not np.sum(host) > 0:
        return 1.0
    if float(simulate(host * max_scale, device, kernels)[0]) < target_s:
        return max_scale
    lo, hi = 1.0, max_scale   # the step is monotone in the scale: bisect to 1e-4 of the scale
    while hi - lo > 1e-4:
        mid = 0.5 * (lo + hi)
        if float(simulate(host * mid, device, kernels)[0]) >= target_s:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def fuse_for_compile(spec, count: float):
    """(spec, count) as Inductor would leave it: pointwise/norm kernels partly fused away."""
    if spec.op_class not in FUSIBLE_CLASSES:
        return spec, count
    return (replace(spec, bytes_read=spec.bytes_read * COMPILE_POINTWISE_BYTES,
                    bytes_written=spec.bytes_written * COMPILE_POINTWISE_BYTES),
            count * COMPILE_POINTWISE_KERNELS)


def measure_host_costs(repeats: int = 15) -> dict[str, Any]:
    """Eager PyTorch's per-op host costs on this process's CPU (~0.1 s; tiny tensors, so the time is
    the framework's, not the math's). The session may store the result as ``measured["host"]``.

    Returns ``{fwd_op_s, bwd_op_s, aten_op_s, opt_step_s, cpu, torch, repeats}``."""
    import platform

    import torch
    from torch import nn

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        # inside a training run: the model's initialisation and dropout here must not move the run's RNG
        with torch.random.fork_rng(devices=[]), torch.device("cpu"):
            # ops whose CPU kernels cost nothing at this size (a CPU convolution's own set-up would not
            # tell what a GPU host spends), in the pattern of a transformer block
            model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Dropout(0.1), nn.Linear(16, 16),
                                  nn.ReLU(), nn.LayerNorm(16), nn.Linear(16, 4))
            x = torch.randn(2, 8)
            fwd_ops, bwd_ops = _count_step_ops(model, x)
            fwd, bwd = _time_steps(model, x, repeats + 3)
            per = _time_aten_op(repeats)
            steps = _time_optimizer_step(repeats + 3)
    finally:
        torch.set_num_threads(threads)
    # the minimum: other processes on the CPU only ever add time
    return {"fwd_op_s": min(fwd[3:]) / max(fwd_ops, 1),
            "bwd_op_s": min(bwd[3:]) / max(bwd_ops, 1),
            "aten_op_s": min(per),
            "opt_step_s": min(steps[3:]),
            "fwd_ops": fwd_ops, "bwd_ops": bwd_ops,
            "cpu": platform.processor() or platform.machine(), "torch": str(torch.__version__), "repeats": repeats}


def _count_step_ops(model: Any, x: Any) -> tuple[int, int]:
    """The aten ops (free ones left out) of one forward and of its backward."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from predictor_models.aten_ops import is_free_op

    class _Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not is_free_op(func):
                self.n += 1
            return func(*args, **(kwargs or {}))

    counter = _Count()
    with counter:
        loss = model(x).sum()
    fwd_ops = counter.n
    counter.n = 0
    with counter:
        loss.backward()
    bwd_ops = counter.n
    model.zero_grad(set_to_none=True)
    return fwd_ops, bwd_ops


def _time_steps(model: Any, x: Any, runs: int) -> tuple[list[float], list[float]]:
    """Wall seconds of each forward and each backward over ``runs`` steps."""
    fwd, bwd = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        loss = model(x).sum()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        model.zero_grad(set_to_none=True)
        fwd.append(t1 - t0)
        bwd.append(t2 - t1)
    return fwd, bwd


# Calls averaged per repeat of the tiny add: the minimum over the repeats of means over 50 calls scattered as
# little as over 200 (10 estimates each, 2026-12-06: 1.40-1.45 us both ways) at a quarter of the cost, which a CPU
# run pays inside its profiling window
_ADD_CALLS = 50


def _time_aten_op(repeats: int) -> list[float]:
    """Seconds per call of one tiny ``aten::add``, averaged over `_ADD_CALLS` calls, ``repeats`` times."""
    import torch

    a, b = torch.ones(1), torch.ones(1)
    add = torch.ops.aten.add.Tensor
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(_ADD_CALLS):
            add(a, b)
        per.append((time.perf_counter() - t0) / _ADD_CALLS)
    return per


def _time_optimizer_step(runs: int) -> list[float]:
    """Seconds of each of ``runs`` foreach AdamW steps over two tiny parameters."""
    import torch

    params = [torch.zeros(4, requires_grad=True) for _ in range(2)]
    for p in params:
        p.grad = torch.zeros(4)
    opt = torch.optim.AdamW(params, foreach=True)
    steps = []
    for _ in range(runs):
        t0 = time.perf_counter()
        opt.step()
        steps.append(time.perf_counter() - t0)
    return steps
