"""`benchmarks/op_table_compare.py`: a measured step's op table against `estimate()`'s ops, per op class."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import gpu_models, op_table_compare  # noqa: E402


def test_measured_ops_are_summed_by_the_class_their_name_gives():
    table = [{"op": "aten::mm", "calls": 3, "self_device_us": 100.0},
             {"op": "aten::addmm", "calls": 1, "self_device_us": 20.0},
             {"op": "aten::_foreach_add_", "calls": 1, "self_device_us": 50.0},
             {"op": "aten::copy_", "calls": 2, "self_device_us": 20.0},
             {"op": "aten::native_layer_norm", "calls": 2, "self_device_us": 5.0}]
    got = op_table_compare.measured_by_class(table)
    assert got == pytest.approx({"gemm": 120e-6, "optimizer": 50e-6, "data_movement": 20e-6, "norm": 5e-6})


def test_predicted_layout_transforms_count_with_the_convolution_that_runs_them():
    from predictor_models.hardware import lookup_hardware
    from predictor_models.op_spec import OpSpec
    from prenet_callbacks.projection.ops.layout import LAYOUT_NAME
    from prenet_callbacks.projection.ops.precision import parse_precision
    from prenet_callbacks.projection.ops.workload import Unit, Workload
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    transform = OpSpec("data_movement", "bfloat16", 0.0, 2e6, 2e6, {"numel": 1e6}, False, LAYOUT_NAME)
    cast = OpSpec("data_movement", "bfloat16", 0.0, 2e6, 2e6, {"numel": 1e6}, False, "aten::_to_copy")
    workload = Workload([Unit("conv", "fwd", [(transform, 2.0), (cast, 1.0)])], 1.0, parse_precision("bf16-mixed"))
    predictor, _ = default_predictor()
    device = lookup_hardware("A100")
    got = op_table_compare.predicted_by_class(workload, device, predictor)
    alone = predictor.predict_seconds([transform, cast], device)
    assert got == pytest.approx({"conv": 2.0 * alone[0], "data_movement": alone[1]})


def test_a_profiled_step_is_compared_with_its_estimate(monkeypatch):
    """On this CPU the op table holds self CPU times; the comparison's shape is the same as on a GPU."""
    from benchmarks.gpu_acceptance import _profiled, op_table
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    monkeypatch.setitem(gpu_models.ESTIMATE_MODELS, "tiny_gpt", (gpu_models.tiny_gpt, (4, 8)))
    model, make_batch, loss_fn = gpu_models.tiny_gpt()
    batch = make_batch(4, "cpu")

    def step() -> None:
        loss_fn(model(batch)).backward()

    table = op_table(_profiled(step, shapes=True))
    row = {"model": "tiny_gpt", "batch": 4, "precision": "32-true", "target": "A100-SXM4-80GB",
           "measured_step_s": 0.01, "host_issue_s": 0.004, "top_ops": [{"ops": 3}, {"op_table": table}]}
    predictor, _ = default_predictor()
    result = op_table_compare.compare(row, predictor)
    measured = op_table_compare.measured_by_class(table)
    assert result["measured_ops_ms"] == pytest.approx(sum(measured.values()) * 1e3, abs=1e-3)
    assert result["classes"]["gemm"]["measured_ms"] > 0 and result["classes"]["gemm"]["predicted_ms"] > 0
    assert result["predicted_ops_ms"] > 0 and result["host_issue_ms"] == 4.0
    assert result["kernel_families_ms"] is None   # this run kept no kernel table (a CPU has no device kernels)
    assert op_table_compare.compare({**row, "top_ops": [{"ops": 3}]}, predictor) is None


def test_device_kernels_are_told_apart_by_the_tensor_core_instruction_their_names_say():
    """cuBLAS, cuDNN and SDPA kernel names as a GPU profile shows them: Hopper-native (warpgroup) kernels, Ampere-era
    mma.sync kernels (FlashAttention-2 among them), older tensor cores and CUDA-core kernels."""
    names = {
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel__5x_cublas":
            "native_mma",
        "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_cudnn": "native_mma",
        "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nchw_tilesize128x128x32_stage4_cudnn": "mma_sync",
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn": "mma_sync",
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false>>": "flash_attention_2",
        "volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn": "older_tensor_cores",
        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>": "other",
    }
    assert {name: op_table_compare.kernel_family(name) for name in names} == names
    table = [{"kernel": name, "calls": 2, "device_us": 1000.0 * (i + 1)} for i, name in enumerate(names)]
    families = op_table_compare.kernel_families(table)
    assert families == {"other": 7.0, "older_tensor_cores": 6.0, "flash_attention_2": 5.0, "mma_sync": 7.0,
                        "native_mma": 3.0}
    assert list(families)[0] in ("other", "mma_sync")   # the most device time first


def test_the_kernel_table_keeps_the_profiles_device_kernels_most_expensive_first():
    from types import SimpleNamespace

    from benchmarks.gpu_acceptance import kernel_table

    def event(key, device, us, count=1):
        return SimpleNamespace(key=key, device_type=f"DeviceType.{device}", count=count, self_device_time_total=us,
                               device_time_total=us)

    prof = SimpleNamespace(key_averages=lambda: [event("aten::mm", "CPU", 50.0), event("sm90_xmma_gemm", "CUDA", 30.0, 4),
                                                 event("elementwise_kernel", "CUDA", 70.0), event("idle", "CUDA", 0.0)])
    assert kernel_table(prof) == [{"kernel": "elementwise_kernel", "calls": 1, "device_us": 70.0},
                                  {"kernel": "sm90_xmma_gemm", "calls": 4, "device_us": 30.0}]
