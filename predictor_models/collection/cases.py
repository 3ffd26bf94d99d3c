"""The ops `prenet collect` measures: only classes the predictor trains on (GEMM, convolution,
norm/softmax, pointwise), spread over sizes, each labelled with the math it really runs.

Labels follow PyTorch's flags at collection time: an fp32 GEMM is TF32 when
``torch.backends.cuda.matmul.allow_tf32`` is set (``float32_matmul_precision`` "high"/"medium"),
an fp32 convolution when ``torch.backends.cudnn.allow_tf32`` is (PyTorch's default: True).
Shapes are drawn log-uniformly with a fixed seed, so every run measures the same grid.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from predictor_models.datasets.common import conv_op, elementwise_op, gemm_op, norm_op
from predictor_models.op_spec import OpSpec

SEED = 20250101
# cases per dtype: (quick, full)
COUNTS = {"gemm": (24, 120), "bmm": (6, 30), "conv": (8, 32), "norm": (8, 32), "elementwise": (8, 32)}
CONV_SHAPES = ((32, 64, 64, 56, 3, 1), (32, 128, 128, 28, 3, 1), (32, 256, 256, 14, 3, 1), (32, 512, 512, 7, 3, 1),
               (32, 64, 256, 56, 1, 1), (32, 256, 64, 56, 1, 1), (32, 512, 1024, 14, 1, 1), (16, 3, 64, 224, 7, 2),
               (32, 128, 128, 56, 3, 2), (64, 32, 32, 64, 3, 1), (8, 256, 256, 32, 3, 1), (128, 64, 64, 32, 3, 1))
ELEMENTWISE = (("aten::add", 2), ("aten::mul", 2), ("aten::gelu", 1), ("aten::relu", 1))


@dataclass(frozen=True)
class Case:
    """One measurement: the op's label and how to build the call to time.

    ``build(torch, device)`` allocates the inputs (inside the caller's out-of-memory guard) and
    returns a zero-argument function that runs the op once."""

    op: OpSpec
    build: Callable[[Any, Any], Callable[[], Any]]


def math_flags(torch: Any) -> dict[str, bool]:
    """The TF32 switches fp32 matmuls and convolutions run under right now."""
    return {"matmul_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn_tf32": bool(torch.backends.cudnn.allow_tf32)}


def default_dtypes(torch: Any) -> list[str]:
    """float32, plus bfloat16 where the GPU runs it natively, else float16."""
    bf16 = getattr(torch.cuda, "is_bf16_supported", lambda: False)
    try:
        native = bool(bf16(including_emulation=False))
    except TypeError:  # older torch: no including_emulation
        native = bool(bf16())
    return ["float32", "bfloat16" if native else "float16"]


def _sizes(rng: np.random.Generator, count: int, low: int, high: int, dims: int, multiple: int = 16) -> list[tuple[int, ...]]:
    """``count`` tuples of log-uniform integers in [2**low, 2**high], rounded to ``multiple``."""
    raw = 2.0 ** rng.uniform(low, high, size=(count, dims))
    return [tuple(int(max(multiple, round(v / multiple) * multiple)) for v in row) for row in raw]


def cases(dtypes: list[str], flags: dict[str, bool], *, quick: bool = False, seed: int = SEED) -> list[Case]:
    """The grid for these dtypes (quick: about 55 cases per dtype, full: about 250)."""
    pick = 0 if quick else 1
    out: list[Case] = []
    for dtype in dtypes:
        rng = np.random.default_rng(seed)   # same shapes for every dtype
        fp32 = dtype == "float32"
        for m, n, k in _sizes(rng, COUNTS["gemm"][pick], 5, 13, 3):
            out.append(Case(gemm_op(1, m, n, k, dtype, tf32=fp32 and flags["matmul_tf32"], name="aten::mm"),
                            _mm(dtype, 1, m, n, k)))
        for (b,), (m, n, k) in zip(_sizes(rng, COUNTS["bmm"][pick], 2, 6, 1, 1),
                                   _sizes(rng, COUNTS["bmm"][pick], 5, 11, 3)):
            out.append(Case(gemm_op(b, m, n, k, dtype, tf32=fp32 and flags["matmul_tf32"], name="aten::bmm"),
                            _mm(dtype, b, m, n, k)))
        shapes = list(CONV_SHAPES)
        while len(shapes) < COUNTS["conv"][pick]:
            (n_, c_in, c_out, size), = _sizes(rng, 1, 3, 9, 4, 8)
            shapes.append((min(n_, 64), c_in, c_out, max(7, min(size, 112)), int(rng.choice([1, 3])), 1))
        for n_, c_in, c_out, size, kern, stride in shapes[: COUNTS["conv"][pick]]:
            pad = kern // 2
            op = conv_op(n_, c_in, c_out, size, size, kern, kern, stride, pad, dtype,
                         tf32=fp32 and flags["cudnn_tf32"], name="aten::convolution")
            out.append(Case(op, _conv(dtype, n_, c_in, c_out, size, kern, stride, pad)))
        for i, (rows, cols) in enumerate(_sizes(rng, COUNTS["norm"][pick], 7, 14, 2, 8)):
            name = "aten::native_layer_norm" if i % 2 == 0 else "aten::_softmax"
            out.append(Case(norm_op(rows, cols, dtype, name=name), norm_call(dtype, rows, cols, name)))
        for i, (numel,) in enumerate(_sizes(rng, COUNTS["elementwise"][pick], 14, 27, 1, 256)):
            name, inputs = ELEMENTWISE[i % len(ELEMENTWISE)]
            out.append(Case(elementwise_op(numel, inputs, dtype, name=name), pointwise_call(dtype, numel, name)))
    return out


def _mm(dtype: str, b: int, m: int, n: int, k: int):
    def build(torch, device):
        dt = getattr(torch, dtype)
        if b == 1:
            x, w = torch.randn(m, k, device=device, dtype=dt), torch.randn(k, n, device=device, dtype=dt)
            return lambda: torch.mm(x, w)
        x, w = torch.randn(b, m, k, device=device, dtype=dt), torch.randn(b, k, n, device=device, dtype=dt)
        return lambda: torch.bmm(x, w)
    return build


def _conv(dtype: str, n: int, c_in: int, c_out: int, size: int, kern: int, stride: int, pad: int):
    def build(torch, device):
        dt = getattr(torch, dtype)
        x = torch.randn(n, c_in, size, size, device=device, dtype=dt)
        w = torch.randn(c_out, c_in, kern, kern, device=device, dtype=dt)
        return lambda: torch.nn.functional.conv2d(x, w, stride=stride, padding=pad)
    return build


def norm_call(dtype: str, rows: int, cols: int, name: str):
    """A `Case` build of a layer norm or softmax (``name``) over the last dim of a [rows, cols] tensor."""
    def build(torch, device):
        dt = getattr(torch, dtype)
        x = torch.randn(rows, cols, device=device, dtype=dt)
        if name == "aten::_softmax":
            return lambda: torch.softmax(x, -1)
        w, b = torch.ones(cols, device=device, dtype=dt), torch.zeros(cols, device=device, dtype=dt)
        return lambda: torch.nn.functional.layer_norm(x, (cols,), w, b)
    return build


def pointwise_call(dtype: str, numel: int, name: str):
    """A `Case` build of a pointwise op (``name``: add, mul, gelu, relu) over ``numel`` elements."""
    def build(torch, device):
        dt = getattr(torch, dtype)
        x, y = torch.randn(numel, device=device, dtype=dt), torch.randn(numel, device=device, dtype=dt)
        return {"aten::add": lambda: x + y, "aten::mul": lambda: x * y,
                "aten::gelu": lambda: torch.nn.functional.gelu(x), "aten::relu": lambda: torch.relu(x)}[name]
    return build
