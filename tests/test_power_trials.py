"""`benchmarks/power_trials.py` (issue 38's rejected trials): eta per generation and the capped fp32 peak."""
from __future__ import annotations

import numpy as np

from benchmarks.power_trials import generation_eta, power_capped
from predictor_models.datasets.common import Sample
from predictor_models.hardware import lookup_hardware
from predictor_models.op_spec import OpSpec
from predictor_models.predictor.training import build_training_set


def _gemm(n: int, dtype: str = "float32") -> OpSpec:
    size = 2 if dtype == "bfloat16" else 4
    return OpSpec("gemm", dtype, 2.0 * n ** 3, 2.0 * n * n * size, n * n * size, {"b": 1, "m": n, "n": n, "k": n})


def _samples(gpu: str, tflops: float, count: int = 60) -> list[Sample]:
    """Large fp32 GEMMs at ``tflops``, and one bf16 GEMM (another mode: never capped)."""
    ops = [_gemm(4096 + 64 * i) for i in range(count)]
    return [Sample(op, gpu, op.flops / (tflops * 1e12), "test") for op in ops] + \
        [Sample(_gemm(4096, "bfloat16"), gpu, 1e-3, "test")]


def test_eta_is_the_generations_best_gpu_and_caps_only_fp32_peaks_above_it():
    accelerators = {name: lookup_hardware(name) for name in ("A100-PCIe-40GB", "A40", "T4")}
    ts = build_training_set(_samples("A100-PCIe-40GB", 18.0) + _samples("A40", 12.0) + _samples("T4", 3.0),
                            lookup_hardware)
    eta = generation_eta(ts, accelerators)
    a100, a40, t4 = (accelerators[n] for n in ("A100-PCIe-40GB", "A40", "T4"))
    assert eta["ampere"][1] == "A100-PCIe-40GB" and eta["turing"][1] == "T4"   # the best of each generation
    assert np.isclose(eta["ampere"][0], 18.0e12 / a100.tdp_w, rtol=1e-6)
    capped = power_capped(ts, eta, accelerators)
    fp32 = capped.ops.mode == 0
    a40_rows = (capped.gpu == "A40") & fp32
    # the A40 (300 W, 37 TFLOP/s fp32) is held to 300 W at the A100's 72 GFLOP/J; the A100, the generation's best, to
    # its own plateau (18 of its 19.5 TFLOP/s)
    assert np.allclose(capped.devices.peaks[a40_rows, 0], a40.tdp_w * eta["ampere"][0])
    assert np.allclose(capped.devices.peaks[(capped.gpu == "A100-PCIe-40GB") & fp32, 0], 18.0e12)
    assert np.allclose(capped.devices.peaks[capped.gpu == "T4", 0],
                       min(t4.peak_flops("float32"), t4.tdp_w * eta["turing"][0]))
    assert (capped.bound[a40_rows] > ts.bound[a40_rows]).all()   # its compute-bound GEMMs take longer
    np.testing.assert_array_equal(capped.devices.peaks[:, 3], ts.devices.peaks[:, 3])   # bf16 untouched
