"""GEMMs whose dimensions keep them off cuBLAS's fastest tensor-core kernels.

cuBLAS's tensor-core kernels want 16-byte-aligned matrix dimensions (8 elements in FP16/BF16,
4 in TF32; the "Tensor Core usage" restrictions in the cuBLAS documentation). Other sizes still run,
on other kernels, and what that costs depends on the GPU, the shape and the library version: nothing on
an H100's 8193 x 2501 x 5008 bf16 GEMM (509 against 502 TFLOP/s padded, float8_experimental PR 145),
25-30x on a bf16 ``mm`` of a transposed 100,000 x odd operand (pytorch/pytorch issue 106469), ~100x on
an A100 bf16 linear that fell to a CUTLASS ``align1`` kernel (pytorch/pytorch issue 146817). The predictor
has no rows of such GEMMs, so the projection assumes aligned speed; this module finds the GEMMs concerned
and says so, with the fix (pad the dimension, as nanoGPT pads 50257 to 50304). The H200 acceptance run does
not tell the cost either: `estimate()` is 29% short of its bf16 GPT-2 steps (a 50,257-token head, odd) and within 6%
of BERT's at batch 32 (30,522 tokens, even), but as short of ResNet-50's (30-33%), which have no such GEMM
(`benchmarks/estimate_h200.py`); its probes time the heads' GEMMs beside padded twins (`benchmarks/gpu_probes.py`).
"""
from __future__ import annotations

from typing import Iterable

from predictor_models.op_spec import OpSpec

_ALIGN_BYTES = 16
_ELEMENT_BYTES = {"float16": 2, "bfloat16": 2}
# Below this share of the step's GEMM work a slower kernel changes the step by too little to mention.
MIN_SHARE = 0.05


def _alignment_elements(spec: OpSpec) -> int | None:
    """Elements per 16 bytes for a GEMM on tensor cores (None: not a tensor-core GEMM)."""
    if spec.op_class != "gemm":
        return None
    if spec.dtype in _ELEMENT_BYTES:
        return _ALIGN_BYTES // _ELEMENT_BYTES[spec.dtype]
    if spec.dtype == "float32" and spec.tf32:
        return _ALIGN_BYTES // 4
    return None


def unaligned_dims(spec: OpSpec) -> list[int]:
    """The dimensions (m, n, k) of a tensor-core GEMM that are not multiples of 16 bytes."""
    elements = _alignment_elements(spec)
    if elements is None:
        return []
    dims = spec.dims or {}
    return sorted({int(dims[d]) for d in ("m", "n", "k") if d in dims and int(dims[d]) % elements})


def unaligned_gemm_note(ops: Iterable[tuple[OpSpec, float]]) -> str | None:
    """A sentence when at least `MIN_SHARE` of the GEMM work has unaligned dimensions, else None."""
    total = unaligned = 0.0
    sizes: dict[int, float] = {}
    for spec, count in ops:
        if _alignment_elements(spec) is None:
            continue
        flops = spec.flops * count
        total += flops
        odd = unaligned_dims(spec)
        if odd:
            unaligned += flops
            for size in odd:
                sizes[size] = sizes.get(size, 0.0) + flops
    if not total or unaligned / total < MIN_SHARE:
        return None
    worst = max(sizes, key=sizes.get)
    return (f"{unaligned / total:.0%} of the GEMM work has a dimension that is not a multiple of 16 bytes "
            f"(e.g. {worst}): cuBLAS may run such GEMMs on slower kernels than the projection assumes "
            f"(from no cost to many times, by GPU, shape and library), so the step may take longer than "
            f"projected; padding {worst} to a multiple of 64 avoids it")
