"""The report's ``measured`` block: what the run measured, written where the projection and the page read it.

Keys are `report_parts.Measured`'s fields (a misspelt one fails at once). Two writers:
`close_window` when the profiling window closes (its phase timing, memory, per-module table and
coverage), `update_measured` at every prediction and at the end (step phases, clean batches, data
wait, validation, checkpoints, epoch boundaries, set-up, how steps were timed).
"""
from __future__ import annotations

import functools
from typing import Any

import torch

from prenet_callbacks.measure.contention import contention
from prenet_callbacks.forecast.eta import RunMeasurements
from prenet_callbacks.measure.profiling_window import ProfilingWindow
from prenet_callbacks.report import Report
from prenet_callbacks.report_parts import Measured

_STEP_PHASES = ("data_s", "forward_s", "backward_s", "optimizer_s", "other_s", "total_s")
# Phases only the integration's marks time: a phase never marked (a DeepSpeed pipeline's train_batch is one call,
# whose forwards, backwards and step DeepSpeed's schedule runs) is absent, not zero; its time is in other_s.
_MARKED = ("forward_s", "backward_s", "optimizer_s")


def close_window(report: Report, m: RunMeasurements, window: ProfilingWindow, *, device_phases: bool,
                 measure_host: bool) -> list[float] | None:
    """Stop the profiler and write the window's measurements and the profiler's limitations.

    ``device_phases``: clean steps are timed on the device (a GPU); ``measure_host``: time eager
    PyTorch's per-op host cost on this CPU (10-30 ms, once per process), what a GPU target keeps paying.
    Returns the profiled steps' device forwards per batch when their phases came from CUDA events (else None).
    """
    found: dict[str, Any] = {}
    table, limitations = window.stop()
    gpu_forwards = window.resolve_gpu_phases()
    if gpu_forwards is not None:
        found["phase_timing"] = "cuda_events"
    memory = window.memory(report.current.get("name"))
    if memory is not None:
        found["memory"] = memory
    if table is not None:  # None: the profiler could not be stopped (and was dropped)
        found["layers"] = table.to_dict()
        if measure_host:
            found["host"] = dict(_host_costs())
        window.keep_table(table, device_phases=device_phases)
        m.eval_forward_share = table.eval_forward_share()
        found["coverage"] = window.coverage(m.batch.mean)
        samples = table.op_samples()
        if samples is not None:
            found["op_samples"] = samples
    m.eval_forward_s, m.eval_forward_note = window.time_eval_forward()
    report.measured.update(Measured.partial(**found).to_dict())
    for limitation in limitations:
        if limitation not in report.limitations:
            report.limitations.append(limitation)
    return gpu_forwards


# Rounds of `measure_host_costs` inside a run: 8 gave the same medians as its default 15 (within their spread, 12
# alternated calls each, 2026-12-05) in 13 ms instead of 21; `benchmarks/projection_host.py` keeps 15.
HOST_REPEATS = 8


@functools.lru_cache(maxsize=1)
def _host_costs() -> dict[str, Any]:
    """Eager PyTorch's per-op host costs on this CPU (`measure_host_costs`, 10-30 ms), measured once per process:
    a property of the CPU and the torch build, not of the run (a second fit in the process reuses it)."""
    from prenet_callbacks.projection.pricing.host import measure_host_costs

    return measure_host_costs(repeats=HOST_REPEATS)


def update_measured(measured: dict[str, Any], m: RunMeasurements, window: ProfilingWindow, *, warmup_steps: int,
                    compile_s: float | None, on_cuda: bool, device_timed: bool, cpu_wait: float | None = None,
                    window_wait: float | None = None) -> None:
    """Everything measured so far. ``compile_s`` is torch.compile's time in this fit (None: not listening);
    ``cpu_wait`` the share of their runnable time the run's threads waited for a CPU since the last prediction
    (`contention.CpuWait`; None where it cannot be read), ``window_wait`` the same up to the profiling
    window's close."""
    phases = window.phases
    found: dict[str, Any] = {"warmup_steps": warmup_steps, "profiled_steps": len(phases)}
    if phases:
        found["step_phases"] = {k: round(sum(p[k] for p in phases) / len(phases), 6) for k in _STEP_PHASES
                                if k not in _MARKED or any(p[k] for p in phases)}
    found["batch_s"] = m.batch.mean
    found["clean_batches"] = m.batch.count
    # the whole run's mean clean batch (``batch_s`` is the recent window's, what predictions use)
    found["batch_run_mean_s"] = m.batch.total / m.batch.count if m.batch.count else None
    if window.table is not None:
        found["coverage"] = window.coverage(m.batch.mean)
    # the threads' wait for a CPU, the clean batches' spread and the machine's load (`contention`): a busy host
    # is named, and other hardware is projected from the steps without the wait
    found["contention"] = contention(m.batch, threads=torch.get_num_threads(), wait=cpu_wait, window_wait=window_wait,
                                     data=m.data_per_batch)
    found["data_wait_s"] = m.data_per_batch.mean
    if compile_s is not None:
        # torch.compile's compilations in this fit: kept out of every step's and validation run's rate
        found["compile_s"] = round(compile_s, 4)
    found["validation"] = {"runs": m.validation_run.count, "mean_s": m.validation_run.mean,
                           "sanity_per_batch_s": m.sanity_val_per_batch,
                           "sanity_page_faults_s": m.sanity_page_faults_s,
                           "sanity_batches": m.sanity_val_batches,
                           "sanity_raw_per_batch_s": m.sanity_val_raw_per_batch,
                           "eval_forward_share": m.eval_forward_share,
                           "eval_forward_s": m.eval_forward_s, "eval_forward_note": m.eval_forward_note}
    found["checkpoint"] = {"files": m.checkpoint_file.count, "mean_s": m.checkpoint_file.mean}
    found["epoch_boundary"] = {"count": m.epoch_boundary.count, "mean_s": m.epoch_boundary.mean,
                               "first_epoch_start_s": m.first_epoch_start_s}
    found["setup_s"] = m.setup_s
    found["timing"] = {"clock": "cuda" if on_cuda else "cpu",
                       "op_timing": (measured.get("layers") or {}).get("op_timing"),
                       "step_timing": ("device marks between batch ends" if device_timed
                                       else "host intervals between batch ends")}
    measured.update(Measured.partial(**found).to_dict())
