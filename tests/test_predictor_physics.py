"""Physics by construction: the shipped predictor on random shapes, dtypes and every catalog GPU.

Three properties, for every input and not only on a grid (`predictor/kernels.py`, `dominance.py`):
never faster than the roofline; time never falls as an op's work grows; a GPU with at least another's
peaks, bandwidth and SMs of the same generation is never slower. Random draws are seeded; each test
draws a few hundred ops, so a violation anywhere in the shape space would have to be rare to hide.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from predictor_models.datasets.common import conv_op, elementwise_op, gemm_op, norm_op
from predictor_models.hardware import default_catalog
from predictor_models.op_spec import OpSpec
from predictor_models.predictor import load_predictor
from predictor_models.predictor.dominance import _dominates, _key
from predictor_models.predictor.kernels import KernelParams

DTYPES = ("float32", "float16", "bfloat16")
TOLERANCE = 1 + 1e-9


@pytest.fixture(scope="module")
def predictor():
    return load_predictor()


@pytest.fixture(scope="module")
def gpus():
    return [d for d in default_catalog() if d.memory_bandwidth_gbs and d.fp32_tflops and (d.sm_count or 0) > 0]


def _random_op(rng: np.random.Generator, kind: str, scale: float = 1.0) -> OpSpec:
    dtype = DTYPES[rng.integers(len(DTYPES))]
    size = lambda lo, hi: float(max(1, int(2 ** rng.uniform(lo, hi) * scale)))  # noqa: E731
    if kind == "gemm":
        return gemm_op(size(0, 6), size(3, 14), size(3, 14), size(3, 14), dtype, tf32=bool(rng.integers(2)))
    if kind == "conv":
        c = size(2, 10)
        groups = float(rng.choice([1, c])) if rng.integers(3) == 0 else 1.0
        return conv_op(size(0, 7), c, c if groups > 1 else size(2, 10), size(2, 8), size(2, 8), 3, 3, 1, 1, dtype,
                       groups=groups)
    if kind == "norm":
        return norm_op(size(0, 16), size(4, 14), dtype, name="aten::native_layer_norm")
    return elementwise_op(size(4, 28), int(rng.integers(1, 4)), dtype, name="aten::mul")


def _grown(op: OpSpec, rng: np.random.Generator) -> OpSpec:
    """The same op with one work dimension grown by 1-3x (flops and bytes grown with it)."""
    keys = {"gemm": ("b", "m", "n", "k"), "conv": ("n", "h_in"), "norm": ("rows", "cols"), "elementwise": ("numel",)}
    key = keys[op.op_class][rng.integers(len(keys[op.op_class]))]
    factor = float(rng.uniform(1.0, 3.0))
    d = op.dims
    if op.op_class == "gemm":
        new = {**d, key: np.ceil(d[key] * factor)}
        return gemm_op(new["b"], new["m"], new["n"], new["k"], op.dtype, tf32=op.tf32)
    if op.op_class == "conv":
        n, h = (np.ceil(d["n"] * factor), d["h_in"]) if key == "n" else (d["n"], np.ceil(d["h_in"] * factor))
        return conv_op(n, d["c_in"], d["c_out"], h, d["w_in"], 3, 3, 1, 1, op.dtype, groups=d["groups"])
    if op.op_class == "norm":
        new = {**d, key: np.ceil(d[key] * factor)}
        return norm_op(new["rows"], new["cols"], op.dtype, name=op.name)
    return elementwise_op(np.ceil(d["numel"] * factor), int(d["inputs"]), op.dtype, name=op.name)


@pytest.mark.parametrize("kind", ["gemm", "conv", "norm", "elementwise"])
def test_never_faster_than_the_roofline(predictor, gpus, kind):
    rng = np.random.default_rng(1)
    ops = [_random_op(rng, kind) for _ in range(200)]
    ops += [replace(op, dims={**op.dims, "backward": 1}, flops=2 * op.flops) for op in ops if kind == "conv"]
    times = predictor.predict_matrix(ops, gpus)
    for j, gpu in enumerate(gpus):
        bound = predictor.bound_seconds(ops, gpu)
        worst = float((bound / times[:, j]).max())
        assert worst <= TOLERANCE, f"{gpu.name}: an op predicted {worst:.3f}x faster than its roofline"


@pytest.mark.parametrize("kind", ["gemm", "conv", "norm", "elementwise"])
def test_time_never_falls_as_work_grows(predictor, gpus, kind):
    rng = np.random.default_rng(2)
    small = [_random_op(rng, kind) for _ in range(300)]
    large = [_grown(op, rng) for op in small]
    t_small, t_large = predictor.predict_matrix(small, gpus), predictor.predict_matrix(large, gpus)
    ratio = t_small / t_large
    i, j = np.unravel_index(np.argmax(ratio), ratio.shape)
    assert ratio.max() <= TOLERANCE, (f"{gpus[j].name}: {large[i]} predicted {ratio.max():.3f}x faster than the "
                                      f"smaller {small[i]}")


def test_a_dominating_gpu_is_never_slower(predictor, gpus):
    rng = np.random.default_rng(3)
    ops = [_random_op(rng, kind) for kind in ("gemm", "conv", "norm", "elementwise") for _ in range(100)]
    times = predictor.predict_matrix(ops, gpus)
    keys = [_key(g) for g in gpus]
    pairs = 0
    for a in range(len(gpus)):
        for b in range(len(gpus)):
            if a != b and _dominates(keys[a], keys[b]):
                pairs += 1
                ratio = times[:, a] / times[:, b]
                assert ratio.max() <= TOLERANCE, f"{gpus[a].name} predicted slower than {gpus[b].name} ({ratio.max():.3f}x)"
    assert pairs >= 3, "the catalog should hold dominating pairs of one generation (H200 over H100, ...)"


def test_a_dominating_gpu_is_never_slower_when_asked_alone(predictor, gpus):
    """The envelope does not depend on which devices are asked for together."""
    rng = np.random.default_rng(4)
    ops = [_random_op(rng, "gemm", scale=0.05) for _ in range(100)]
    keys = [_key(g) for g in gpus]
    for a in range(len(gpus)):
        for b in range(len(gpus)):
            if a != b and _dominates(keys[a], keys[b]):
                alone = predictor.predict_seconds(ops, gpus[a]) / predictor.predict_seconds(ops, gpus[b])
                assert alone.max() <= TOLERANCE


def test_constants_outside_their_physical_range_are_refused(predictor):
    params = next(iter(predictor.models.values()))
    doc = params.to_json()
    KernelParams.from_json(doc)
    broken = {**doc, "e_c": (np.asarray(doc["e_c"]) * 0 + 1.5).tolist()}
    with pytest.raises(ValueError, match="constraints"):
        KernelParams.from_json(broken)
