"""The op classes priced as other classes' kernels (`predictor/expand.py`) never get faster with more work.

Fused attention is its GEMMs (the monotone GEMM network in half precision); pooling, optimizer updates, copies and
embeddings are streaming kernels held on the work grid; a depthwise convolution is streaming kernels; a half-precision
convolution's backward is the tiled-kernel network's two gradient kernels. Each holds by construction, so random
sizes on random catalog GPUs that run the dtype find 0 violations. The networks price half precision on GPUs with
tensor cores for it (fp16 from Volta, bf16 from Ampere); elsewhere (a Pascal GPU's fp16), and for FP32 attention and
TF32 convolutions, the class models do, which do not hold it (`benchmarks/predictor_physics.py`,
``work_other_classes``)."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks.predictor_physics import attention_op, backward_conv, copy_op, optimizer_op, pooling_op
from predictor_models.datasets.common import conv_op, embedding_op
from predictor_models.hardware import list_hardware
from predictor_models.predictor import Predictor
from prenet_callbacks.projection.pricing.predictor_source import default_predictor

HALF = ("bfloat16", "float16")
ANY = ("float32", "bfloat16", "float16")


@pytest.fixture(scope="module")
def shipped() -> Predictor:
    return default_predictor()[0]


def _depthwise(n: float, c: int, hw: int, dtype: str, backward: bool):
    op = conv_op(n, c, c, hw, hw, 3, 3, 1, 1, dtype, groups=c)
    return backward_conv(op) if backward else op


# each kind: the dtypes it holds in, and a family along its work from a random draw
FAMILIES = {
    "attention": (HALF, lambda rng, dtype, x: attention_op(int(rng.integers(1, 9)), 16, x, 64, dtype,
                                                           causal=int(rng.integers(2)), backward=int(rng.integers(2)))),
    "pooling": (ANY, lambda rng, dtype, x: pooling_op(x, float(rng.choice([4, 9])), dtype)),
    "optimizer": (("float32",), lambda rng, dtype, x: optimizer_op(x, str(rng.choice(["sgd", "sgd-momentum",
                                                                                                "adamw", "adamw-fused"])))),
    "copy": (ANY, lambda rng, dtype, x: copy_op(x, dtype)),
    "embedding": (ANY, lambda rng, dtype, x: embedding_op(x, float(rng.choice([64, 768, 4096])), 50_000, dtype)),
    "depthwise": (ANY, lambda rng, dtype, x: _depthwise(x, int(rng.choice([32, 144, 960])), int(rng.choice([7, 28, 112])),
                                                        dtype, bool(rng.integers(2)))),
    "conv_backward": (HALF, lambda rng, dtype, x: backward_conv(conv_op(x, 64, 128, 28, 28, 3, 3, 1, 1, dtype))),
}
NETWORK_PRICED = {"attention", "conv_backward"}
TENSOR_CORES_FROM = {"float16": 7.0, "bfloat16": 8.0}   # compute capability


def _runs(device, dtype: str, kind: str) -> bool:
    """Whether ``device`` runs ``dtype`` where ``kind`` holds by construction (its network's GPUs, if it has one)."""
    if not device.supports(dtype):
        return False
    return kind not in NETWORK_PRICED or float(device.compute_capability or 0) >= TENSOR_CORES_FROM[dtype]


# how far each family's work runs (its own dimension: sequence, elements, indices or batch)
SPANS = {"attention": (16, 16_384), "pooling": (1, 2e8), "optimizer": (1, 2e8), "copy": (1, 2e8),
         "embedding": (1, 1e6), "depthwise": (1, 256), "conv_backward": (1, 256)}


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_more_work_is_never_faster_for_ops_priced_as_other_classes(shipped: Predictor, kind: str) -> None:
    dtypes, build = FAMILIES[kind]
    lo, hi = SPANS[kind]
    rng = np.random.default_rng(sorted(FAMILIES).index(kind) + 2026)
    catalog = [d for d in list_hardware(vendor="NVIDIA") if d.memory_bandwidth_gbs]
    checked = 0
    for _ in range(6):
        dtype = str(rng.choice(dtypes))
        seed = int(rng.integers(1 << 30))     # the family's other dims: one draw, the same for every member
        sizes = np.unique(np.round(np.exp(rng.uniform(np.log(lo), np.log(hi), size=12))).clip(1))
        family = [build(np.random.default_rng(seed), dtype, float(s)) for s in sizes]
        running = [d for d in catalog if _runs(d, dtype, kind)]
        devices = [running[i] for i in rng.choice(len(running), size=5, replace=False)]
        times = shipped.predict_matrix(family, devices)
        assert np.all(np.isfinite(times)) and np.all(times > 0)
        assert (times[1:] >= times[:-1] * (1 - 1e-9)).all(), (kind, dtype, [d.name for d in devices],
                                                               np.argwhere(times[1:] < times[:-1] * (1 - 1e-9)))
        checked += times[1:].size
    assert checked >= 150
