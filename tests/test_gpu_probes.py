"""The kernel probes a lent GPU runs (`benchmarks/gpu_probes.py`): here their CPU path, small shapes, host clock."""
from __future__ import annotations

import pytest
import torch

from benchmarks import gpu_probes


def test_padding_rounds_a_vocabulary_up_to_a_multiple_of_64():
    assert gpu_probes.padded(50257) == 50304 and gpu_probes.padded(30522) == 30528 and gpu_probes.padded(768) == 768


def test_each_misaligned_gemm_has_a_padded_twin_with_only_the_vocabulary_changed():
    cases = [c for c in gpu_probes.probe_cases(smoke=False) if c[0] == "gemm_alignment"]
    assert len(cases) == 2 * len(gpu_probes.ALIGNMENT) * len(gpu_probes.DTYPES)
    for misaligned, padded in zip(cases[::2], cases[1::2]):
        assert misaligned[1].removesuffix("_misaligned") == padded[1].removesuffix("_padded")
        changed = {k for k in "mnk" if misaligned[2].dims[k] != padded[2].dims[k]}
        assert len(changed) == 1
        (dim,) = changed
        assert misaligned[2].dims[dim] * 2 % 16 != 0 and padded[2].dims[dim] * 2 % 16 == 0


def test_the_gemms_are_laid_out_as_autograd_runs_a_linear_head():
    """The forward reads the weight stored [vocab, hidden] transposed; the weight gradient reads the output gradient
    stored [tokens, vocab] transposed, so the vocabulary is a leading dimension where autograd has it."""
    cpu = torch.device("cpu")
    layouts = {label: layout for label, *_, layout in gpu_probes.ALIGNMENT}
    x, w = gpu_probes.gemm_operands("float32", 6, 10, 4, layouts["gpt2_head_forward"], cpu)
    assert x.stride() == (4, 1) and w.shape == (4, 10) and w.stride() == (1, 4)
    x, w = gpu_probes.gemm_operands("float32", 10, 4, 6, layouts["gpt2_head_weight_grad"], cpu)
    assert x.shape == (10, 6) and x.stride() == (1, 10) and w.stride() == (4, 1)
    x, w = gpu_probes.gemm_operands("float32", 6, 4, 10, layouts["gpt2_head_input_grad"], cpu)
    assert x.stride() == (10, 1) and w.stride() == (4, 1)


def test_the_streaming_probes_reach_beyond_the_largest_l2():
    largest = max(op.bytes_read + op.bytes_written for probe, _, op, _ in gpu_probes.probe_cases(smoke=False)
                  if probe == "streaming")
    assert largest > 4 * 126 * 2**20          # B200's L2, the largest in the catalog


def test_the_probes_run_on_a_cpu_and_sit_beside_the_predictors_time():
    torch.manual_seed(0)
    result = gpu_probes.run_probes(torch.device("cpu"), smoke=True, catalog_name="H200-SXM")
    rows = result["rows"]
    assert len(rows) == len(gpu_probes.probe_cases(smoke=True))
    assert all(r["seconds"] > 0 and r["predicted_s"] > 0 and r["bandwidth_share"] is not None for r in rows)
    summary = result["summary"]
    assert set(summary["misaligned_slowdown_per_flop"]) == {
        f"{label}/{dtype}" for label, *_ in gpu_probes.ALIGNMENT for dtype in gpu_probes.DTYPES}
    assert all(v > 0 for v in summary["misaligned_slowdown_per_flop"].values())
    assert "aten::_to_copy/bfloat16" in summary["streaming_largest_two"]
    assert len(summary["l2_cold_over_warm"]) == sum(1 for c in gpu_probes.probe_cases(smoke=True) if c[0] == "l2_warm")
    shapes = {label for label, *_ in gpu_probes.BATCH_NORMS}
    assert {label.split("/")[0] for label in summary["batch_norm_over_fp32"]} == shapes
    assert all(set(v) == {"bfloat16_over_fp32", "float16_over_fp32", "bf16_predicted_over_measured"}
               and all(x > 0 for x in v.values()) for v in summary["batch_norm_over_fp32"].values())
    size = gpu_probes.KERNEL_PATH_SIZES[0] // 16
    assert set(summary["kernel_path_over_contiguous"]) == {f"{label}/{size}" for label, _ in gpu_probes.KERNEL_PATHS}
    assert all(v > 0 for v in summary["kernel_path_over_contiguous"].values())


def test_without_a_catalog_device_the_rows_say_bytes_per_second_only():
    rows = gpu_probes.summarise([
        {"probe": "streaming", "label": "aten::relu", "dtype": "float32", "seconds": 1e-3, "bandwidth_share": None,
         "gbytes_per_s": 80.0},
        {"probe": "gemm_alignment", "label": "x_misaligned", "dtype": "float32", "seconds": 2e-3, "tflops": 1.0},
        {"probe": "gemm_alignment", "label": "x_padded", "dtype": "float32", "seconds": 1e-3, "tflops": 2.0},
    ])
    assert rows == {"misaligned_slowdown_per_flop": {"x/float32": 2.0},
                    "streaming_largest_two": {"aten::relu/float32": pytest.approx(80.0)}, "training_gemms": {},
                    "l2_cold_over_warm": {}, "batch_norm_over_fp32": {}, "kernel_path_over_contiguous": {}}


def test_each_kernel_path_probe_runs_off_the_vectorized_path_and_is_judged_per_byte():
    size = 4 * gpu_probes.ROW
    calls = {label: gpu_probes._kernel_path(label, size)(torch, torch.device("cpu"))
             for label, _ in gpu_probes.KERNEL_PATHS}
    assert calls["mixed_add"]().dtype == torch.float32                 # fp32 + bf16 promotes: a mixed-dtype op
    assert calls["broadcast_mul"]().shape == (4, gpu_probes.ROW)       # the row broadcast over the tokens
    assert calls["strided_neg"]().numel() == size
    cpu = torch.device("cpu")
    assert not gpu_probes.kernel_path_inputs("strided_neg", size, cpu)[0].is_contiguous()   # the offsets path
    x, y = gpu_probes.kernel_path_inputs("mixed_add", size, cpu)
    assert x.is_contiguous() and y.is_contiguous() and x.dtype != y.dtype                 # the unrolled cast path
    for label, _ in gpu_probes.KERNEL_PATHS:
        op = gpu_probes.kernel_path_op(label, size)
        assert op.dims["numel"] == size
    assert gpu_probes.kernel_path_op("mixed_add", size).bytes_read == size * 6      # one fp32 and one bf16 operand
    # bytes/s over the contiguous twin's at the same size: a path half as fast per byte reads 0.5
    ratios = gpu_probes.kernel_path_ratios([
        {"probe": "streaming", "label": "aten::add", "dtype": "float32", "dims": {"numel": size}, "gbytes_per_s": 100.0},
        {"probe": "kernel_path", "label": "mixed_add", "dtype": "float32", "dims": {"numel": size}, "gbytes_per_s": 50.0},
        {"probe": "kernel_path", "label": "broadcast_mul", "dtype": "bfloat16", "dims": {"numel": size},
         "gbytes_per_s": 50.0},
    ])
    assert ratios == {f"mixed_add/{size}": 0.5}      # no contiguous bf16 mul of that size: no ratio for the broadcast


def test_each_warm_probe_fits_every_l2_and_has_a_cold_twin():
    cases = gpu_probes.probe_cases(smoke=False)
    cold = [(label, op.dtype, op.bytes_moved) for probe, label, op, _ in cases if probe == "l2_cold"]
    warm = [(label, op.dtype, op.bytes_moved) for probe, label, op, _ in cases if probe == "l2_warm"]
    assert len(warm) == len(gpu_probes.DTYPES) * len(gpu_probes.WARM_SIZES) * (len(gpu_probes.WARM_OPS) + 1)
    assert warm == cold
    assert all(moved <= 40 * 2**20 for *_, moved in warm)     # inside the A100's L2, the smallest of the four


def test_a_warm_probe_is_timed_without_the_flush_and_a_cold_one_with_it():
    flushes = []

    class Counting(gpu_probes._HostBackend):
        def flush(self) -> None:
            flushes.append(1)

    from predictor_models.collection.timer import time_op

    time_op(lambda: None, gpu_probes._Warm(Counting()), budget_ms=0.1, max_repeats=5)
    assert flushes == []
    time_op(lambda: None, Counting(), budget_ms=0.1, max_repeats=5)
    assert len(flushes) >= 5


def test_the_summary_gives_each_warm_op_its_cold_twins_time_over_its_own():
    summary = gpu_probes.summarise([
        {"probe": "l2_cold", "label": "aten::add", "dtype": "bfloat16", "dims": {"numel": 1024}, "seconds": 3e-6},
        {"probe": "l2_warm", "label": "aten::add", "dtype": "bfloat16", "dims": {"numel": 1024}, "seconds": 2e-6},
        {"probe": "l2_cold", "label": "aten::native_layer_norm", "dtype": "float32", "dims": {"rows": 4, "cols": 8},
         "seconds": 5e-6},
        {"probe": "l2_warm", "label": "aten::native_layer_norm", "dtype": "float32", "dims": {"rows": 4, "cols": 8},
         "seconds": 4e-6},
        {"probe": "l2_warm", "label": "aten::relu", "dtype": "float32", "dims": {"numel": 64}, "seconds": 1e-6},
    ])
    assert summary["l2_cold_over_warm"] == {"aten::add/bfloat16/1024": 1.5, "aten::native_layer_norm/float32/32": 1.25}


def test_the_training_gemms_are_a_linear_layers_three_and_reduce_over_the_tokens():
    shapes = {label: (m, n, k, layout) for label, m, n, k, layout in gpu_probes.TRAINING_GEMMS}
    for label, hidden, out, tokens in gpu_probes.TRAINING_LAYERS:
        assert shapes[f"{label}_forward"] == (tokens, out, hidden, "nt")
        assert shapes[f"{label}_input_grad"] == (tokens, hidden, out, "nn")
        assert shapes[f"{label}_weight_grad"] == (out, hidden, tokens, "tn")   # k is the tokens
    sweep = sorted(k for label, _, _, k, _ in gpu_probes.TRAINING_GEMMS if label.endswith("_tokens"))
    assert sweep[-1] > 28672 * 2   # beyond any half-precision k the public rows hold on a current GPU
    cases = [c for c in gpu_probes.probe_cases(smoke=False) if c[0] == "training_gemm"]
    assert len(cases) == len(gpu_probes.TRAINING_GEMMS) and all(op.dtype == "bfloat16" for _, _, op, _ in cases)


def test_the_summary_gives_each_training_gemm_its_rate_and_the_predictors_ratio():
    summary = gpu_probes.summarise([
        {"probe": "training_gemm", "label": "x_weight_grad", "dtype": "bfloat16", "seconds": 2e-3, "tflops": 500.0,
         "predicted_s": 1e-3},
        {"probe": "training_gemm", "label": "y_forward", "dtype": "bfloat16", "seconds": 1e-3, "tflops": 700.0,
         "predicted_s": None},
    ])
    assert summary["training_gemms"] == {"x_weight_grad": {"tflops": 500.0, "predicted_over_measured": 0.5},
                                         "y_forward": {"tflops": 700.0, "predicted_over_measured": None}}


def test_each_batch_norm_probe_has_its_three_dtypes_in_both_layouts_and_both_phases():
    cases = [c for c in gpu_probes.probe_cases(smoke=False) if c[0] == "batch_norm"]
    by_label: dict[str, set[str]] = {}
    for _, label, op, _ in cases:
        by_label.setdefault(label, set()).add(op.dtype)
    assert len(by_label) == len(gpu_probes.BATCH_NORMS) * 2 * 2
    assert all(dtypes == set(gpu_probes.BATCH_NORM_DTYPES) for dtypes in by_label.values())
    stem = next(op for _, label, op, _ in cases if label == "stem/nchw/forward" and op.dtype == "float32")
    assert stem.dims == {"rows": 64, "cols": 64 * 112 * 112, "backward": 0}


def test_a_batch_norm_probe_is_priced_as_a_projection_prices_the_captured_op():
    """The probe's op is the capture's fp32 batch norm under autocast: the same rows, columns and bytes."""
    from torch import nn

    from prenet_callbacks import estimate

    with torch.device("meta"):
        module, x = nn.BatchNorm2d(16), torch.randn(4, 16, 6, 6)
    est = estimate(module, x, targets=["H200-SXM"], precision="32-true", loss_fn=lambda y: y.float().sum())
    captured = {s.dims["backward"]: s for unit in est.workload.units for s, _ in unit.ops if s.op_class == "norm"}
    for backward in (False, True):
        probe = gpu_probes.batch_norm_op(4, 16, 6, "float32", backward)
        assert (probe.name, probe.dims, probe.bytes_read, probe.bytes_written, probe.flops) == (
            captured[int(backward)].name, captured[int(backward)].dims, captured[int(backward)].bytes_read,
            captured[int(backward)].bytes_written, captured[int(backward)].flops)
    half = gpu_probes.batch_norm_op(4, 16, 6, "bfloat16", False)
    assert half.dtype == "bfloat16" and half.bytes_written * 2 == captured[0].bytes_written


@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_a_batch_norm_probe_runs_training_mode_with_fp32_weights_and_times_autograds_backward(layout):
    cpu = torch.device("cpu")
    forward = gpu_probes._batch_norm("bfloat16", 2, 4, 3, layout, backward=False)(torch, cpu)
    out = forward()
    assert out.dtype == torch.bfloat16
    assert out.is_contiguous(memory_format=torch.channels_last) == (layout == "channels_last")
    backward = gpu_probes._batch_norm("bfloat16", 2, 4, 3, layout, backward=True)(torch, cpu)
    grad_x, grad_w, grad_b = backward()
    assert grad_x.dtype == torch.bfloat16 and grad_w.dtype == torch.float32 and grad_b.dtype == torch.float32
    assert backward()[0].shape == (2, 4, 3, 3)      # the kept graph runs again


def test_the_summary_gives_each_half_batch_norm_its_time_over_fp32s():
    rows = [{"probe": "batch_norm", "label": "stem/nchw/forward", "dtype": dtype, "seconds": seconds,
             "predicted_s": predicted}
            for dtype, seconds, predicted in (("float32", 2e-4, 2e-4), ("bfloat16", 2e-4, 1e-4), ("float16", 1e-4, 1e-4))]
    assert gpu_probes.summarise(rows)["batch_norm_over_fp32"] == {
        "stem/nchw/forward": {"bfloat16_over_fp32": 1.0, "bf16_predicted_over_measured": 0.5, "float16_over_fp32": 0.5}}
