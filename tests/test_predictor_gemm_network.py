"""The GEMM network: half-precision and TF32 GEMMs priced monotone in their work by construction, never below its
kernel floor or the roofline, and kept by the artifact with its kind of inputs."""
from __future__ import annotations

import json

import numpy as np
import pytest

from predictor_models.datasets.common import gemm_op
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
