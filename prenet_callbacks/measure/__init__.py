"""Measuring: what each stretch of the fit's wall time was, and the memory and CPU effects beside it.

When it runs: on every batch (the step clock, `step_account`, `heap_faults`), on the few steps of the profiling
window (`profiling_window` with the per-module profiler in `profiling/`, the phases on the device's timeline in
`phase_events`, the replayed eval forward in `eval_probe`, the memory account), around validation, sanity
batches and saves (`step_account`, `sanity`), while torch.compile compiles (`compile_clock`), and once per
prediction for the watches that need a look rather than a clock (`subnormals`, `contention`). `measured` writes
what was measured into the report's ``measured`` block.

What it may touch: clocks, hooks and profilers that read the run without changing it (no synchronisation per
layer, nothing that alters the process's allocator, threads or RNG unless the user opted in), and the
`forecast.eta.RunMeasurements` it fills. It predicts nothing.
"""
