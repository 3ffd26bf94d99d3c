"""Per-module profiling of a few training steps: times, aten ops and static features per layer.

    profiler = ModuleProfiler(model, clock=clock, accelerator=acc, precision="bf16-mixed")
    profiler.start()
    ...                          # training steps; suspend()/resume() around data loading
    profiler.end_step()          # after each optimizer step
    table = profiler.stop()      # all hooks removed; LayerTable with per-step numbers
    table.coverage(step_s)       # {step_s, modules_s, ratio}
    table.op_samples()           # canonical op rows with kernel times (CUDA runs only)

On CPU and meta, ops are timed by the host clock inside the dispatch mode; on CUDA, by the
kernels torch.profiler (CUPTI) records for each captured op (`op_timing`, `trace`).
"""
from prenet_callbacks.measure.profiling.errors import ProfilerError
from prenet_callbacks.measure.profiling.hooks import hook_snapshot
from prenet_callbacks.measure.profiling.profiler import ModuleProfiler
from prenet_callbacks.measure.profiling.table import (OPTIMIZER_NAME, ROOT_NAME, LayerRecord, LayerTable,
                                              OpEntry)

__all__ = ["ModuleProfiler", "ProfilerError", "LayerTable", "LayerRecord", "OpEntry",
           "hook_snapshot", "ROOT_NAME", "OPTIMIZER_NAME"]
