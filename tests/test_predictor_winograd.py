"""A 3x3 FP32 convolution costs the lesser of its direct and its Winograd kernels (`predictor/winograd.py`): which
convolutions, what the algorithm computes, and that the price stays physical (never below the fastest algorithm's
roofline, never faster with more work, never slower on a GPU with at least another's figures)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from predictor_models.datasets.common import conv_op
from predictor_models.hardware import list_hardware, lookup_hardware
from predictor_models.predictor import load_predictor, winograd
from predictor_models.predictor.dominance import dominates
from predictor_models.predictor.expand import conv_kernels
from prenet_callbacks.projection.ops.precision import parse_precision, retune, searched


@pytest.fixture(scope="module")
def shipped():
    return load_predictor()


@pytest.fixture
def direct_only(monkeypatch):
    """Within a test: the rule off (no library has the algorithm)."""
    def off():
        monkeypatch.setattr(winograd, "VENDORS", frozenset())
    return off


def _conv(n, c, k, side, *, kernel=3, stride=1, pad=1, dtype="float32", search=True):
    """A convolution of a run whose cuDNN times its algorithms (``torch.backends.cudnn.benchmark``) unless not
    ``search``."""
    return searched(conv_op(n, c, k, side, side, kernel, kernel, stride, pad, dtype), search)


def test_which_convolutions_can_run_winograd():
    base = _conv(8, 64, 64, 56)
    assert winograd.eligible(base)
    assert all(winograd.eligible(kernel) for kernel, _ in conv_kernels(base))
    for other in (replace(base, tf32=True), _conv(8, 64, 64, 56, search=False), _conv(8, 64, 64, 56, dtype="bfloat16"), _conv(8, 64, 64, 56, stride=2),
                  _conv(8, 64, 64, 56, kernel=5, pad=2), _conv(8, 64, 64, 56, pad=0),
                  replace(base, dims={**base.dims, "dilation": 2}), replace(base, dims={**base.dims, "groups": 2}),
                  replace(base, dims={**base.dims, "transposed": 1})):
        assert not winograd.eligible(other), other.dims
    assert winograd.on_devices([lookup_hardware(n) for n in ("V100", "MI300X", "TPU v5e")]).tolist() == [True, True, False]


def test_the_tile_gemms_do_a_quarter_of_the_direct_multiplies_in_whole_tiles():
    for grad in (0, 1, 2):
        op = replace(_conv(8, 64, 128, 56), dims={**_conv(8, 64, 128, 56).dims, "grad": grad})
        gemm, transforms = winograd.kernels(op)
        assert gemm.flops == pytest.approx(op.flops / 4)               # (4+2)^2 multiplies per 4x4 tile, not 9 x 16
        assert len(transforms) == 3 and all(t.op_class == "elementwise" for t in transforms)
        assert gemm.dims["grad_weight"] == int(grad == 2)
    seven = winograd.kernels(_conv(8, 64, 128, 7))[0]
    assert seven.dims["h_in"] == 2 and seven.flops == pytest.approx(_conv(8, 64, 128, 8).flops / 4)  # 7 -> two tiles


def test_a_3x3_fp32_convolution_costs_the_lesser_of_its_two_algorithms(shipped, direct_only):
    gpus = [lookup_hardware(n) for n in ("V100", "T4", "P100", "A100-SXM4-80GB", "MI300X", "TPU v5e")]
    eligible = [_conv(16, 128, 256, 56), _conv(8, 64, 64, 56), _conv(32, 512, 512, 7)]
    backward = [replace(op, dims={**op.dims, "backward": 1, "grad_input": 1, "grad_weight": 1}) for op in eligible]
    other = [_conv(16, 128, 256, 56, stride=2), _conv(16, 128, 256, 56, dtype="bfloat16"),
             replace(_conv(16, 128, 256, 56), tf32=True), replace(eligible[0], dims={**eligible[0].dims, "dilation": 2}),
             _conv(16, 128, 256, 56, search=False)]
    ops = eligible + backward + other
    priced = shipped.predict_matrix(ops, gpus)
    direct_only()
    direct = shipped.predict_matrix(ops, gpus)
    assert np.all(priced <= direct * (1 + 1e-12))
    rows = len(eligible) + len(backward)
    # the large ResNet layers run well under the direct price where the library has the algorithm (DeepBench's V100:
    # 2.4x the FP32 peak in direct FLOPs), and nothing else moves: not the TPU, not TF32 on an A100, not bf16
    assert np.all(priced[[0, 3], :3] < 0.99 * direct[[0, 3], :3]) and np.all(priced[[0, 3], 0] < 0.6 * direct[[0, 3], 0])
    np.testing.assert_array_equal(priced[:, -1], direct[:, -1])
    tf32 = rows + 2
    unmoved = [rows, rows + 1, rows + 3, rows + 4]   # strided, bf16, dilated, and no search (cuDNN's heuristics)
    np.testing.assert_array_equal(priced[unmoved, :], direct[unmoved, :])
    assert priced[tf32, 3] == direct[tf32, 3]
    # where TF32 does not exist (before Ampere) or cuDNN's flag does not reach the library (AMD), a TF32-flagged
    # convolution is the FP32 one, Winograd included
    np.testing.assert_allclose(priced[tf32, [0, 1, 2, 4]], priced[0, [0, 1, 2, 4]], rtol=1e-12)


def test_the_price_stays_physical(shipped):
    """Never below the fastest algorithm's roofline; never faster with more batch, channels or pixels on any NVIDIA or
    AMD catalog GPU (tiles are whole, the tile GEMMs priced by the monotone network, the transforms at their roofline);
    never slower on a GPU that dominates another of its generation (the envelope, after the lesser is taken)."""
    gpus = [d for d in list_hardware() if d.vendor in ("NVIDIA", "AMD") and d.memory_bandwidth_gbs and d.sm_count]
    measured = set(shipped.metadata.get("trained_on") or ())
    pairs = [(a, b) for a in range(len(gpus)) for b in range(len(gpus))
             if a != b and gpus[b].name in measured and dominates(gpus[a], gpus[b], "fp32")]
    assert len(pairs) > 10
    rng = np.random.default_rng(38)
    for _ in range(12):
        n, c, k = (int(2 ** rng.uniform(lo, hi)) for lo, hi in ((0, 6), (3, 9), (3, 9)))
        side = int(rng.choice([7, 13, 14, 28, 56, 112]))
        backward = bool(rng.integers(0, 2))
        def op(n=n, c=c, k=k, side=side):
            o = _conv(n, c, k, side)
            return replace(o, dims={**o.dims, "backward": 1, "grad_input": 1, "grad_weight": 1}) if backward else o
        chains = [[op(n=max(1, int(n * s))) for s in (1, 1.5, 2, 3)], [op(c=int(c * s)) for s in (1, 1.25, 2, 3)],
                  [op(k=int(k * s)) for s in (1, 1.25, 2, 3)], [op(side=side + d) for d in (0, 1, 2, 5)]]
        for chain in chains:
            times = shipped.predict_matrix(chain, gpus)
            assert np.all(times[1:] >= times[:-1] * (1 - 1e-9)), chain[0].dims
            for j in range(0, len(gpus), 7):
                assert np.all(times[:, j] >= shipped.bound_seconds(chain, gpus[j]) * (1 - 1e-9)), gpus[j].name
            for a, b in pairs:
                assert np.all(times[:, a] <= times[:, b] * (1 + 1e-9)), (gpus[a].name, gpus[b].name)
    # the roofline a Winograd kernel can reach is below the direct one: that is what lets the price go below it
    from predictor_models.predictor.bound import bound_seconds, matrix
    from predictor_models.predictor.devices import device_columns
    from predictor_models.predictor.optable import op_columns

    v100 = lookup_hardware("V100")
    big = _conv(16, 128, 256, 56)
    direct_roofline = bound_seconds(matrix(op_columns([big]), device_columns([v100])))[0, 0]
    assert shipped.bound_seconds([big], v100)[0] < 0.5 * direct_roofline < shipped.predict_matrix([big], [v100])[0, 0]


def test_a_dilated_convolution_is_captured_as_one_and_priced_directly(shipped):
    from prenet_callbacks.projection.ops.capture import capture_step
    from predictor_models.aten.costs import op_spec_from_call

    net = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=2, dilation=2),
                              torch.nn.Conv2d(16, 16, 3, padding=1)).to("meta")
    capture = capture_step(net, torch.empty(4, 16, 32, 32, device="meta"), loss_fn=lambda out: out.sum())
    convs = [op_spec_from_call(call) for call in capture.ops["fwd"] if call.name == "aten::convolution"]
    assert [op.dims.get("dilation", 1) for op in convs] == [2, 1]
    assert [winograd.eligible(searched(replace(op, tf32=False), True)) for op in convs] == [False, True]


def test_the_search_flag_travels_from_torch_backends_to_the_convolutions():
    """``torch.backends.cudnn.benchmark`` (Lightning's ``Trainer(benchmark=True)``) as `parse_precision` reads it, or
    a report's ``cudnn_benchmark``: FP32 convolutions are marked as searched, and unmarked without it."""
    plain = conv_op(8, 64, 64, 56, 56, 3, 3, 1, 1, "float32")
    before = torch.backends.cudnn.benchmark
    try:
        for flag in (True, False):
            torch.backends.cudnn.benchmark = flag
            precision = parse_precision("32-true", "highest", conv_tf32=False)
            assert precision.conv_search is flag
            assert winograd.eligible(retune(plain, precision)) is flag
            assert winograd.eligible(retune(searched(plain, True), precision)) is flag
    finally:
        torch.backends.cudnn.benchmark = before
    assert parse_precision("32-true", "highest", conv_tf32=True, conv_search=True).conv_search
    # a report records the flag with the run, and its re-projection reads it back (absent in older reports: off)
    from prenet_callbacks.projection.ops.precision import recorded_precision
    from prenet_callbacks.session.run_info import describe_run

    before = torch.backends.cudnn.benchmark
    try:
        torch.backends.cudnn.benchmark = True
        current = describe_run("cpu", devices=1, precision="32-true", strategy="auto", framework="lightning")
    finally:
        torch.backends.cudnn.benchmark = before
    assert current["cudnn_benchmark"] is True and recorded_precision(current).conv_search
    assert not recorded_precision({"precision": "32-true"}).conv_search

