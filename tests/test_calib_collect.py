"""`prenet collect`: the grid (classes training uses, labels from the real math mode), the timer
(events per call, an L2 flush before each, no synchronise per repeat), the files it writes, and its
errors. The CUDA test runs the real thing where a GPU is present."""
from __future__ import annotations

import json
import types

import pytest
import torch

from predictor_models.collect import CollectError, device_entry, file_stem, write_collection
from predictor_models.collection.cases import cases, math_flags
from predictor_models.collection.timer import time_op
from predictor_models.datasets import read_rows
from predictor_models.datasets.common import Sample
from predictor_models.hardware import DeviceInfo, load_catalog
from predictor_models.predictor import load_predictor


def test_grid_has_only_trained_classes_spread_over_sizes():
    grid = cases(["float32", "bfloat16"], {"matmul_tf32": False, "cudnn_tf32": True}, quick=True)
    trained = set(load_predictor().models)
    assert {c.op.op_class for c in grid} == trained == {"gemm", "conv", "norm", "elementwise"}
    assert 80 <= len(grid) <= 130                                  # --quick: about a minute
    assert len(cases(["float32"], {"matmul_tf32": False, "cudnn_tf32": True})) > 200   # full grid
    flops = sorted(c.op.flops for c in grid if c.op.op_class == "gemm")
    assert flops[-1] / flops[0] > 1e4                              # sizes spread over orders of magnitude
    assert cases(["float32"], {"matmul_tf32": True, "cudnn_tf32": False}, quick=True)[0].op == \
        cases(["float32"], {"matmul_tf32": True, "cudnn_tf32": False}, quick=True)[0].op   # fixed seed


@pytest.mark.parametrize("matmul_tf32, cudnn_tf32", [(False, True), (True, False)])
def test_labels_follow_the_math_flags(matmul_tf32, cudnn_tf32):
    grid = cases(["float32", "bfloat16"], {"matmul_tf32": matmul_tf32, "cudnn_tf32": cudnn_tf32}, quick=True)
    for case in grid:
        if case.op.dtype == "bfloat16" or case.op.op_class in ("norm", "elementwise"):
            assert not case.op.tf32
        elif case.op.op_class == "gemm":
            assert case.op.tf32 == matmul_tf32
        else:
            assert case.op.tf32 == cudnn_tf32


def test_math_flags_read_torch():
    fake = types.SimpleNamespace(backends=types.SimpleNamespace(
        cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=True)),
        cudnn=types.SimpleNamespace(allow_tf32=False)))
    assert math_flags(fake) == {"matmul_tf32": True, "cudnn_tf32": False}
    assert math_flags(torch) == {"matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
                                 "cudnn_tf32": torch.backends.cudnn.allow_tf32}


def test_cases_build_and_run_on_cpu():
    """Every builder makes inputs that its op accepts (tiny shapes stand in for the GPU grid)."""
    grid = cases(["float32"], {"matmul_tf32": False, "cudnn_tf32": True}, quick=True)
    for kind in ("gemm", "conv", "norm", "elementwise"):
        case = min((c for c in grid if c.op.op_class == kind), key=lambda c: c.op.flops + c.op.bytes_moved)
        out = case.build(torch, "cpu")()
        assert torch.is_tensor(out) and out.numel() * 4 == case.op.bytes_written, case.op


class FakeBackend:
    """Records the order of calls; each event reads a simulated device clock."""

    def __init__(self, op_ms=0.5):
        self.log, self.now, self.op_ms = [], 0.0, op_ms

    def event(self):
        backend = self

        class Event:
            def record(self):
                backend.log.append("record")
                self.at = backend.now

            def elapsed_time(self, other):
                return other.at - self.at
        return Event()

    def synchronize(self):
        self.log.append("sync")

    def flush(self):
        self.log.append("flush")
        self.now += 0.1

    def run(self):
        self.log.append("op")
        self.now += self.op_ms


def test_timer_flushes_before_every_call_and_synchronises_once_per_batch():
    backend = FakeBackend(op_ms=0.5)
    timing = time_op(backend.run, backend, budget_ms=10, max_repeats=50)
    assert timing.seconds == pytest.approx(0.5e-3) and timing.repeats == 20
    assert backend.log.count("sync") == 2                          # the estimate, then the timed batch
    calls = backend.log.count("op")
    assert calls == 1 + 5 + 20 and backend.log.count("flush") == calls - 1     # every timed call starts cold
    timed = backend.log[backend.log.index("sync") + 1:]
    assert timed[:4] == ["flush", "record", "op", "record"]


def test_unknown_gpu_without_figures_is_a_clear_error():
    info = DeviceInfo("cuda", "NVIDIA Mystery", 1, None, 12.0, 8, 0)
    with pytest.raises(CollectError, match="not in the hardware catalog.*--catalog FILE"):
        device_entry(info)
    with pytest.raises(CollectError, match="cpu"):
        device_entry(DeviceInfo("cpu", "x", 1, None, None, 8))


def test_written_files_read_back_and_a_detected_gpu_gets_its_override(tmp_path):
    from predictor_models.datasets.common import gemm_op
    from predictor_models.hardware.detected import detected_accelerator

    entry = detected_accelerator("NVIDIA Imaginary/X2", {"sm_count": 60, "major": 8, "minor": 9, "memory_bytes": 24 * 2**30,
                                                         "memory_clock_mhz": 10501, "bus_width_bits": 192,
                                                         "clock_mhz": 2500})
    samples = [Sample(gemm_op(1, 64 * i, 64, 64, "float32"), entry.name, 1e-5 * i, "collect") for i in range(1, 4)]
    path = write_collection(tmp_path, entry, samples, {"rows": 3})
    assert path.name == f"{file_stem(entry.name)}.csv" == "NVIDIA_Imaginary_X2.csv"
    assert [s.seconds for s in read_rows([tmp_path])] == [s.seconds for s in samples]
    assert json.loads((tmp_path / "NVIDIA_Imaginary_X2.json").read_text()) == {"rows": 3}
    assert load_catalog(tmp_path / "hardware.toml").lookup(entry.name).sm_count == 60
    assert not list(tmp_path.glob(".*.tmp"))


def test_collect_without_cuda_exits_2(tmp_path, capsys, monkeypatch):
    from prenet_callbacks.cli import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["collect", "--out", str(tmp_path / "rows"), "--quick"]) == 2
    err = capsys.readouterr().err
    assert "no CUDA device" in err and len(err.strip().splitlines()) == 1
    assert main(["collect", "--out", str(tmp_path / "rows"), "--dtypes", "int8"]) == 2
    assert "--dtypes" in capsys.readouterr().err and not (tmp_path / "rows").exists()


@pytest.mark.cuda
def test_collect_quick_on_the_gpu_then_calibrate(tmp_path):
    if not torch.cuda.is_available():
        print("skipped: no CUDA device (torch.cuda.is_available() is False)")
        pytest.skip("no CUDA device")
    from predictor_models.calibration import calibrate_rows
    from predictor_models.collect import collect

    path = collect(tmp_path / "rows", quick=True, budget_ms=5)
    rows = read_rows([path])
    meta = json.loads(path.with_suffix(".json").read_text())
    assert len(rows) >= 80 and meta["math"] == math_flags(torch) and meta["rows"] == len(rows)
    assert all(s.seconds > 0 for s in rows) and {s.op.op_class for s in rows} == {"gemm", "conv", "norm", "elementwise"}
    # device time with a cold cache: a 4096^3 bf16 GEMM is well above launch latency, tiny adds are microseconds
    calibrated = calibrate_rows(tmp_path / "rows", tmp_path / "cal")
    assert calibrated.summary["rows_used"] == len(rows) and (tmp_path / "cal" / "predictor.json").is_file()
