"""Pricing: how long a step's ops take on a target device, and what the host adds.

When it runs: for every projected row (the first prediction, the end of a fit, `prenet report`, `estimate()`).
`predictor_source` loads the op-time predictor (`predictor_models`); `scaling` prices each unit of the step,
anchored on the measured device's times or absolute; `fp8_rates` prices FP8 GEMMs from their bf16 twins; `host`
models eager PyTorch's host side (issuing kernels) and how it overlaps with the GPU (`host_constants.json`,
written by `benchmarks/projection_host.py`).

What it may touch: the `ops` room's workloads and the predictor; it reads no report and writes none.
"""
