"""Liger-Kernel's eager-PyTorch module times: a shipped evaluation file, licensed, not in the training rows."""
from __future__ import annotations

from collections import Counter

import pytest

from predictor_models.datasets.liger_eager import EAGER_PROVIDERS, load_liger_eager
from predictor_models.datasets.shipped import SHIPPED_DIR, read_manifest


def test_liger_rows_are_eager_speed_rows_with_shapes():
    rows = load_liger_eager()
    assert len(rows) == read_manifest()["liger_rows"] == 735
    assert {r["provider"] for r in rows} == set(EAGER_PROVIDERS)
    assert {r["mode"] for r in rows} == {"forward", "backward", "full"}
    assert Counter(r["device"] for r in rows)["H100-SXM5"] == 302 and all(r["device"] for r in rows)
    rms = next(r for r in rows if r["kernel"] == "rms_norm" and r["params"]["H"] == 1024)
    assert rms["inputs"] == {"x": (2048, 1024)} and rms["dtype"] == "bfloat16" and rms["provider"] == "huggingface"
    assert rms["seconds"] == pytest.approx(7.8208e-05, rel=1e-4) and rms["seconds_p20"] <= rms["seconds"]
    mlp = next(r for r in rows if r["kernel"] == "swiglu")
    assert mlp["inputs"]["x"][2] == 4096 and "LlamaMLP" in mlp["module"]
    ce = next(r for r in rows if r["kernel"] == "cross_entropy")
    assert ce["inputs"]["input"] == (8 * 2048, ce["params"]["V"]) and ce["dtype"] is None


def test_liger_is_an_evaluation_set_not_training_rows():
    manifest = read_manifest()
    assert "liger_kernel" not in manifest["sources"] and "liger_kernel" in manifest["evaluation_sources"]
    source = manifest["evaluation_sources"]["liger_kernel"]
    assert "BSD 2-CLAUSE" in (SHIPPED_DIR / source["licence_file"]).read_text()
    assert source["commit"] in (SHIPPED_DIR / "NOTICE.md").read_text() and "LinkedIn" in source["attribution"]
    assert all(r["source"] != "liger_kernel" for r in manifest["reports"])
