"""What a run spends once beyond its steps, on the device it ran on and on each target.

A measured run's predicted total holds time it spends once: warm-up steps, the profiling window, compilation,
this tool's own work (`measured_one_off_s`: the total minus steps x clean step, fixed costs and validation).
Measured on a GPU of the catalog, that is a GPU's one-off, and every target row carries it. Measured on a CPU
(or on hardware the catalog does not know) it is that machine's: warm-up and profiled steps at its own pace,
which no GPU would spend. Each target row then carries its own estimate instead (`target_one_off_s`), per fit
(a resumed run starts again):

    GPU_START_S + profiled steps x (PROFILED_SLOWDOWN - 1) x the target's step   (+ the run's compile time)

Both figures come from the GPU runs the project has (two fits on an H200, 2026-11-30), read by
``python benchmarks/gpu_one_off.py`` (``benchmarks/results/gpu_one_off.json``): at the first prediction, the
training time beyond the steps at their pace, less the profiled steps' excess, was 0.12 s and 0.28 s (median
0.20 s); a profiled step took 4.8-5.0x a clean one. Two runs of one GPU: an estimate, and the rows say so.
"""
from __future__ import annotations

GPU_START_S = 0.20        # benchmarks/results/gpu_one_off.json: summary.start_s
PROFILED_SLOWDOWN = 4.9   # benchmarks/results/gpu_one_off.json: summary.profiled_slowdown


def measured_one_off_s(steps: float | None, measured_step_s: float | None, steady_s: float,
                       current_total_s: float | None) -> float:
    """What the measured run spends once: its predicted total minus its ``steps`` at ``measured_step_s`` and
    its fixed costs and validation (``steady_s``); 0 when any is unknown."""
    if not current_total_s or steps is None or not measured_step_s:
        return 0.0
    return max(0.0, current_total_s - steady_s - steps * measured_step_s)


def target_one_off_s(step_s: float, *, profiled_steps: int, fits: int, compile_s: float) -> float:
    """A target's own one-off time for a run of ``fits`` fits whose profiling window had ``profiled_steps``
    steps, each ``step_s`` on the target; ``compile_s`` (torch.compile, host work) is carried as measured."""
    return max(1, fits) * (GPU_START_S + profiled_steps * (PROFILED_SLOWDOWN - 1.0) * step_s) + compile_s
