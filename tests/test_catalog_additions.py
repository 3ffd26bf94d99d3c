"""Catalog entries added for issue 26 (H20, H800, A800, L20, RTX 4080, RTX 3090 Ti, MI300A, TPU v6e, the 500 W
and 96 GB HBM2e H100 SXM): the names people type, sourced figures, the power-cap model, and predictions."""
from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

import pytest
import torch

from predictor_models.hardware import build_data, lookup_hardware

NEW = ["H20", "H800", "A800-SXM4-80GB", "L20", "RTX 4080", "RTX 3090 Ti", "MI300A", "TPU v6e", "H100-SXM5-500W",
       "H100-SXM5-96GB"]


@pytest.mark.parametrize("typed, name", [
    ("H100 SXM 500W", "H100-SXM5-500W"), ("H100 500W", "H100-SXM5-500W"), ("H100 96GB", "H100-SXM5-96GB"),
    ("H100 HBM2e", "H100-SXM5-96GB"), ("H100 94GB", "H100-NVL"), ("H100", "H100-SXM5"), ("MI300A", "MI300A"),
    ("AMD Instinct MI300A", "MI300A"), ("v6e", "TPU v6e"), ("TPU v6e", "TPU v6e"), ("Trillium", "TPU v6e"),
    ("NVIDIA H20", "H20"), ("H800", "H800"), ("A800", "A800-SXM4-80GB"), ("A800 80GB", "A800-SXM4-80GB"),
    ("L20", "L20"), ("GeForce RTX 4080", "RTX 4080"), ("RTX 3090 Ti", "RTX 3090 Ti"), ("RTX 3090", "RTX 3090"),
])
def test_names_people_type_resolve(typed, name):
    assert lookup_hardware(typed).name == name


@pytest.mark.parametrize("name", NEW)
def test_new_entries_have_sources_and_the_figures_the_predictor_needs(name):
    acc = lookup_hardware(name)
    assert acc.sources and all(s.startswith("https://") for s in acc.sources)
    assert acc.memory_gb > 0 and acc.memory_bandwidth_gbs > 0 and acc.notes
    assert acc.peak_flops("bf16") > 0
    if acc.kind == "gpu":
        assert acc.peak_flops("float32") > 0


def test_export_variants_differ_from_their_base_only_where_documented():
    h100, h800, h20 = lookup_hardware("H100-SXM5"), lookup_hardware("H800"), lookup_hardware("H20")
    assert h800.bf16_tflops == h100.bf16_tflops and h800.memory_bandwidth_gbs == h100.memory_bandwidth_gbs
    assert h800.interconnect_bandwidth_gbs == 400 < h100.interconnect_bandwidth_gbs and h800.fp64_tflops == 1
    a100, a800 = lookup_hardware("A100-SXM4-80GB"), lookup_hardware("A800")
    assert a800.bf16_tflops == a100.bf16_tflops and a800.interconnect_bandwidth_gbs == 400
    assert h20.memory_gb == 96 and h20.bf16_tflops == 148 and h20.memory_bandwidth_gbs == 4000


def test_power_capped_h100_is_the_sxm_scaled_by_the_named_model():
    full, capped, hbm2e = lookup_hardware("H100-SXM5"), lookup_hardware("H100 SXM 500W"), lookup_hardware("H100 96GB")
    nvl = lookup_hardware("H100-NVL")
    k = build_data.power_cap_ratio(500)
    assert nvl.bf16_tflops / full.bf16_tflops < k < 1.0          # between the NVL (400 W) and SXM (700 W) points
    assert build_data.power_cap_ratio(700) == 1.0 and build_data.power_cap_ratio(400) == pytest.approx(835.5 / 989.5)
    for entry in (capped, hbm2e):
        assert entry.tdp_w == 500 and entry.bf16_tflops == pytest.approx(full.bf16_tflops * k, abs=0.01)
        assert set(entry.estimated) == {"bf16", "fp16", "fp32", "fp64", "fp8", "tf32"} and "ESTIMATED" in entry.notes
    assert capped.memory_bandwidth_gbs == full.memory_bandwidth_gbs and capped.memory_gb == 80
    assert (hbm2e.memory_gb, hbm2e.memory_bandwidth_gbs, hbm2e.memory_type) == (96, 2400, "HBM2e")


def test_predictions_follow_the_specs():
    from prenet_callbacks import estimate

    with torch.device("meta"):
        model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(4)])
    est = estimate(model, torch.empty(8192, 4096, device="meta"), precision="bf16-mixed",
                   targets=["H100", "H100 SXM 500W", "H100 96GB", "H20", "8x H100", "8x H800"])
    step = {r["name"] if r["devices"] == 1 else r["label"]: r for r in est.rows}
    assert step["H100-SXM5"]["step_s"] < step["H100-SXM5-500W"]["step_s"] <= step["H100-SXM5-96GB"]["step_s"]
    assert step["H20"]["step_s"] > 2 * step["H100-SXM5"]["step_s"]      # a sixth of the tensor peak
    assert step["8x H800"]["comm_s"] > step["8x H100-SXM5"]["comm_s"]    # NVLink 400 vs 900 GB/s


def test_build_data_reproduces_the_committed_tables(tmp_path, monkeypatch):
    if not (build_data.DEFAULT_SOURCE / "accelerators.csv").exists():
        pytest.skip("the shared curated tables are not on this machine")
    here = Path(build_data.__file__).parent
    out = tmp_path / "hw"
    out.mkdir()
    for name in ("curated_accelerators.csv", "curated_prices.csv"):
        shutil.copy(here / name, out / name)
    monkeypatch.setattr(build_data, "HERE", out)
    monkeypatch.setattr(build_data, "CURATED_ACCELERATORS", out / "curated_accelerators.csv")
    monkeypatch.setattr(build_data, "CURATED_PRICES", out / "curated_prices.csv")
    monkeypatch.setattr("sys.argv", ["build_data"])
    build_data.main()
    for name in ("accelerators.toml", "prices.toml", "builtin_catalog.json"):
        assert filecmp.cmp(out / name, here / name, shallow=False), f"{name} is not what build_data writes"


def test_every_shipped_listing_is_dated_sourced_and_popular_gpus_have_several_providers():
    import re

    from predictor_models.hardware import builtin_catalog

    for entry in builtin_catalog():
        for p in entry.prices:
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", p.price_date) and p.source and p.provider
            assert p.usd_per_gpu_hour > 0 and p.gpus_per_instance >= 1 and p.region
    for name in ("H100", "H200", "B200", "A100-SXM4-80GB", "A100-SXM4-40GB", "T4", "RTX A6000", "L40"):
        assert len({p.provider for p in lookup_hardware(name).prices}) >= 2, name
    assert lookup_hardware("RTX 4090").prices   # was unlisted before issue 26
    for name in ("H100", "H200", "B200", "L40S"):
        assert len({p.provider for p in lookup_hardware(name).prices}) >= 3, name
    # a 1-GPU H200 row takes a 1-GPU instance, not the per-GPU rate of an 8-GPU node
    assert len({p.provider for p in lookup_hardware("MI300X").prices}) >= 3   # unlisted before 2026-12-02
    choice = lookup_hardware("H200").price_for(1)
    assert choice.price.gpus_per_instance == 1 and choice.exact and not choice.note
