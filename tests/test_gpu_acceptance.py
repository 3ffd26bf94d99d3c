"""The GPU acceptance script runs green on a machine without a GPU (its CPU part, small sizes).

On a GPU it is run by hand (see benchmarks/gpu_acceptance.py); here it must keep working, say what
it skipped and why, and produce every figure its CPU part can.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the full acceptance run is the check")
def test_acceptance_cpu_part_runs_and_says_what_it_skipped(tmp_path):
    out = tmp_path / "acceptance.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "benchmarks/gpu_acceptance.py", "--smoke", "--out", str(out),
                           "--work", str(tmp_path / "work"), "--skip", "cuda_tests", "--fit-seconds", "1"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["smoke"] and set(result["skipped"]) == {"demo", "collect", "cuda_tests"}
    assert "CUDA" in result["skipped"]["collect"]
    fits = result["parts"]["fits"]
    assert [f["fit"] for f in fits] == ["cnn_32_true", "transformer_bf16_mixed",
                                        "transformer_accumulate_step_checkpoints"]
    for fit in fits:
        assert fit["first_prediction_error"] is not None and fit["coverage"]["modules_s"] > 0
        assert fit["timing"]["clock"] == "cpu" and fit["wall_without_s"] > 0
        assert fit["coverage"]["step_source"] == "clean steps" and len(fit["pace_ms"]) == 8
    assert {row["precision"] for row in result["parts"]["estimate"]} == {"32-true", "bf16-mixed"}
    assert result["summary"]["fits"]["first_error_median"] is not None
    assert set(result["parts"]["host_issue"]["ratio_to_constants"]) == {"cpu_tensors_32-true", "cpu_tensors_bf16-mixed"}
    assert len(result["parts"]["probes"]["summary"]["misaligned_slowdown_per_flop"]) == 8   # 4 GEMMs x 2 dtypes


def test_op_table_lists_each_op_by_shape_with_its_time():
    """The acceptance run's per-op table (on a GPU: self device time; here self CPU time) for one step."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.gpu_acceptance import _profiled, op_table

    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    x = torch.randn(32, 64)

    def step() -> None:
        model(x).sum().backward()

    rows = op_table(_profiled(step, shapes=True))
    timing = "self_device_us" if torch.cuda.is_available() else "self_cpu_us"
    assert rows and all(r["op"].startswith("aten::") and r["calls"] >= 1 and r[timing] > 0 for r in rows)
    assert [r[timing] for r in rows] == sorted((r[timing] for r in rows), reverse=True)
    addmm = {tuple(tuple(s) for s in r["shapes"][:3]) for r in rows if r["op"] == "aten::addmm"}
    assert addmm == {((128,), (32, 64), (64, 128)), ((8,), (32, 128), (128, 8))}   # the two Linears, apart


def test_host_issue_times_each_op_against_the_constants_the_projection_assumes():
    """The per-op host cost on this machine's tensors, fp32 and under bf16 autocast (more ops: the casts), beside
    `measure_host_costs` and as ratios to `host_constants.json`."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.gpu_acceptance import host_issue

    threads = torch.get_num_threads()
    out = host_issue(torch.device("cpu"), repeats=2)
    assert torch.get_num_threads() == threads
    fp32, bf16 = out["cpu_tensors_32-true"], out["cpu_tensors_bf16-mixed"]
    assert bf16["fwd_ops"] > fp32["fwd_ops"] > 0 and fp32["bwd_ops"] > 0
    assert all(v[k] > 0 for v in (fp32, bf16) for k in ("fwd_op_s", "bwd_op_s", "aten_add_s"))
    assert out["constants"]["launch_s"] > 0 and out["cpu_tensors"]["aten_op_s"] > 0
    ratio = out["ratio_to_constants"]["cpu_tensors_32-true"]
    assert ratio["fwd_op"] == round(fp32["fwd_op_s"] / out["constants"]["fwd_op_s"], 3)   # no launch on a CPU
