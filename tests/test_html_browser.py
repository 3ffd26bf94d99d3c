"""The page in a real browser (headless Chromium via scripts/html_screenshots.py): every chart is
drawn, nothing is loaded, nothing is logged to the console; and the script does catch a bad page."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prenet_callbacks.html import CHARTS
from tests.html_fixtures import variant

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "html_screenshots.py"
pytestmark = pytest.mark.skipif(
    not (shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome"))
    or not shutil.which("chromedriver"),
    reason="headless Chromium and chromedriver are not installed (apt-get install -y chromium chromium-driver)")


def screenshots(source: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(source), "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_every_chart_renders_without_console_errors(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps(variant("not_fitting")))
    result = screenshots(tmp_path / "run.json", tmp_path / "shots")
    assert result.returncode == 0, result.stderr
    for name in CHARTS:
        png = (tmp_path / "shots" / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and 2_000 < len(png) < 200_000, (name, len(png))


def test_a_page_that_logs_an_error_or_loads_a_resource_fails(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text('<!doctype html><figure data-chart="x"><svg><text>x</text></svg></figure>'
                    '<script>console.error("broken chart")</script><img src="missing.png">')
    result = screenshots(page, tmp_path / "shots")
    assert result.returncode == 1
    assert "broken chart" in result.stderr and "missing.png" in result.stderr
