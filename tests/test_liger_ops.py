"""benchmarks/liger_ops.py: each Liger module it knows is built and captured on meta, forward and backward."""
from __future__ import annotations

import pytest

from benchmarks.liger_ops import MODULES, captured_ops, summarise

SMALL = {
    "rms_norm": ({"H": 64}, {"x": (8, 64)}, "bfloat16", "elementwise"),   # pow, mean, rsqrt, mul: no norm kernel
    "fused_add_rms_norm": ({"H": 64}, {"x": (8, 64), "residual": (8, 64)}, "float32", "elementwise"),
    "layer_norm": ({"N": 64}, {"x": (8, 64)}, "float32", "norm"),
    "group_norm": ({"C": 32, "channels_per_group": 4}, {"x": (2, 32, 16)}, "float32", "norm"),
    "softmax": ({}, {"x": (8, 64)}, "bfloat16", "norm"),
    "relu_squared": ({}, {"x": (8, 64)}, "bfloat16", "elementwise"),
    "rope": ({}, {"q": (1, 4, 16, 8), "k": (1, 2, 16, 8), "cos": (1, 16, 8), "sin": (1, 16, 8)}, "bfloat16",
             "elementwise"),
    "swiglu": ({"hidden_size": 32, "intermediate_size": 64}, {"x": (2, 4, 32)}, "bfloat16", "gemm"),
    "geglu": ({"hidden_size": 32, "intermediate_size": 64}, {"x": (2, 4, 32)}, "bfloat16", "gemm"),
    "embedding": ({"V": 100, "D": 16}, {"indices": (4, 8)}, "float32", "embedding"),
}


@pytest.mark.parametrize("kernel", sorted(MODULES))
def test_every_module_is_captured_forward_and_backward(kernel):
    params, inputs, dtype, expected = SMALL[kernel]
    forward, backward = captured_ops(kernel, params, inputs, dtype)
    assert forward and backward
    assert expected in {spec.op_class for spec in forward}
    assert all(spec.bytes_read + spec.bytes_written > 0 for spec in forward + backward)


def test_rows_under_the_host_floor_are_counted_apart():
    rows = [{"kernel": "k", "gpu": "g", "dtype": "bfloat16", "mode": "forward", "ratio": r, "device_bound": b}
            for r, b in ((0.8, True), (1.1, True), (3.0, False))]
    summary = summarise(rows)
    assert summary["device_bound"] == 2 and summary["host_bound"] == {"rows": 1, "median_ratio": 3.0}
    assert summary["by_dtype"]["bfloat16"]["median_abs_error"] == pytest.approx(0.15)
