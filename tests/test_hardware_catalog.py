"""Catalog contents, peak FLOP/s semantics, prices, override files and device detection."""
from __future__ import annotations

import textwrap
import types
import warnings
from pathlib import Path

import pytest
import torch

import prenet_callbacks
from predictor_models.hardware import (
    Accelerator,
    HardwareCatalogError,
    MissingFigureError,
    Price,
    UnsupportedPrecisionError,
    builtin_catalog,
    current_device,
    default_catalog,
    list_hardware,
    load_catalog,
    lookup_hardware,
    price_table_date,
)
from predictor_models.hardware import catalog as catalog_module


@pytest.fixture(autouse=True)
def _no_user_override(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own $PRENET_HARDWARE must not change what these tests see."""
    monkeypatch.delenv("PRENET_HARDWARE", raising=False)


T = 1e12


# ---- contents ------------------------------------------------------------------------------------
def test_catalog_is_large_and_every_entry_is_sourced() -> None:
    entries = list(builtin_catalog())
    assert len(entries) >= 40
    assert len({e.name for e in entries}) == len(entries)
    for e in entries:
        assert e.sources and all(s.startswith("http") for s in e.sources), e.name
        assert e.memory_gb > 0 and e.memory_bandwidth_gbs > 0, e.name
        assert e.kind in ("gpu", "tpu")
    vendors = {e.vendor for e in entries}
    assert vendors == {"NVIDIA", "AMD", "Google"}
    names = {e.name for e in entries}
    for needed in ("K80", "P4", "P100-PCIe-16GB", "H100-SXM5", "H200-SXM", "GH200-96GB", "B200", "TITAN Xp",
                   "RTX 2080 Ti", "RTX 3090", "RTX 4090", "RTX 5090", "RTX A6000", "RTX 6000 Ada", "MI100", "MI325X"):
        assert needed in names


# A dozen well-known datasheet figures (dense, no sparsity), in the units the catalog stores.
PINNED = [
    ("H100 SXM5", "bf16_tflops", 989.4),     # NVIDIA: 1979 with sparsity
    ("H100 SXM5", "memory_bandwidth_gbs", 3350),
    ("H100 PCIe", "bf16_tflops", 756),
    ("A100-SXM4-80GB", "memory_bandwidth_gbs", 2039),
    ("A100-SXM4-40GB", "memory_bandwidth_gbs", 1555),
    ("A100", "tf32_tflops", 156),
    ("A100", "fp32_tflops", 19.5),
    ("V100-SXM2-16GB", "fp16_tflops", 125),
    ("V100 PCIe 32GB", "fp16_tflops", 112),
    ("H200", "memory_gb", 141),
    ("H200", "memory_bandwidth_gbs", 4800),
    ("T4", "fp16_tflops", 65),
    ("T4", "fp32_tflops", 8.1),
    ("L4", "bf16_tflops", 121),
    ("L40S", "bf16_tflops", 362.05),
    ("RTX 4090", "fp16_tflops", 165.2),      # FP32 accumulate (FP16 accumulate is 330.3)
    ("RTX 3090", "memory_bandwidth_gbs", 936),
    ("MI300X", "bf16_tflops", 1307.4),
    ("MI300X", "memory_gb", 192),
    ("MI250X", "memory_bandwidth_gbs", 3276.8),
    ("B200", "bf16_tflops", 2250),
    ("TPU v4", "bf16_tflops", 275),
]


@pytest.mark.parametrize("name, field, value", PINNED)
def test_pinned_datasheet_figures(name: str, field: str, value: float) -> None:
    assert getattr(lookup_hardware(name), field) == pytest.approx(value, rel=1e-3)


# ---- peak FLOP/s ---------------------------------------------------------------------------------
def test_peak_flops_accepts_torch_dtypes_and_names() -> None:
    h100 = lookup_hardware("h100")
    for dtype in (torch.bfloat16, "bfloat16", "bf16", "torch.bfloat16"):
        assert h100.peak_flops(dtype) == pytest.approx(989.5 * T)
    for dtype in (torch.float16, "half", "fp16", "float16"):
        assert h100.peak_flops(dtype) == pytest.approx(989.5 * T)
    assert h100.peak_flops(torch.float32) == pytest.approx(67 * T)
    assert h100.peak_flops(torch.float32, tf32=True) == pytest.approx(494.5 * T)
    assert h100.peak_flops("tf32") == pytest.approx(494.5 * T)
    assert h100.peak_flops(torch.float8_e4m3fn) == pytest.approx(1979 * T)
    assert h100.peak_flops(torch.float64) == pytest.approx(34 * T)


def test_tf32_on_device_without_tf32_gives_fp32() -> None:
    v100 = lookup_hardware("v100")
    assert v100.peak_flops(torch.float32, tf32=True) == v100.peak_flops(torch.float32) == pytest.approx(15.7 * T)


# FP32 GEMMs on AMD CDNA1/CDNA2 matrix cores: twice the vector rate (ROCm MI100/MI250 docs, AMD MI210 table).
FP32_MATRIX = [("MI100", 46.1, 23.1), ("MI210", 45.3, 22.6), ("MI250", 90.5, 45.3), ("MI250-GCD", 45.25, 22.65),
               ("MI250X", 95.7, 47.9), ("MI250X-GCD", 47.85, 23.95)]


@pytest.mark.parametrize("name, matrix, vector", FP32_MATRIX)
def test_fp32_matrix_peak_on_cdna(name: str, matrix: float, vector: float) -> None:
    entry = lookup_hardware(name)
    assert entry.fp32_matrix_tflops == pytest.approx(matrix, rel=1e-3)
    assert entry.peak_flops(torch.float32, matrix=True) == pytest.approx(matrix * T, rel=1e-3)
    assert entry.peak_flops(torch.float32) == pytest.approx(vector * T, rel=1e-3)  # vector rate unchanged
    assert entry.peak_flops(torch.float32, tf32=True, matrix=True) == pytest.approx(matrix * T, rel=1e-3)
    assert entry.peak_flops(torch.bfloat16, matrix=True) == entry.peak_flops(torch.bfloat16)
    assert entry.to_dict()["fp32_matrix_tflops"] == entry.fp32_matrix_tflops


def test_fp32_matrix_is_unchanged_behaviour_elsewhere() -> None:
    h100, mi300x = lookup_hardware("h100"), lookup_hardware("MI300X")
    assert h100.fp32_matrix_tflops is None and mi300x.fp32_matrix_tflops is None
    assert h100.peak_flops(torch.float32, matrix=True) == h100.peak_flops(torch.float32) == pytest.approx(67 * T)
    assert h100.peak_flops(torch.float32, tf32=True, matrix=True) == pytest.approx(494.5 * T)
    assert mi300x.peak_flops(torch.float32, matrix=True) == mi300x.peak_flops(torch.float32)
    with pytest.raises(MissingFigureError):
        lookup_hardware("TPU v4").peak_flops(torch.float32, matrix=True)


def test_bf16_on_v100_raises_a_clear_error() -> None:
    v100 = lookup_hardware("V100")
    with pytest.raises(UnsupportedPrecisionError, match="V100-SXM2-16GB has no BF16 support"):
        v100.peak_flops(torch.bfloat16)
    assert not v100.supports(torch.bfloat16)
    assert v100.supports(torch.float16)
    assert not lookup_hardware("A100").supports("fp8")


def test_fp16_without_tensor_cores() -> None:
    assert lookup_hardware("P100 PCIe").peak_flops(torch.float16) == pytest.approx(18.7 * T)  # packed FP16
    p40 = lookup_hardware("P40")
    assert p40.peak_flops(torch.float16) == p40.peak_flops(torch.float32)  # cuBLAS computes in fp32


def test_missing_figure_and_bad_dtype() -> None:
    tpu = lookup_hardware("TPU v4")
    with pytest.raises(MissingFigureError, match="no published FP32 peak"):
        tpu.peak_flops(torch.float32)
    assert tpu.peak_flops(torch.bfloat16) == pytest.approx(275 * T)
    with pytest.raises(UnsupportedPrecisionError, match="int8"):
        lookup_hardware("h100").peak_flops(torch.int8)


def test_every_entry_has_a_positive_peak_for_what_it_supports() -> None:
    for e in builtin_catalog():
        supported = [d for d in ("fp32", "fp16", "bf16", "tf32", "fp8") if e.supports(d)]
        assert supported, e.name
        assert all(e.peak_flops(d) > 0 for d in supported)


def test_estimated_figures_are_labelled() -> None:
    nvl = lookup_hardware("H100 NVL")
    assert "bf16" in nvl.estimated and "ESTIMATED" in nvl.notes
    assert not lookup_hardware("H100 SXM5").estimated


# ---- prices --------------------------------------------------------------------------------------
def test_default_price_is_the_one_gpu_rule_on_the_live_table() -> None:
    # the rule itself is tested on fixture tables (tests/test_prices_selection.py); here only the wiring
    from predictor_models.hardware.prices import choose_price

    for entry in (lookup_hardware("H100"), lookup_hardware("A100 40GB"), lookup_hardware("T4")):
        assert entry.default_price == choose_price(entry.prices, 1).price
        assert entry.usd_per_hour == entry.default_price.usd_per_gpu_hour
        assert entry.price_date == entry.default_price.price_date


def _with_prices(name: str, prices: tuple) -> Accelerator:
    """A catalog entry with a fixture price list (a refresh of the shipped prices must not break tests)."""
    import dataclasses

    return dataclasses.replace(lookup_hardware(name), price_list=tuple(prices))


def test_gpu_only_prices_do_not_set_the_default() -> None:
    gpu_only = Price("Cloud", "gpu-only", 1, 0.35, "any", "2026-01-01", "fixture", gpu_only=True)
    machine = Price("Cloud", "vm-1", 1, 0.60, "any", "2026-01-01", "fixture")
    t4 = _with_prices("T4", (gpu_only, machine))
    assert t4.default_price == machine and t4.usd_per_hour == 0.60


def test_unlisted_price_is_none_and_table_is_dated() -> None:
    unlisted = _with_prices("TPU v5p", ())
    assert not unlisted.prices and unlisted.usd_per_hour is None and unlisted.price_date is None
    dates = [p.price_date for e in builtin_catalog() for p in e.prices]
    assert price_table_date() == max(dates)


# ---- override files ------------------------------------------------------------------------------
def _write(tmp_path: Path, text: str, name: str = "hw.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_override_adds_and_replaces_entries(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        [[accelerator]]
        name = "Lab X1"
        vendor = "NVIDIA"
        memory_gb = 40
        memory_bandwidth_gbs = 1000
        fp32_tflops = 20
        bf16_tflops = 200
        usd_per_hour = 0.75
        price_date = 2026-01-02

        [[accelerator]]
        name = "H100-SXM5"
        usd_per_hour = 1.5
    """)
    cat = load_catalog(path)
    x1 = cat.lookup("lab-x1")
    assert x1.user_defined and x1.peak_flops("bf16") == 200 * T
    assert (x1.usd_per_hour, x1.price_date) == (0.75, "2026-01-02")
    h100 = cat.lookup("h100")
    assert h100.usd_per_hour == 1.5 and h100.memory_gb == 80  # other fields kept
    assert len(cat) == len(builtin_catalog()) + 1


@pytest.mark.parametrize(
    "body, entry, field",
    [
        ('[[accelerator]]\nname = "Bad"\nvendor = "X"\nmemory_gb = -80\nmemory_bandwidth_gbs = 1\nfp32_tflops = 1\n',
         "#1 'Bad'", "memory_gb"),
        ('[[accelerator]]\nname = "Bad"\nvendor = "X"\nmemory_bandwidth_gbs = 1\nfp32_tflops = 1\n',
         "#1 'Bad'", "memory_gb"),
        ('[[accelerator]]\nname = "Bad"\nvendor = "X"\nmemory_gb = 0\nmemory_bandwidth_gbs = 1\nfp32_tflops = 1\n',
         "#1 'Bad'", "memory_gb"),
        ('[[accelerator]]\nname = "H100-SXM5"\nmemroy_gb = 90\n', "#1 'H100-SXM5'", "memroy_gb"),
        ('[[accelerator]]\nname = "H100-SXM5"\nbf16_tflops = "fast"\n', "#1 'H100-SXM5'", "bf16_tflops"),
        ('[[accelerator]]\nname = "MI100"\nfp32_matrix_tflops = 10\n', "#1 'MI100'", "fp32_matrix_tflops"),
        ('[[accelerator]]\nname = "MI100"\nfp32_matrix_tflops = -46\n', "#1 'MI100'", "fp32_matrix_tflops"),
        ('[[accelerator]]\nname = "H100-SXM5"\nmemory_gb = 90\n[[accelerator]]\nname = "h100 sxm5"\nmemory_gb = 91\n',
         "#2 'h100 sxm5'", "name"),
        ('[[price]]\naccelerator = "H100"\nprovider = "Me"\nusd_per_gpu_hour = -1\nprice_date = "2026-01-01"\n',
         "[[price]] #1", "usd_per_gpu_hour"),
        ('[[price]]\naccelerator = "Z999"\nprovider = "Me"\nusd_per_gpu_hour = 1\nprice_date = "2026-01-01"\n',
         "[[price]] #1", "accelerator"),
    ],
)
def test_override_errors_name_file_entry_and_field(tmp_path: Path, body: str, entry: str, field: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(HardwareCatalogError) as info:
        load_catalog(path)
    message = str(info.value)
    assert str(path) in message and entry in message and f"field {field!r}" in message
    assert info.value.field == field


def test_unknown_field_suggests_the_right_one(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[accelerator]]\nname = "H100-SXM5"\nmemroy_gb = 90\n')
    with pytest.raises(HardwareCatalogError, match="did you mean 'memory_gb'"):
        load_catalog(path)


def test_malformed_and_missing_files(tmp_path: Path) -> None:
    path = _write(tmp_path, "[[accelerator]\nname = ")
    with pytest.raises(HardwareCatalogError, match="not valid TOML") as info:
        load_catalog(path)
    assert str(path) in str(info.value)
    with pytest.raises(HardwareCatalogError, match="file not found"):
        load_catalog(tmp_path / "nope.toml")


def test_alias_clash_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[accelerator]]\nname = "Mine"\nvendor = "X"\naliases = ["H100-SXM5"]\n'
                            'memory_gb = 1\nmemory_bandwidth_gbs = 1\nfp32_tflops = 1\n')
    with pytest.raises(HardwareCatalogError, match="already a name of 'H100-SXM5'"):
        load_catalog(path)


def test_env_override_and_warn_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = _write(tmp_path, '[[accelerator]]\nname = "Env GPU"\nvendor = "X"\nmemory_gb = 8\n'
                            'memory_bandwidth_gbs = 100\nfp32_tflops = 5\n', "good.toml")
    monkeypatch.setenv("PRENET_HARDWARE", str(good))
    assert lookup_hardware("env gpu").memory_gb == 8
    assert prenet_callbacks.lookup_hardware("env gpu").name == "Env GPU"

    bad = _write(tmp_path, '[[accelerator]]\nname = "H100-SXM5"\nmemory_gb = -1\n', "bad.toml")
    monkeypatch.setenv("PRENET_HARDWARE", str(bad))
    catalog_module._WARNED.clear()
    with pytest.warns(RuntimeWarning, match="bad.toml.*memory_gb.*built-in catalog"):
        assert load_catalog(on_error="warn") is builtin_catalog()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once already: silent now, still the built-in catalog
        assert load_catalog(on_error="warn") is builtin_catalog()
        assert default_catalog().lookup("h100").memory_gb == 80
    with pytest.raises(HardwareCatalogError):
        load_catalog()


# ---- public API and detection --------------------------------------------------------------------
def test_list_hardware_filters() -> None:
    amd = prenet_callbacks.list_hardware(vendor="amd")
    assert amd and all(e.vendor == "AMD" for e in amd)
    big = list_hardware(min_memory_gb=141)
    assert {e.name for e in big} >= {"H200-SXM", "B200", "MI300X", "MI325X"}
    assert all(e.memory_gb >= 141 for e in big)
    assert [e.name for e in list_hardware(contains="a100 sxm")] == ["A100-SXM4-40GB", "A100-SXM4-80GB"]
    with pytest.raises(ValueError, match="unknown vendor 'intel'; known: AMD, Google, NVIDIA"):
        list_hardware(vendor="intel")
    with pytest.raises(ValueError, match="min_memory_gb"):
        list_hardware(min_memory_gb=-1)


def test_current_device_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    info = prenet_callbacks.current_device()
    assert info.kind in ("cpu", "mps") and info.count == 1 and info.accelerator is None
    assert info.cpu_cores >= 1 and info.name


@pytest.mark.parametrize(
    "driver_name, gib, hip, expected, kind",
    [("NVIDIA A100-SXM4-80GB", 79.2, None, "A100-SXM4-80GB", "cuda"),
     ("NVIDIA H100 80GB HBM3", 79.1, None, "H100-SXM5", "cuda"),
     ("Tesla V100-SXM2-32GB", 31.7, None, "V100-SXM2-32GB", "cuda"),
     ("AMD Instinct MI250X", 64.0, "6.0", "MI250X-GCD", "rocm"),
     ("NVIDIA Mystery GPU", 12.0, None, None, "cuda")],
)
def test_current_device_maps_gpu_to_catalog(monkeypatch: pytest.MonkeyPatch, driver_name: str, gib: float,
                                            hip: str | None, expected: str | None, kind: str) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: driver_name)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda index=0: types.SimpleNamespace(total_memory=int(gib * 1024 ** 3)))
    monkeypatch.setattr(torch.version, "hip", hip, raising=False)
    info = current_device()
    assert (info.kind, info.name, info.count) == (kind, driver_name, 8)
    assert (info.accelerator.name if info.accelerator else None) == expected
    assert info.memory_gb == pytest.approx(gib, abs=0.1)


def test_current_device_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> bool:
        raise RuntimeError("driver exploded")

    monkeypatch.setattr(torch.cuda, "is_available", boom)
    assert current_device().kind == "cpu"
