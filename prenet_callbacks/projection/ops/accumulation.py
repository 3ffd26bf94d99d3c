"""Gradient accumulation, shared by `estimate(accumulate=N)` and a report's re-projection
(``project_report(report, targets, accumulate=N)``): the check of N and the gradient adds it costs."""
from __future__ import annotations

from typing import Any

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.ops.precision import Precision


def check_accumulate(accumulate: Any) -> int:
    """`accumulate` when it is an integer >= 1; else a ValueError naming the fix."""
    if isinstance(accumulate, bool) or not isinstance(accumulate, int) or accumulate < 1:
        raise ValueError(f"accumulate must be an integer >= 1 (micro-batches per optimizer step), got {accumulate!r}; "
                         "pass e.g. accumulate=4")
    return accumulate


def accumulation_ops(param_numels: list[int], precision: Precision, accumulate: float) -> list[tuple[OpSpec, float]]:
    """Micro-batches after the first add their gradients into ``.grad``: one add per parameter tensor each
    (``accumulate - 1`` adds per tensor and optimizer step)."""
    size = precision.grad_bytes
    ops: dict[OpSpec, float] = {}
    for numel in param_numels:
        spec = OpSpec("elementwise", precision.state_dtype, float(numel), 2.0 * size * numel, float(size * numel),
                      {"numel": numel, "inputs": 2}, False, "aten::add_")
        ops[spec] = ops.get(spec, 0.0) + float(accumulate - 1)
    return list(ops.items())
