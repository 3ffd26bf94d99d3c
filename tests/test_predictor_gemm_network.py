"""The GEMM network: half-precision and TF32 GEMMs priced monotone in their work by construction, never below its
kernel floor or the roofline, and kept by the artifact with its kind of inputs."""
from __future__ import annotations

import json

import numpy as np
import pytest

from predictor_models.datasets.common import gemm_op
from predictor_models.op_spec import OpSpec
from predictor_models.hardware import list_hardware, lookup_hardware
from predictor_models.predictor import Predictor, PredictorLoadError, load_predictor, save_predictor
from predictor_models.predictor.bound import matrix
from predictor_models.predictor.devices import MODES, device_columns
from predictor_models.predictor.kernel_features import GEMM_FREE_NAMES, GEMM_MONO_NAMES, gemm_time_features
from predictor_models.predictor.optable import op_columns


@pytest.fixture(scope="module")
def shipped() -> Predictor:
    return load_predictor()


def _gemm_network(predictor: Predictor):
    return next(net for net in predictor.networks if "gemm" in net.classes)


def _random_gemms(rng, count: int, dtypes=("bfloat16", "float16")) -> list[tuple]:
    """(op, larger ops): a GEMM of one of ``dtypes`` ("tf32": FP32 with TF32 on), and the same with one of b, m, n,
    k grown (doubled, or by one: the property holds between any sizes, not only power-of-two multiples)."""
    out = []
    for _ in range(count):
        b = int(rng.choice([1, 1, 1, 4, 12, 48]))
        m, n, k = (int(2 ** rng.uniform(3, 14)) for _ in range(3))
        dtype = str(rng.choice(list(dtypes)))

        def gemm(b, m, n, k):
            return gemm_op(b, m, n, k, "float32", tf32=True) if dtype == "tf32" else gemm_op(b, m, n, k, dtype)
        op = gemm(b, m, n, k)
        dims = {"b": b, "m": m, "n": n, "k": k}
        larger = [gemm(*[dims[d] * 2 if d == grown else dims[d] for d in "bmnk"]) for grown in "bmnk"]
        larger += [gemm(*[dims[d] + 1 if d == grown else dims[d] for d in "bmnk"]) for grown in "mnk"]
        out.append((op, larger))
    return out


_MODE = {"bfloat16": "bf16", "float16": "fp16", "tf32": "tf32"}


def _tensor_core_gpus(dtype: str, *, without: bool = False) -> list:
    """Catalog GPUs with a tensor-core peak for ``dtype`` (fp16 from Volta, bf16 and TF32 from Ampere): where the
    network prices its GEMMs (`Predictor._network_prices`; a GPU whose entry lacks the figure keeps the class model);
    ``without``: the NVIDIA GPUs that lack it."""
    gpus = [a for a in list_hardware() if a.vendor == "NVIDIA" and a.sm_count and a.memory_bandwidth_gbs]
    tensor = device_columns(gpus).tensor[:, MODES.index(_MODE[dtype])]
    return [gpu for gpu, on in zip(gpus, tensor) if (on > 0) != without]


def test_the_shipped_predictor_has_a_gemm_network_for_half_precision_and_tf32_with_a_floor(shipped):
    net = _gemm_network(shipped)
    assert net.modes == ("fp16", "bf16", "tf32") and net.inputs == "gemm_times"
    assert 1e-6 < net.floor_s < 2e-5          # a few microseconds: a kernel, not a host's per-op cost
    tiny = [gemm_op(1, 16, 16, 16, "bfloat16")]
    for gpu in _tensor_core_gpus("bfloat16"):
        assert shipped.predict_seconds(tiny, gpu)[0] >= net.floor_s * (1 - 1e-9)


def test_every_monotone_input_grows_with_the_work():
    devices = _tensor_core_gpus("bfloat16")[:6]
    for op, larger in _random_gemms(np.random.default_rng(1), 40):
        small, _ = gemm_time_features(matrix(op_columns([op]), device_columns(devices)))
        assert len(small) == len(GEMM_MONO_NAMES)
        for big_op in larger:
            big, _ = gemm_time_features(matrix(op_columns([big_op]), device_columns(devices)))
            for name, a, b in zip(GEMM_MONO_NAMES, small, big):
                assert np.all(np.broadcast_to(b, (1, len(devices))) >= np.broadcast_to(a, (1, len(devices))) - 1e-12), (
                    name, op.dims, big_op.dims)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "tf32"])
def test_the_shipped_predictor_never_prices_a_larger_tensor_core_gemm_faster(shipped, dtype):
    """On every catalog GPU with tensor cores for the dtype, for random GEMMs and each one grown along b, m, n or k
    (by double, or by one): never faster, never below the roofline. The class model it replaced broke this on
    hundreds of grid steps (`benchmarks/predictor_physics.py`)."""
    cases = _random_gemms(np.random.default_rng(5), 30, dtypes=(dtype,))
    devices = _tensor_core_gpus(dtype)
    times = shipped.predict_matrix([op for op, _ in cases], devices)
    bounds = np.stack([shipped.bound_seconds([op for op, _ in cases], d) for d in devices], axis=1)
    assert np.all(times >= bounds * (1 - 1e-9))
    for (op, larger), row in zip(cases, times):
        grown = shipped.predict_matrix(larger, devices)
        assert np.all(grown >= row[None, :] * (1 - 1e-9)), (op.dims, np.argwhere(grown < row[None, :] * (1 - 1e-9)))


def test_fp32_gemms_and_tf32_gemms_without_tf32_tensor_cores_stay_with_the_class_model(shipped):
    class_only = Predictor(shipped.models, shipped.metadata, shipped.heldout, shipped.default_utilisation,
                           [net for net in shipped.networks if "gemm" not in net.classes])
    fp32, tf32 = gemm_op(1, 4096, 1024, 768, "float32"), gemm_op(1, 4096, 1024, 768, "float32", tf32=True)
    gpus = [lookup_hardware(n) for n in ("A100-SXM4-80GB", "H100-SXM5", "L4")]
    np.testing.assert_allclose(shipped.predict_matrix([fp32], gpus), class_only.predict_matrix([fp32], gpus), rtol=1e-12)
    # a TF32 GEMM on a GPU without TF32 tensor cores runs FP32 kernels: the class model's, as before
    older = [lookup_hardware(n) for n in ("V100-PCIe-32GB", "T4", "P100-PCIe-16GB")]
    assert all(gpu.name not in {g.name for g in _tensor_core_gpus("tf32")} for gpu in older)
    np.testing.assert_allclose(shipped.predict_matrix([tf32], older), class_only.predict_matrix([tf32], older),
                               rtol=1e-12)
    # on tensor cores the network prices TF32 and half-precision GEMMs
    for op in (tf32, gemm_op(1, 4096, 1024, 768, "bfloat16")):
        assert not np.any(np.isclose(shipped.predict_matrix([op], gpus), class_only.predict_matrix([op], gpus),
                                     rtol=1e-6))


def test_tf32_runs_on_tensor_cores_from_ampere_even_at_the_fp32_rate(shipped):
    """GA102 and AD102 cards (and the A10G, L40) list a TF32 rate equal to their FP32 one; cuBLAS still runs their TF32
    matmuls on tensor cores, so the GEMM network prices them there, as on an A100; FP32 itself, and TF32 before
    Ampere, stay off tensor cores."""
    equal_rates = [lookup_hardware(n) for n in ("RTX 3090", "RTX 4090", "A10G", "L40")]
    assert all(g.tf32_tflops == g.fp32_tflops for g in equal_rates)
    columns = device_columns(equal_rates + [lookup_hardware(n) for n in ("V100-PCIe-32GB", "T4")])
    assert columns.tensor[:, MODES.index("tf32")].tolist() == [1.0] * 4 + [0.0, 0.0]
    assert not columns.tensor[:, MODES.index("fp32")].any()
    class_only = Predictor(shipped.models, shipped.metadata, shipped.heldout, shipped.default_utilisation,
                           [net for net in shipped.networks if "gemm" not in net.classes])
    tf32 = [gemm_op(1, 4096, 1024, 768, "float32", tf32=True)]
    assert not np.any(np.isclose(shipped.predict_matrix(tf32, equal_rates), class_only.predict_matrix(tf32, equal_rates),
                                 rtol=1e-6))


def test_an_artifact_keeps_the_gemm_networks_inputs_and_floor_and_refuses_unknown_ones(shipped, tmp_path):
    path = save_predictor(shipped, tmp_path / "copy")
    loaded = load_predictor(path)
    net, again = _gemm_network(shipped), _gemm_network(loaded)
    assert (again.inputs, again.floor_s, again.modes) == (net.inputs, net.floor_s, net.modes)
    ops = [op for op, _ in _random_gemms(np.random.default_rng(9), 20)]
    h100 = lookup_hardware("H100-SXM5")
    np.testing.assert_allclose(loaded.predict_seconds(ops, h100), shipped.predict_seconds(ops, h100), rtol=1e-12)
    doc = json.loads(path.read_text())
    index = next(i for i, entry in enumerate(doc["networks"]) if entry.get("inputs") == "gemm_times")
    assert doc["networks"][index]["mono_features"] == list(GEMM_MONO_NAMES)
    assert doc["networks"][index]["free_features"] == list(GEMM_FREE_NAMES)
    for change, message in ((("inputs", "tiles_and_watts"), "kind of inputs"), (("floor_s", -1.0), "floor")):
        broken_doc = json.loads(path.read_text())
        broken_doc["networks"][index][change[0]] = change[1]
        folder = tmp_path / change[0]
        folder.mkdir()
        (folder / "predictor.json").write_text(json.dumps(broken_doc))
        with pytest.raises(PredictorLoadError, match=message):
            load_predictor(folder)
    old_doc = json.loads(path.read_text())          # a file from before: its one network has no inputs or floor
    old_doc["networks"] = [{k: v for k, v in entry.items() if k not in ("inputs", "floor_s")}
                           for entry in old_doc["networks"] if entry.get("inputs") == "tiled"]
    folder = tmp_path / "before"
    folder.mkdir()
    (folder / "predictor.json").write_text(json.dumps(old_doc))
    assert [(n.inputs, n.floor_s) for n in load_predictor(folder).networks] == [("tiled", 0.0)]


def test_a_tf32_op_on_a_gpu_without_tf32_is_its_fp32_op_and_the_physics_grid_counts_it_there(shipped):
    """Before Ampere there is no TF32: `allow_tf32` changes nothing and the op is priced exactly as the FP32 one, so
    `predictor_physics.py` counts such steps among fp32's chains, not a second time among TF32's."""
    from dataclasses import replace

    from benchmarks.predictor_physics import runs_dtype
    from predictor_models.datasets.common import conv_op

    older = [lookup_hardware(n) for n in ("V100-PCIe-32GB", "T4", "P100-PCIe-16GB")]
    ops = [gemm_op(1, 512, 1024, 768, "float32"), conv_op(32, 64, 64, 56, 56, 3, 3, 1, 1, "float32")]
    for op in ops:
        np.testing.assert_array_equal(shipped.predict_matrix([replace(op, tf32=True)], older),
                                      shipped.predict_matrix([op], older))
    assert not any(runs_dtype(gpu, "tf32") for gpu in older)
    assert all(runs_dtype(gpu, "float32") for gpu in older)
    assert runs_dtype(lookup_hardware("A100-SXM4-80GB"), "tf32") and runs_dtype(lookup_hardware("RTX 4090"), "tf32")
    assert not runs_dtype(lookup_hardware("P100-PCIe-16GB"), "bfloat16")


def test_before_ampere_a_tf32_flag_never_changes_a_price(shipped):
    """Every catalog GPU before Ampere (measured or not, so compute twins too), beside Ampere and later ones, on random
    FP32 GEMMs, convolutions and attention: the TF32-flagged op costs exactly what the same op without the flag does
    there, and the GPUs with TF32 price the flagged op as they would alone."""
    from dataclasses import replace

    from predictor_models.datasets.common import conv_op
    from predictor_models.predictor.model import _before_tf32

    # every such catalog GPU, and an unmeasured compute twin of a measured one (its bandwidth apart), which is held to
    # its twin on TF32 ops where TF32 exists and must not be before Ampere
    twin = replace(lookup_hardware("V100-PCIe-32GB"), name="V100 with less bandwidth", memory_bandwidth_gbs=700.0)
    older = [d for d in list_hardware() if d.memory_bandwidth_gbs and _before_tf32(d)] + [twin]
    newer = [lookup_hardware(n) for n in ("A100-SXM4-80GB", "H100-SXM5", "RTX 4090", "L4")]
    assert {d.name for d in older} >= {"V100-PCIe-16GB", "V100-PCIe-32GB", "T4", "P100-PCIe-16GB", "TITAN V"}
    rng = np.random.default_rng(11)
    ops = [op for op, _ in _random_gemms(rng, 12, dtypes=("float32",))]
    for _ in range(12):
        n, c, side, k = (int(2 ** rng.integers(lo, hi)) for lo, hi in ((0, 7), (3, 10), (2, 7), (0, 3)))
        ops.append(conv_op(n, c, 2 * c, side, side, 2 * k - 1, 2 * k - 1, 1, k - 1, "float32"))
    ops.append(OpSpec("attention", "float32", 4.0 * 8 * 1024 * 1024 * 64, 3 * 8 * 1024 * 64 * 4, 8 * 1024 * 64 * 4,
                      {"b": 1, "heads": 8, "s_q": 1024, "s_kv": 1024, "d": 64}, False, "aten::_efficient_attention"))
    flagged = [replace(op, tf32=True) for op in ops]
    devices = newer[:2] + older + newer[2:]
    with_flag, without = shipped.predict_matrix(flagged, devices), shipped.predict_matrix(ops, devices)
    columns = [j for j, d in enumerate(devices) if _before_tf32(d)]
    np.testing.assert_allclose(with_flag[:, columns], without[:, columns], rtol=1e-12)
    alone = shipped.predict_matrix(flagged, newer)
    np.testing.assert_allclose(with_flag[:, [0, 1, -2, -1]], alone, rtol=1e-12)
    assert not np.allclose(alone, shipped.predict_matrix(ops, newer), rtol=1e-6)   # where TF32 exists it matters


def test_on_an_amd_gpu_cudnns_tf32_flag_changes_no_convolution_but_the_matmul_flag_still_counts(shipped):
    """PyTorch does not pass cuDNN's TF32 flag to MIOpen: an FP32 convolution on an AMD GPU costs what it costs without
    the flag, on every AMD catalog GPU beside NVIDIA ones; a TF32 matmul on an MI300 (hipBLASLt's xf32) keeps its
    price, and an NVIDIA GPU with TF32 still reads the flag."""
    from dataclasses import replace

    from predictor_models.datasets.common import conv_op

    amd = [d for d in list_hardware() if d.vendor == "AMD" and d.memory_bandwidth_gbs]
    assert {"MI250X", "MI300X", "MI325X"} <= {d.name for d in amd}
    devices = [lookup_hardware("A100-SXM4-80GB")] + amd
    convs = [conv_op(n, c, c, side, side, 3, 3, 1, 1, "float32") for n, c, side in ((8, 64, 56), (64, 256, 28))]
    flagged = [replace(op, tf32=True) for op in convs]
    with_flag, without = shipped.predict_matrix(flagged, devices), shipped.predict_matrix(convs, devices)
    np.testing.assert_allclose(with_flag[:, 1:], without[:, 1:], rtol=1e-12)
    # the A100's TF32 convolutions: below its FP32 ones, even where those run Winograd's kernels (winograd.py)
    assert np.all(with_flag[:, 0] < 0.8 * without[:, 0])
    gemm = gemm_op(1, 8192, 4096, 4096, "float32")
    mi300x = [lookup_hardware("MI300X")]
    assert shipped.predict_matrix([replace(gemm, tf32=True)], mi300x)[0, 0] < 0.5 * shipped.predict_matrix([gemm], mi300x)[0, 0]
