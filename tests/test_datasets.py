"""Data loaders: tiny synthetic files in each source's layout (no shared data needed), row CSV round trip."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from predictor_models.datasets import LoadReport, Sample, load_all, read_rows, write_rows
from predictor_models.datasets import neusight, vidur, xla_tables
from predictor_models.datasets.common import gemm_op
from predictor_models.datasets.neusight_labels import node_ops

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _write(path: Path, header: list[str], rows: list[list]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(header)
        w.writerows(rows)


def test_row_csv_round_trip_and_bad_rows(tmp_path):
    op = gemm_op(2, 64, 32, 16, "bfloat16", name="aten::bmm")
    write_rows(tmp_path / "a.csv", [Sample(op, "H100-SXM5", 1.5e-5, "collect")])
    with open(tmp_path / "a.csv", "a") as handle:
        handle.write("H100-SXM5,collect,gemm,x,float32,0,notanumber,1,1,{},1\n")
        handle.write("H100-SXM5,collect,nosuchclass,x,float32,0,1,1,1,{},1\n")
    report = LoadReport("extra")
    got = read_rows([tmp_path], report)
    assert len(got) == 1 and got[0].op == op and got[0].op.dims == op.dims and got[0].seconds == 1.5e-5
    assert sum(report.excluded.values()) == 2


def test_read_rows_rejects_foreign_csv(tmp_path):
    _write(tmp_path / "x.csv", ["a", "b"], [[1, 2]])
    with pytest.raises(ValueError, match="not a prenet row CSV"):
        read_rows([tmp_path / "x.csv"])


def test_neusight_layout(tmp_path):
    base = tmp_path / "neusight" / "data" / "dataset"
    head = ["OPName", "Latency", "Device", "B", "M", "N", "K"]
    rows = [["bmm", 0.05, "Tesla T4", 2, 64, 32, 16], ["bmm", 0.05, "Tesla T4", 2, 64, 32, 16],
            ["linear", 0.1, "Tesla T4", 4, 128, 256, 512], ["bmm", -1, "Tesla T4", 1, 1, 1, 1]]
    _write(base / "train" / "collect" / "bmm" / "p2.1.0" / "Tesla T4.csv", head, rows)
    _write(base / "test" / "ln.csv", ["OPName", "Latency", "Device", "B", "H"], [["ln", 0.02, "NVIDIA L4", 128, 768]])
    samples, report = neusight.load(tmp_path)
    assert [s.op.op_class for s in samples] == ["gemm", "gemm", "norm"]
    bmm, linear = samples[0].op, samples[1].op
    assert bmm.dims == {"b": 2, "m": 64, "n": 16, "k": 32} and bmm.flops == 2 * 2 * 64 * 16 * 32
    assert linear.dims == {"b": 1, "m": 512, "n": 512, "k": 256}   # input [B, M, N] @ Linear(N, K)
    assert report.excluded["duplicate of a row already loaded"] == 1
    assert report.excluded["non-positive latency"] == 1
    assert samples[0].seconds == pytest.approx(5e-5)


def test_xla_and_vidur_layouts(tmp_path):
    _write(tmp_path / "xla_gpu_perf_tables" / "xla_matmul_perf_table_DERIVED.csv",
           ["device_key", "b", "m", "n", "k", "dtype", "flops_per_sec", "derived_time_us"],
           [["sm_90", 1, 256, 256, 256, "f32xf32->f32", 1e14, 0], ["sm_90", 1, 256, 256, 256, "f8e4m3fnxf8e4m3fn->bf16", 1e15, 0]])
    samples, report = xla_tables.load(tmp_path)
    assert len(samples) == 1 and samples[0].op.tf32 and samples[0].device == "H100-SXM5"
    assert samples[0].seconds == pytest.approx(2 * 256**3 / 1e14)
    ops = ["emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
           "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"]
    head = [f"time_stats.{o}.median" for o in ops] + ["n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size",
                                                     "use_gated_mlp", "num_tokens", "num_tensor_parallel_workers"]
    _write(tmp_path / "vidur" / "data" / "profiling" / "compute" / "a100" / "org" / "model" / "mlp.csv", head,
           [[0.1] * len(ops) + [32, 8, 4096, 14336, 32000, "True", 512, 2]])
    samples, report = vidur.load(tmp_path)
    qkv = [s.op for s in samples if s.op.op_class == "gemm"][0]
    assert qkv.dims == {"b": 1, "m": 512, "n": (32 + 16) * 128 / 2, "k": 4096}
    assert {s.op.op_class for s in samples} == {"gemm", "norm", "elementwise"}


def test_load_all_reports_missing_sources(tmp_path):
    samples, reports = load_all(tmp_path, ("neusight", "xla"))
    assert samples == [] and all(r.notes and "not loaded" in r.notes[-1] for r in reports)
    with pytest.raises(ValueError, match="unknown data source"):
        load_all(tmp_path, ("nope",))


def test_label_node_linear_backward_is_two_transposed_gemms():
    row = {"op": "call_function", "target": "<built-in method addmm of type object at 0x1>", "Name": "addmm",
           "fw_latency": "0.9", "bw_latency": "1.7", "input_shapes": "[[3840], [4096, 1280], [1280, 3840]]",
           "output_shape": "(4096, 3840)"}
    node = node_ops(row)
    assert node.kind == "gemm" and node.forward[0].dims == {"b": 1, "m": 4096, "n": 3840, "k": 1280}
    dims = [op.dims for op in node.backward if op.op_class == "gemm"]
    assert dims == [{"b": 1, "m": 4096, "n": 1280, "k": 3840}, {"b": 1, "m": 1280, "n": 3840, "k": 4096}]
    host = node_ops({**row, "op": "call_method", "target": "view"})
    assert host.kind == "host" and not host.forward


def test_shared_data_loads_when_present():
    if not (SHARED / "neusight").is_dir():
        print(f"skipped: shared data not found at {SHARED}")
        pytest.skip(f"shared data not found at {SHARED}")
    samples, reports = load_all(SHARED, ("xla",))
    assert len(samples) == 1500 and reports[0].excluded
