"""Pages from reports that real runs wrote: a tiny Lightning fit's report (the current schema) and
the demo's report in the older ``prenet-report/1`` schema, both read through `Report.load`."""
from __future__ import annotations

import json
from pathlib import Path

import lightning.pytorch as pl

from prenet_callbacks import PreNeTCallback
from prenet_callbacks.html import CHARTS, write_report_page
from prenet_callbacks.report import Report
from tests.lightning_helpers import TinyModule, loaders, trainer
from tests.test_html_page import PageParts, assert_self_contained

V1_DEMO = Path(__file__).parent / "data" / "html_demo_report_v1.json"


def page_from(report_path: Path, page_path: Path) -> tuple[str, PageParts]:
    text = write_report_page(Report.load(report_path), page_path).read_text(encoding="utf-8")
    parts = PageParts()
    parts.feed(text)
    return text, parts


def test_page_from_a_real_lightning_fit(tmp_path):
    callback = PreNeTCallback(report_path=tmp_path / "r.json", warmup_steps=1, profile_steps=1, timing_steps=3,
                              metrics_every_n_steps=5, targets=["T4", "8x A100"], print_report=False)
    pl.seed_everything(0, verbose=False)
    trainer(tmp_path, [callback], max_epochs=2).fit(TinyModule(), *loaders(train_batches=20))
    text, parts = page_from(tmp_path / "r.json", tmp_path / "r.html")
    assert list(parts.charts) == list(CHARTS) and parts.missing == []
    assert all(chart["svg"] == 1 and chart["text"] > 5 for chart in parts.charts.values())
    assert "8x A100" in text and "net.0" in text and "actual" in text
    assert_self_contained(text, parts)


def test_an_old_schema_report_renders_through_the_same_loader(tmp_path):
    assert json.loads(V1_DEMO.read_text())["schema"] == "prenet-report/1"
    text, parts = page_from(V1_DEMO, tmp_path / "demo.html")
    assert list(parts.charts) == list(CHARTS) and parts.missing == []
    assert "T4" in text and "features.2.0" in text
    assert_self_contained(text, parts)
