"""`prenet hardware`: rich table, filters, --json, detail view, exit code 2 on bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from prenet_callbacks.cli import main
from prenet_callbacks.cli.hardware import format_tflops


@pytest.fixture(autouse=True)
def _no_user_override(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own $PRENET_HARDWARE must not change what these tests see."""
    monkeypatch.delenv("PRENET_HARDWARE", raising=False)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["hardware", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_lists_catalog_with_units_and_dated_prices(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys)
    assert code == 0 and not err
    assert "H100-SXM5" in out and "MI300X" in out and "TPU v5p" in out
    assert "989 TFLOPS" in out and "80 GB" in out and "3,350 GB/s" in out
    from predictor_models.hardware import format_price, lookup_hardware, price_table_date

    assert format_price(lookup_hardware("H100").default_price) in out   # '$X.XX/h (date)', from the live table
    assert f"table dated {price_table_date()}" in out


def test_filters_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--vendor", "NVIDIA", "--min-memory", "90", "--contains", "h", "--json")
    assert code == 0
    data = json.loads(out)
    names = [a["name"] for a in data["accelerators"]]
    assert names == ["H100-NVL", "H200-SXM", "GH200-96GB", "GH200-HBM3e", "H20", "H100-SXM5-96GB"]
    first = data["accelerators"][0]
    assert first["memory_gb"] == 94 and first["vendor"] == "NVIDIA"
    from predictor_models.hardware import lookup_hardware, price_table_date

    assert data["price_table_date"] == price_table_date()
    h200 = data["accelerators"][1]
    live = lookup_hardware("H200").default_price
    assert h200["usd_per_hour"] == pytest.approx(live.usd_per_gpu_hour) and h200["price_date"] == live.price_date


def test_vendor_filter_in_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--vendor", "amd")
    assert code == 0 and "MI250X-GCD" in out and "H100" not in out


def test_detail_view(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "NVIDIA A100-SXM4-80GB")
    assert code == 0
    assert "A100-SXM4-80GB" in out and "2,039 GB/s" in out and "p4de.24xlarge" in out
    code, out, _ = _run(capsys, "v100", "--json")
    assert json.loads(out)["name"] == "V100-SXM2-16GB"


@pytest.mark.parametrize(
    "argv, needle",
    [(["--vendor", "intel"], "unknown vendor 'intel'"), (["--min-memory", "-5"], "--min-memory must be >= 0"),
     (["h900"], "unknown hardware 'h900'; closest: ")],
)
def test_bad_input_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and not out
    assert err.count("\n") == 1 and err.startswith("prenet hardware: error: ") and needle in err


def test_bad_override_file_exits_2_naming_file_entry_field(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('[[accelerator]]\nname = "H100-SXM5"\nmemory_bandwidth_gbs = -3\n', encoding="utf-8")
    code, _, err = _run(capsys, "--catalog", str(path))
    assert code == 2
    assert str(path) in err and "'H100-SXM5'" in err and "'memory_bandwidth_gbs'" in err


def test_override_entry_shows_in_listing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "lab.toml"
    path.write_text('[[accelerator]]\nname = "Lab GPU"\nvendor = "NVIDIA"\nmemory_gb = 12\n'
                    'memory_bandwidth_gbs = 300\nfp32_tflops = 10\nusd_per_hour = 0.2\nprice_date = "2026-01-01"\n',
                    encoding="utf-8")
    monkeypatch.setenv("PRENET_HARDWARE", str(path))
    code, out, _ = _run(capsys, "--contains", "lab")
    assert code == 0 and "Lab GPU" in out and "$0.20/h (2026-01-01)" in out


@pytest.mark.parametrize("value, text", [(989.5, "989 TFLOPS"), (1307.4, "1,307 TFLOPS"), (19.5, "19.5 TFLOPS"),
                                         (67.0, "67 TFLOPS"), (0.473, "0.47 TFLOPS"), (None, "-")])
def test_tflops_formatting(value: float | None, text: str) -> None:
    assert format_tflops(value) == text
