"""The tiled-kernel network: monotone by construction (work, device strength, roofline), the convolution kernels
it prices, and its place in the artifact."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from predictor_models.datasets import Sample
from predictor_models.datasets.common import conv_op, gemm_op
from predictor_models.hardware import list_hardware, lookup_hardware
from predictor_models.predictor import Predictor, PredictorLoadError, load_predictor, save_predictor
from predictor_models.predictor.bound import matrix
from predictor_models.predictor.devices import device_columns
from predictor_models.predictor.expand import conv_kernels, is_depthwise
from predictor_models.predictor.kernel_features import MONO_NAMES, tiled_features
from predictor_models.predictor.model import KernelNetwork
from predictor_models.predictor import mono
from predictor_models.predictor.mono import MonoNet
from predictor_models.predictor.optable import op_columns
from predictor_models.predictor.training import build_training_set, fit_models, fit_network
from tests.predictor_fixtures import roofline_s


def _random_net(rng, m: int = 5, f: int = 3) -> MonoNet:
    pos = lambda *shape: np.abs(rng.normal(size=shape))  # noqa: E731
    return MonoNet(mean=rng.normal(size=m), scale=pos(m) + 0.1, w1m=pos(m, 8), w1f=rng.normal(size=(f, 8)),
                   b1=rng.normal(size=8), w2=pos(8, 4), w2f=rng.normal(size=(f, 4)), b2=rng.normal(size=4),
                   w3=pos(4), ws=pos(m), w3f=rng.normal(size=f), b3=0.3)


def test_a_monotone_network_never_falls_when_a_monotone_input_grows():
    rng = np.random.default_rng(0)
    for _ in range(20):
        net = _random_net(rng)
        mono, free = rng.normal(size=(400, 5)) * 3, rng.integers(0, 2, size=(400, 3)).astype(float)
        base = net(mono, free)
        for j in range(5):
            bumped = mono.copy()
            bumped[:, j] += rng.uniform(0, 4, size=400)
            assert np.all(net(bumped, free) >= base - 1e-12)


def test_the_units_are_tanh_and_softplus_and_never_fall_even_at_the_last_bit():
    """`mono.tanh` and `mono.softplus` are built from exp and log for speed: the same functions to ~1e-16 from
    -1e4 to 1e4 (no overflow), and non-decreasing on a fine sorted sweep, including around 0 and their caps."""
    rng = np.random.default_rng(5)
    x = np.sort(np.concatenate([rng.normal(scale=s, size=20_000) for s in (1e-12, 1e-6, 1e-2, 1.0, 10.0, 40.0, 1e4)]
                               + [np.linspace(lo, hi, 5_000) for lo, hi in ((-20.1, -19.9), (39.9, 40.1), (19.9, 20.1))]))
    with np.errstate(all="raise"):
        tanh, softplus = mono.tanh(x, np.empty_like(x)), mono.softplus(x, np.empty_like(x))
    np.testing.assert_allclose(tanh, np.tanh(x), rtol=0, atol=1e-15)
    np.testing.assert_allclose(softplus, np.logaddexp(0.0, x), rtol=1e-15, atol=1e-15)
    assert np.all(np.diff(tanh) >= 0) and np.all(np.diff(softplus) >= 0)


def test_the_network_computes_its_documented_layers():
    """The folded, units-first evaluation is the module docstring's formula, layer by layer."""
    from benchmarks.mono_units_speed import textbook     # the formula rows first, NumPy's units

    rng = np.random.default_rng(6)
    net = _random_net(rng)
    inputs, free = rng.normal(size=(5_000, 5)) * 3, rng.normal(size=(5_000, 3))
    np.testing.assert_allclose(net(inputs, free), textbook(net, inputs, free), rtol=1e-12, atol=1e-12)


def test_a_network_whose_signs_are_broken_is_refused():
    net = _random_net(np.random.default_rng(1))
    doc = net.to_json()
    assert MonoNet.from_json(doc)(np.zeros((1, 5)), np.zeros((1, 3))) == pytest.approx(net(np.zeros((1, 5)), np.zeros((1, 3))))
    doc["w2"][0][0] = -0.5
    with pytest.raises(ValueError, match="signs"):
        MonoNet.from_json(doc)


def _tiled_ops(rng, count=60):
    """Pairs (op, larger ops): GEMMs and convolution kernels, each with one work dimension grown."""
    out = []
    for _ in range(count):
        dtype = str(rng.choice(["float16", "bfloat16", "float32"]))
        if rng.random() < 0.4:
            b, m, n, k = (int(x) for x in (rng.choice([1, 8]), *(2 ** rng.uniform(3, 13, 3))))
            out.append((gemm_op(b, m, n, k, dtype), [gemm_op(b * 2, m, n, k, dtype), gemm_op(b, m + 1, n, k, dtype),
                                                    gemm_op(b, m, n + 3, k, dtype), gemm_op(b, m, n, k + 5, dtype)]))
            continue
        n_, c, co, hw, kk = (int(rng.choice(v)) for v in ([2, 16, 64], [16, 64, 256], [16, 128, 512], [7, 14, 56], [1, 3]))

        def mk(n_=n_, c=c, co=co, hw=hw, kk=kk, grad=int(rng.integers(0, 3))):
            return conv_kernels(replace(conv_op(n_, c, co, hw, hw, kk, kk, 1, kk // 2, dtype),
                                        dims={**conv_op(n_, c, co, hw, hw, kk, kk, 1, kk // 2, dtype).dims,
                                              "backward": int(grad > 0), "grad_input": int(grad == 1),
                                              "grad_weight": int(grad == 2)}))[0][0]
        grad = int(rng.integers(0, 3))
        out.append((mk(grad=grad), [mk(n_=n_ * 2, grad=grad), mk(c=c * 2, grad=grad), mk(co=co * 2, grad=grad),
                                    mk(hw=hw * 2, grad=grad), mk(kk=kk + 2, grad=grad)]))
    return out


def test_every_monotone_input_grows_with_the_work_and_falls_with_the_device():
    rng = np.random.default_rng(2)
    devices = [lookup_hardware(g) for g in ("T4", "A100-SXM4-80GB", "H100-SXM5", "RTX 4090")]
    devs = device_columns(devices)
    for op, larger in _tiled_ops(rng):
        small, _ = tiled_features(matrix(op_columns([op]), devs))
        for big_op in larger:
            big, _ = tiled_features(matrix(op_columns([big_op]), devs))
            for name, a, b in zip(MONO_NAMES, small, big):
                assert np.all(np.asarray(b) >= np.asarray(a) - 1e-12), (name, op, big_op)
    # a stronger device in every figure the inputs read: every input no larger
    weak, strong = lookup_hardware("A100-PCIe-40GB"), lookup_hardware("A100-SXM4-80GB")
    for op, _ in _tiled_ops(rng, 20):
        a, _ = tiled_features(matrix(op_columns([op]), device_columns([weak])))
        b, _ = tiled_features(matrix(op_columns([op]), device_columns([strong])))
        assert all(np.all(np.asarray(y) <= np.asarray(x) + 1e-12) for x, y in zip(a, b))


def test_convolution_kernels_split_as_cudnn_runs_them():
    fwd = conv_op(8, 64, 128, 28, 28, 3, 3, 1, 1, "float16")
    (k0, _), = conv_kernels(fwd)
    assert k0.flops == pytest.approx(fwd.flops) and k0.dims["grad"] == 0
    back = replace(fwd, dims={**fwd.dims, "backward": 1, "grad_input": 1, "grad_weight": 1})
    dgrad, wgrad = (k for k, _ in conv_kernels(back))
    x, y, w = 8 * 64 * 28 * 28 * 2, 8 * 128 * 28 * 28 * 2, 128 * 64 * 9 * 2
    assert (dgrad.dims["grad"], wgrad.dims["grad"]) == (1, 2)
    assert (dgrad.bytes_read, dgrad.bytes_written) == (y + w, x) and (wgrad.bytes_read, wgrad.bytes_written) == (x + y, w)
    assert dgrad.flops == wgrad.flops == pytest.approx(fwd.flops)
    first_layer = replace(back, dims={**back.dims, "grad_input": 0})   # the input needs no gradient
    assert [k.dims["grad"] for k, _ in conv_kernels(first_layer)] == [2]
    depthwise = conv_op(8, 64, 64, 28, 28, 3, 3, 1, 1, "float16", groups=64)
    assert is_depthwise(depthwise) and not is_depthwise(fwd)
    (stream, _), = conv_kernels(depthwise)
    assert stream.op_class == "elementwise" and stream.bytes_moved == pytest.approx(depthwise.bytes_moved)


def test_a_capture_records_which_gradients_a_convolution_backward_computes():
    import torch

    from predictor_models.aten_ops import op_spec_from_call
    from prenet_callbacks.projection.ops.capture import capture_step

    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3))
        x = torch.randn(2, 3, 16, 16)
    capture = capture_step(model, x)
    backs = [op for op in map(op_spec_from_call, capture.ops["bwd"]) if op.op_class == "conv"]
    assert sorted(op.dims["grad_input"] for op in backs) == [0, 1]
    assert all(op.dims["grad_weight"] == 1 for op in backs)


def _samples(seed=0) -> list[Sample]:
    """Half-precision GEMMs and convolution kernels on three tensor-core GPUs: a utilisation that grows with size."""
    rng = np.random.default_rng(seed)
    out = []
    for gpu in ("T4", "A100-SXM4-80GB", "H100-SXM5"):
        dev = lookup_hardware(gpu)
        for op, _ in _tiled_ops(rng, 150):
            if op.dtype == "bfloat16" and gpu == "T4":   # no bf16 on Turing
                op = replace(op, dtype="float16")
            bound = roofline_s(op, dev, dev.peak_flops(op.dtype))
            util = 0.25 + 0.5 * min(1.0, np.log10(op.flops + 1) / 12)
            out.append(Sample(op, gpu, bound / util, "synthetic"))
    return out


@pytest.fixture(scope="module")
def network_predictor() -> Predictor:
    ts = build_training_set(_samples(), lookup_hardware)
    network = fit_network(ts, cap=1000)
    return Predictor(fit_models(ts, cap=1000), {"version": "test"}, networks=[network])


def test_the_network_prices_half_precision_convolutions_physically(network_predictor):
    """Random half-precision convolution kernels on every catalog GPU with tensor cores: never below the
    roofline, never faster with more work, never slower on a GPU at least as strong in every figure it reads."""
    rng = np.random.default_rng(3)
    cases = [(op, larger) for op, larger in _tiled_ops(rng, 80) if op.op_class == "conv" and op.dtype != "float32"]
    for dtype, generation in (("float16", 7.0), ("bfloat16", 8.0)):   # where that mode runs on tensor cores
        devices = [a for a in list_hardware() if a.vendor == "NVIDIA" and a.sm_count and a.tdp_w
                   and float(a.compute_capability or 0) >= generation]
        _check_physics(network_predictor, [c for c in cases if c[0].dtype == dtype], devices)


def _check_physics(network_predictor, cases, devices):
    ops = [op for op, _ in cases]
    times = network_predictor.predict_matrix(ops, devices)
    bounds = np.stack([network_predictor.bound_seconds(ops, d) for d in devices], axis=1)
    assert np.all(times >= bounds * (1 - 1e-9))
    for (op, larger), row in zip(cases, times):
        grown = network_predictor.predict_matrix(larger, devices)
        assert np.all(grown >= row[None, :] * (1 - 1e-9)), op
    figures = ("fp16_tflops", "bf16_tflops", "memory_bandwidth_gbs", "sm_count", "tdp_w")
    for i, a in enumerate(devices):
        for j, b in enumerate(devices):
            if i != j and all((getattr(a, f) or 0) >= (getattr(b, f) or 0) for f in figures):
                assert np.all(times[:, i] <= times[:, j] * (1 + 1e-9)), (a.name, b.name)


def test_the_network_learns_the_law_and_leaves_tf32_to_the_class_models(network_predictor):
    test = [s for s in _samples(seed=5) if s.op.dtype != "float32" and s.op.op_class == "conv"]
    dev = lookup_hardware("A100-SXM4-80GB")
    rows = [s for s in test if s.device == "A100-SXM4-80GB"]
    pred = network_predictor.predict_seconds([s.op for s in rows], dev)
    assert np.median(np.abs(pred / np.array([s.seconds for s in rows]) - 1)) < 0.3
    tf32 = [replace(op, tf32=True) for op, _ in _tiled_ops(np.random.default_rng(6), 40)
            if op.dtype == "float32" and op.op_class == "conv"]
    without = Predictor(network_predictor.models, {"version": "no network"})
    assert np.allclose(network_predictor.predict_seconds(tf32, dev), without.predict_seconds(tf32, dev))


def test_the_network_prices_fp32_convolutions_on_cuda_cores_of_every_gpu(network_predictor):
    """FP32 (TF32 off) runs on no GPU's tensor cores: the network prices FP32 convolutions on a Pascal GPU as on a
    Hopper one (`training.NETWORK_MODES`), physically, where without the mode the class models priced them."""
    net = network_predictor.networks[0]
    assert "fp32" in net.modes
    half_only = Predictor(network_predictor.models, {"version": "half-precision network"},
                          networks=[KernelNetwork(net.classes, tuple(m for m in net.modes if m != "fp32"), net.members)])
    rng = np.random.default_rng(8)
    cases = [(op, larger) for op, larger in _tiled_ops(rng, 80) if op.op_class == "conv" and op.dtype == "float32"]
    devices = [lookup_hardware(g) for g in ("P100", "V100", "T4", "A100-SXM4-80GB", "H100-SXM5")]
    ops = [op for op, _ in cases]
    assert not np.allclose(half_only.predict_matrix(ops, devices), network_predictor.predict_matrix(ops, devices))
    times = network_predictor.predict_matrix(ops, devices)
    assert np.all(times >= np.stack([network_predictor.bound_seconds(ops, d) for d in devices], axis=1) * (1 - 1e-9))
    for (op, larger), row in zip(cases, times):
        assert np.all(network_predictor.predict_matrix(larger, devices) >= row[None, :] * (1 - 1e-9)), op


def test_the_shipped_predictor_keeps_fp32_convolutions_monotone_and_tf32_ones_with_the_class_model():
    """The shipped file: an FP32 convolution with TF32 off is never predicted faster with more work on any catalog
    GPU; with TF32 on (PyTorch's default) it is not the tiled-kernel network's: the class model's, as before, or, for
    a 1x1 convolution priced as its GEMM, the GEMM network's (TF32 GEMMs, predictor 1.4.0)."""
    from predictor_models.predictor import load_predictor

    shipped = load_predictor()
    assert any("fp32" in net.modes and "tf32" not in net.modes for net in shipped.networks)
    rng = np.random.default_rng(11)
    cases = [(op, larger) for op, larger in _tiled_ops(rng, 120) if op.op_class == "conv" and op.dtype == "float32"]
    devices = [a for a in list_hardware() if a.vendor == "NVIDIA" and a.sm_count and a.memory_bandwidth_gbs]
    times = shipped.predict_matrix([op for op, _ in cases], devices)
    for (op, larger), row in zip(cases, times):
        assert np.all(shipped.predict_matrix(larger, devices) >= row[None, :] * (1 - 1e-9)), op
    tf32 = [replace(op, tf32=True) for op, _ in cases[:10]]
    class_only = Predictor(shipped.models, shipped.metadata, shipped.heldout,
                           networks=[net for net in shipped.networks if "conv" not in net.classes])
    class_only.monotone, class_only.device_envelope = shipped.monotone, shipped.device_envelope
    assert np.allclose(shipped.predict_matrix(tf32, devices[:6]), class_only.predict_matrix(tf32, devices[:6]))


def test_an_artifact_keeps_its_network_and_refuses_a_broken_one(network_predictor, tmp_path):
    path = save_predictor(network_predictor, tmp_path)
    loaded = load_predictor(path)
    ops = [op for op, _ in _tiled_ops(np.random.default_rng(7), 30)]
    dev = lookup_hardware("H100-SXM5")
    assert np.allclose(loaded.predict_seconds(ops, dev), network_predictor.predict_seconds(ops, dev))
    doc = json.loads(path.read_text())
    doc["networks"][0]["members"][0]["ws"][0] = -1.0
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "predictor.json").write_text(json.dumps(doc))
    with pytest.raises(PredictorLoadError, match="signs"):
        load_predictor(broken)
    doc = json.loads(path.read_text())
    doc["format_version"], doc["networks"] = 2, []      # a 1.1 file: no networks, still read
    old = tmp_path / "old"
    old.mkdir()
    (old / "predictor.json").write_text(json.dumps(doc))
    assert load_predictor(old).networks == ()
