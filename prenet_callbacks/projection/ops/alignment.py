"""GEMMs whose dimensions keep them off cuBLAS's fastest tensor-core kernels.

cuBLAS's tensor-core kernels want 16-byte-aligned matrix dimensions (8 elements in FP16/BF16,
4 in TF32; the "Tensor Core usage" restrictions in the cuBLAS documentation). Other sizes still run,
on slower kernels: the acceptance run on an H200 (benchmarks/results/gpu/) measured bf16-mixed
steps of GPT-2-small (vocabulary 50257, an odd number) at 1.9x and of BERT-base (30522) at up to
1.8x what the projection gave, while their fp32 steps, which use no tensor cores, were within 3%.
The predictor has no rows of such GEMMs, so the projection assumes aligned speed; this module
finds the GEMMs concerned and says so, with the fix (pad the dimension, as nanoGPT pads 50257 to 50304).
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
            f"(e.g. {worst}): cuBLAS runs such GEMMs on slower kernels than the projection assumes, so the "
            f"step may take longer than projected (up to 1.9x measured on an H200); padding {worst} to a "
            f"multiple of 64 avoids it")
