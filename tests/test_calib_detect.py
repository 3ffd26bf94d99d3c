"""GPU detection: a GPU the catalog lacks gets an entry from the driver's figures (fake property
objects here), usable by the predictor, resolvable by name, and printable by `prenet hardware --detect`."""
from __future__ import annotations

import types

import numpy as np
import pytest
import torch

from predictor_models.hardware import current_device, load_catalog, lookup_hardware
from predictor_models.hardware.detected import detected_accelerator, driver_figures, to_toml

GIB = 1024 ** 3


def _props(**over):
    """Driver properties shaped like an H100 SXM's (CUDA 12 still reports the SM clock)."""
    base = dict(name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=132, total_memory=80 * GIB,
                L2_cache_size=50 * 2**20, clock_rate=1_980_000, memory_clock_rate=2_619_000, memory_bus_width=5120,
                uuid="0f3c-fake")
    base.update(over)
    return types.SimpleNamespace(**base)


def test_figures_of_a_known_gpu_come_close_to_its_catalog_entry():
    entry = detected_accelerator("Mystery H100", driver_figures(_props()))
    h100 = lookup_hardware("H100-SXM5")
    assert entry.detected and entry.sm_count == 132 and entry.compute_capability == "9.0"
    assert entry.memory_bandwidth_gbs == pytest.approx(h100.memory_bandwidth_gbs, rel=0.01)
    assert entry.fp32_tflops == pytest.approx(h100.fp32_tflops, rel=0.01)       # 132 SMs x 1980 MHz x 256
    assert entry.bf16_tflops == pytest.approx(h100.bf16_tflops, rel=0.10)       # datasheet assumes 1830 MHz
    assert entry.tf32_tflops == pytest.approx(entry.bf16_tflops / 2)
    assert entry.l2_cache_mb == pytest.approx(50) and set(entry.estimated) >= {"fp32", "bf16"}


@pytest.mark.parametrize("name, major, minor, sms, clock_khz, expect_fp16, unsupported", [
    ("Tesla T4 clone", 7, 5, 40, 1_590_000, 65.1, {"tf32", "bf16", "fp8"}),
    ("NVIDIA GeForce RTX 4090 clone", 8, 9, 128, 2_520_000, 165.2, set()),   # GeForce: FP32-accumulate half rate
    ("Tesla P100 clone", 6, 0, 56, 1_480_000, 21.2, {"tf32", "bf16", "fp8"}),  # packed FP16, 2x FP32
    ("Tesla P4 clone", 6, 1, 20, 1_114_000, None, {"tf32", "bf16", "fp8", "fp16"}),
])
def test_rates_follow_the_architecture(name, major, minor, sms, clock_khz, expect_fp16, unsupported):
    entry = detected_accelerator(name, driver_figures(_props(major=major, minor=minor, multi_processor_count=sms,
                                                             clock_rate=clock_khz)))
    if expect_fp16 is None:
        assert entry.fp16_tflops is None
    else:
        assert entry.fp16_tflops == pytest.approx(expect_fp16, rel=0.01)
    assert set(entry.unsupported) == unsupported
    assert entry.supports("float32") and entry.supports("bfloat16") == ("bf16" not in unsupported)


def test_nvml_figures_win_and_missing_ones_leave_no_entry():
    figures = driver_figures(_props(clock_rate=0))      # CUDA 13 drops the SM clock from the properties
    entry = detected_accelerator("X", figures)
    assert "1500 MHz assumed" in entry.notes and entry.boost_clock_mhz == 1500
    entry = detected_accelerator("X", figures, {"clock_mhz": 1755.0, "tdp_w": 400.0})
    assert entry.boost_clock_mhz == 1755 and entry.tdp_w == 400 and "NVML" in entry.notes
    assert detected_accelerator("X", driver_figures(types.SimpleNamespace(total_memory=GIB))) is None  # no SMs
    assert detected_accelerator("X", driver_figures(_props(major=3, minor=5))) is None                # Kepler
    assert detected_accelerator("X", driver_figures(_props(memory_bus_width=0))) is None               # no bandwidth


def test_a_detected_entry_round_trips_through_an_override_file(tmp_path):
    entry = detected_accelerator("NVIDIA RTX PRO 9000 Imaginary", driver_figures(_props(major=12, minor=0)))
    path = tmp_path / "hardware.toml"
    path.write_text(to_toml(entry))
    loaded = load_catalog(path).lookup("NVIDIA RTX PRO 9000 Imaginary")
    for key in ("memory_bandwidth_gbs", "sm_count", "fp32_tflops", "bf16_tflops", "tf32_tflops", "fp8_tflops",
                "l2_cache_mb", "compute_capability"):
        assert getattr(loaded, key) == getattr(entry, key), key
    from predictor_models.datasets.common import gemm_op
    from predictor_models.predictor import load_predictor

    times = load_predictor().predict_matrix([gemm_op(1, 4096, 4096, 4096, "bfloat16")], [entry, loaded])
    assert np.all(np.isfinite(times)) and times[0, 0] == pytest.approx(times[0, 1])


@pytest.fixture
def fake_gpus(monkeypatch):
    """Two visible GPUs: 0 is an H100 the catalog knows, 1 a GPU it does not."""
    names = {0: "NVIDIA H100 80GB HBM3", 1: "NVIDIA Imaginary X1"}
    props = {0: _props(), 1: _props(name=names[1], multi_processor_count=100, total_memory=48 * GIB)}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: names[index])
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index=0: props[index])
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    return names


def test_current_device_describes_the_device_asked_for(fake_gpus):
    first = current_device()
    assert (first.kind, first.index, first.accelerator.name, first.detected) == ("cuda", 0, "H100-SXM5", False)
    other = current_device(device="cuda:1")
    assert other.index == 1 and other.name == fake_gpus[1] and other.detected
    assert other.accelerator.sm_count == 100 and other.memory_gb == pytest.approx(48)
    assert lookup_hardware(fake_gpus[1]) is other.accelerator          # registered for this process
    cpu = current_device(device="cpu")
    assert cpu.kind == "cpu" and cpu.accelerator is None and cpu.index is None
    assert current_device(device=torch.device("cuda", 0)).accelerator.name == "H100-SXM5"


def test_hardware_detect_prints_the_entry_and_its_override_file(fake_gpus, capsys):
    from prenet_callbacks.cli import main

    assert main(["hardware", "--detect", "--device", "cuda:1"]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA Imaginary X1" in out and "detected from the driver" in out and "[[accelerator]]" in out
    assert main(["hardware", "--detect", "--json"]) == 0
    assert '"catalog_name": "H100-SXM5"' in capsys.readouterr().out
    assert main(["hardware", "--device", "cuda:1"]) == 2
    assert "--detect" in capsys.readouterr().err


def test_detect_on_a_cpu_machine(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    from prenet_callbacks.cli import main

    assert main(["hardware", "--detect"]) == 0
    assert "no GPU visible" in capsys.readouterr().out
