"""Unaligned tensor-core GEMMs (GPT-2's 50257-token head in bf16) are named, with the fix."""
import torch
from torch import nn

from predictor_models.op_spec import OpSpec
from prenet_callbacks import estimate
from prenet_callbacks.projection.ops.alignment import unaligned_dims, unaligned_gemm_note


def _gemm(m, n, k, dtype="bfloat16", tf32=False):
    return OpSpec("gemm", dtype, 2.0 * m * n * k, 0.0, 0.0, dims={"b": 1, "m": m, "n": n, "k": k}, tf32=tf32)


def test_alignment_depends_on_the_element_size_and_tensor_cores():
    assert unaligned_dims(_gemm(8192, 50257, 768)) == [50257]
    assert unaligned_dims(_gemm(8192, 30522, 768)) == [30522]          # even, but not a multiple of 8
    assert unaligned_dims(_gemm(8192, 50304, 768)) == []
    assert unaligned_dims(_gemm(8192, 30522, 768, "float32", tf32=True)) == [30522]   # TF32: 4 elements
    assert unaligned_dims(_gemm(8192, 30524, 768, "float32", tf32=True)) == []
    assert unaligned_dims(_gemm(8192, 50257, 768, "float32")) == []     # no tensor cores, no requirement


def test_a_small_unaligned_share_is_not_worth_a_note():
    big = (_gemm(8192, 4096, 4096), 10.0)
    assert unaligned_gemm_note([big, (_gemm(8192, 50257, 768), 1.0)]) is not None
    assert unaligned_gemm_note([big, (_gemm(64, 50257, 8), 1.0)]) is None


def _head(vocab):
    with torch.device("meta"):   # shapes are all estimate needs: nothing computes
        return nn.Sequential(nn.Linear(64, 768), nn.GELU(), nn.Linear(768, vocab))


def test_estimate_says_so_for_an_odd_vocabulary_in_bf16_only():
    x = torch.randn(512, 64, device="meta")
    notes = estimate(_head(50257), x, targets=["A100"], precision="bf16-mixed").notes
    assert any("50257" in n and "multiple of 64" in n for n in notes)
    assert not any("16 bytes" in n for n in estimate(_head(50304), x, targets=["A100"], precision="bf16-mixed").notes)
    assert not any("16 bytes" in n for n in estimate(_head(50257), x, targets=["A100"], precision="32-true",
                                                     float32_matmul_precision="highest").notes)
