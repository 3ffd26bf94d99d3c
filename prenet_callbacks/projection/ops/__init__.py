"""What runs: one training step as the op stream a target executes.

When it runs: at the first prediction and at the end of a fit (from the report's recorded ops, through
`projection.from_report`), when a saved report is re-projected, and in `estimate()` (`capture` runs the model's
step on ``meta`` and records its aten ops; `meta_values` answers the values a model reads there). The stream is
rewritten for the target's precision (`precision`, `autocast`, `fp8`), memory format (`layout`), SDPA kernel
(`attention`), optimizer implementation (`optimizer_ops`), accumulation (`accumulation`) and activation
checkpointing (`recompute`); `alignment` finds GEMMs off the fast tensor-core kernels; `workload` holds the step
(units of ops, measured times) and `flat` its ops as arrays.

What it may touch: op specs and shapes (and a model on ``meta`` for `capture`); no clock, no predictor, no
report writes.
"""
