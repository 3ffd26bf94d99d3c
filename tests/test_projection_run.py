"""Whole-run projection from a report: every part scales, one memory account, both batch conventions,
prenet-report/2 names, the recommendation and the work the rows describe."""
from __future__ import annotations

import pytest

from prenet_callbacks.projection import project_report
from prenet_callbacks.projection.rows.memory import FRAGMENTATION, GIB
from tests.projection_fixtures import ScaledBound, make_report


@pytest.fixture
def predictor():
    return ScaledBound()


ROW_KEYS = {"name", "label", "devices", "nodes", "current", "step_s", "step_low_s", "step_high_s", "relative_error",
            "steps", "total_s", "total_low_s", "total_high_s", "speedup", "usd_per_gpu_hour", "usd_per_hour",
            "total_usd", "price_date", "fits_memory", "memory_gib", "memory_capacity_gib", "max_batch",
            "batch_per_device", "global_batch", "batch_convention", "method", "phases_s", "comm_s", "comm_exposed_s",
            "communication", "host_bound", "unmodelled_share", "precision", "precision_note", "assumed", "notes"}


def test_rows_use_report2_names(predictor):
    report = make_report()
    rows = project_report(report, ["H100", "2x8 H100"], predictor=predictor)
    for row in rows:
        assert ROW_KEYS <= set(row), ROW_KEYS - set(row)
        assert set(row["assumed"]) >= {"attention", "optimizer", "compile"}
    assert isinstance(rows[1]["steps"], int)
    rec = report.recommendation
    assert set(rec) == {"text", "fastest", "cheapest", "best_value", "stay"}
    assert rec["fastest"] in {r["label"] for r in rows}
    assert report.projection["work"] == {"steps": 10_000, "done_steps": 0}   # no steps before this fit
    assert report.projection["batch_convention"] == "per_device"


def test_cpu_measured_validation_scales_to_the_gpu(predictor):
    """The README's demo panel kept CPU-speed validation on an A100: validation must scale like the forward."""
    report = make_report(device="cpu")
    for layer in report.measured["layers"]["layers"]:          # a CPU 100x slower than the fixture's
        for key in ("forward_s", "backward_s", "optimizer_s"):
            layer[key] = layer[key] * 100
        for op in layer["ops"]:
            op["seconds_per_step"] *= 100
    report.predictions[-1]["step_s"] = 6.0
    a100 = project_report(report, ["A100"], predictor=predictor)[1]
    validation = a100["total_s"] - 40.0 - a100["steps"] * a100["step_s"]   # setup 30 s + checkpoints 10 s stay
    # the CPU forward took ~2 s per step (ops 1.6 s + its Python 0.44 s); on the A100 the kernels take 0.1 s
    # and the same Python 0.44 s: validation shrinks about 4.5x, it does not stay at CPU speed
    assert 0 < validation < 20.0 * 0.3


def test_batch_conventions(predictor):
    report = make_report(batch_size=32)
    per_device = project_report(report, ["8x H100"], predictor=predictor)[1]
    assert per_device["batch_per_device"] == 32 and per_device["global_batch"] == 256 and per_device["steps"] == 1250
    global_ = project_report(report, ["8x H100"], predictor=predictor, batch_convention="global")[1]
    assert global_["batch_per_device"] == 4 and global_["global_batch"] == 32 and global_["steps"] == 10_000
    assert global_["batch_convention"] == "global" and global_["step_s"] < per_device["step_s"]
    assert report.projection["batch_convention"] == "global"
    with pytest.raises(ValueError, match=r"global batch 32.*3 GPUs"):
        project_report(report, ["3x H100"], predictor=predictor, batch_convention="global")
    with pytest.raises(ValueError, match="per_device"):
        project_report(report, ["H100"], predictor=predictor, batch_convention="local")
    with pytest.raises(ValueError, match="batch size"):
        project_report(make_report(batch_size=None), ["2x H100"], predictor=predictor, batch_convention="global")


def test_memory_counts_each_part_once(predictor):
    account = {"device": "cuda", "peak_allocated_bytes": 30 * GIB, "params_bytes": 4 * GIB, "grads_bytes": 4 * GIB,
               "optimizer_bytes": 8 * GIB, "activations_bytes": 14 * GIB, "sharding": "none", "world": 1}
    report = make_report(memory=account)
    h100 = project_report(report, ["H100"], predictor=predictor)[1]
    expected = (4 + 4 + 8 + 14) * GIB * FRAGMENTATION   # the allocations; the reserve is out of memory_usable_gib
    assert h100["memory_gib"] == pytest.approx(expected / GIB, abs=0.01)


def test_zero3_answers_does_it_fit_on_8x_l4(predictor):
    gib = GIB
    account = {"device": "cuda", "peak_allocated_bytes": 70 * gib, "params_bytes": 14 * gib, "grads_bytes": 14 * gib,
               "optimizer_bytes": 28 * gib, "activations_bytes": 6 * gib, "sharding": "none", "world": 1}
    report = make_report(memory=account, precision="bf16-mixed")
    plain = project_report(report, ["8x L4"], predictor=predictor)[1]
    zero3 = project_report(report, ["8x L4"], predictor=predictor, sharding="zero3")[1]
    assert plain["fits_memory"] is False and zero3["fits_memory"] is True
    assert zero3["assumed"]["sharding"] == "ZeRO-3" and "all-gather" in zero3["communication"]
    fsdp = project_report(report, ["8x L4"], predictor=predictor, sharding="fsdp")[1]
    assert fsdp["fits_memory"] is True and "FSDP" in fsdp["communication"]


def test_cpu_run_optimizer_becomes_foreach_on_gpus(predictor):
    # a CPU run's for-loop Adam over the fixture's 4 x 4096^2 parameters: 8 tensors, 8 kernels each
    numel = 4 * 4096 * 4096 / 8
    forloop = [{"name": f"aten::op{i}", "count_per_step": 8, "seconds_per_step": 0.05, "phase": "opt",
                "spec": {"op_class": "optimizer", "dtype": "float32", "flops": numel, "bytes_read": 8 * numel,
                         "bytes_written": 4 * numel, "dims": {"numel": numel, "kind": 2}, "tf32": False}}
               for i in range(8)]
    report = make_report(device="cpu", optimizer_ops=forloop)
    row = project_report(report, ["H100"], predictor=predictor)[1]
    assert row["assumed"]["optimizer"] == "adamw (foreach)"
    named = project_report(report, ["H100"], predictor=predictor, optimizer_impl="forloop")[1]
    assert named["assumed"]["optimizer"] == "adamw (forloop)"
    assert row["step_s"] < named["step_s"]          # 9 multi-tensor kernels, not 64 single-tensor ones


def test_time_limited_prediction_projects_the_steps_that_fit(predictor):
    report = make_report()
    report.predictions[-1].update({"time_limited": True, "steps": 4000})
    row = project_report(report, ["H100"], predictor=predictor)[1]
    assert row["steps"] == 4000 and report.projection["work"]["steps"] == 4000


def test_an_optimizer_it_does_not_know_keeps_its_measured_kernels(predictor):
    report = make_report(device="cpu")
    report.current["optimizer"] = "DeepSpeedZeroOptimizer"
    row = project_report(report, ["H100"], predictor=predictor)[1]
    assert row["assumed"]["optimizer"].endswith("(as measured)") and row["step_s"] > 0


def test_resumed_run_rows_cover_the_whole_run(predictor):
    report = make_report()
    report.run["start_step"] = 4000
    rows = project_report(report, ["H100"], predictor=predictor)
    assert report.projection["work"] == {"steps": 10_000, "done_steps": 4000}
    assert rows[1]["steps"] == 10_000
    assert rows[0]["total_s"] == pytest.approx(660.0 + 4000 * 0.06)   # the current row adds the steps run before
