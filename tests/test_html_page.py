"""The HTML report page: every chart present, self-contained, honest about what a report lacks,
and one clear error (no partial page) for reports it cannot show."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from prenet_callbacks.cli import main
from prenet_callbacks.html import CHARTS, write_report_page
from prenet_callbacks.html.view import HardwarePoint, hardware_points, pareto_front
from prenet_callbacks.report import Report, ReportError
from tests.html_fixtures import variant

ROOT = Path(__file__).resolve().parents[1]


class PageParts(HTMLParser):
    """Charts (figure[data-chart] holding an svg with text), missing-chart notes, and every URL-bearing attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: dict[str, dict[str, int]] = {}
        self.missing: list[str] = []
        self.links: list[str] = []
        self.tags: set[str] = set()
        self.ids: list[str] = []
        self._chart: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.add(tag)
        if attrs.get("id"):
            self.ids.append(attrs["id"])
        self.links += [value for key, value in attrs.items() if key in ("href", "src", "xlink:href", "action") and value]
        if tag == "figure" and "data-chart" in attrs:
            self._chart = attrs["data-chart"]
            self.charts[self._chart] = {"svg": 0, "text": 0}
        elif self._chart and tag in ("svg", "text"):
            self.charts[self._chart][tag] += 1
        if "data-missing" in attrs:
            self.missing.append(attrs["data-missing"])

    def handle_endtag(self, tag):
        if tag == "figure":
            self._chart = None


def page_of(data: dict, tmp_path: Path, name: str = "page.html") -> tuple[str, PageParts]:
    source = tmp_path / "report.json"
    source.write_text(json.dumps(data))
    path = write_report_page(Report.load(source), tmp_path / name)
    text = path.read_text(encoding="utf-8")
    parts = PageParts()
    parts.feed(text)
    return text, parts


def assert_self_contained(text: str, parts: PageParts) -> None:
    assert not re.search(r"(?i)\b(?:https?|ftp|wss?)://", text), re.search(r"(?i)\b(?:https?|ftp|wss?)://.{0,60}", text)
    assert not ({"script", "link", "img", "iframe", "object", "embed"} & parts.tags)
    assert "@import" not in text and not re.search(r"url\((?!#)", text)
    assert all(link.startswith("#") for link in parts.links), parts.links
    assert len(parts.ids) == len(set(parts.ids)), "ids repeat across charts"


# variant -> (charts drawn, sections shown as "missing", words the page must hold)
CASES = {
    "finished": (CHARTS, [], ["Completed at optimizer step 192", "actual 20 s", "(fastest)", "time/cost front",
                              "naive progress-bar estimate", "+17.6% against the actual time"]),
    "unknown_length": (CHARTS, [], ["Run length unknown", "USD per 1,000 steps", "unknown length: the training DataLoader",
                                    "Not finished when the report was written"]),
    "no_targets": (("history", "breakdown", "layers"), ["hardware"], ["No other hardware in this report"]),
    "not_fitting": (CHARTS, [], ["P4: does not fit", "does not fit in memory", "<span class=bad>no</span>"]),
    "failed_profile": (("history", "breakdown", "hardware"), ["layers"], ["per-layer profiling failed (RuntimeError"]),
    "resumed": (CHARTS, [], ["resumed at step 96", "predicted fit time, fit 2",
                             "resumed from a checkpoint at optimizer step 96"]),
    "stopped_early": (CHARTS, [], ["Stopped early (EarlyStopping on val_loss) at optimizer step 120",
                                   "predicted for the work done"]),
    "on_gpu": (CHARTS, [], ["Roofline on A100-SXM4-80GB", "roof: 19.5 TFLOP/s"]),
    "deepspeed": (CHARTS, [], ["Predicted run time", "whole-run time", "Whole run: 19 s"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_page_holds_every_chart_it_can_draw_and_nothing_external(name, tmp_path):
    charts, missing, words = CASES[name]
    text, parts = page_of(variant(name), tmp_path)
    assert list(parts.charts) == list(charts), parts.charts
    assert all(chart["svg"] == 1 and chart["text"] > 5 for chart in parts.charts.values()), parts.charts
    assert parts.missing == missing
    for word in words:
        assert word in text, word
    assert_self_contained(text, parts)
    assert len(text.encode()) < 1_000_000


def test_time_and_cost_front_excludes_dominated_unpriced_and_oversized_targets():
    points = [HardwarePoint("fast", 1.0, 0.9, 1.1, 4.0, True, False), HardwarePoint("cheap", 5.0, 4, 6, 1.0, True, False),
              HardwarePoint("worse", 6.0, 5, 7, 2.0, True, False), HardwarePoint("tie-slower", 5.0, 4, 6, 1.5, True, False),
              HardwarePoint("too small", 0.5, 0.4, 0.6, 0.5, False, False),
              HardwarePoint("cpu", 20.0, 20, 20, None, True, True)]
    assert pareto_front(points) == {"fast", "cheap"}


def test_recommended_roles_and_band_come_from_the_report():
    points, whole_run = hardware_points(variant("finished"))
    roles = {p.label: p.roles for p in points if p.roles}
    assert whole_run and roles == {"8x H100-SXM5": ["fastest"], "T4": ["cheapest"], "8x A100-SXM4-80GB": ["best value"]}
    t4 = next(p for p in points if p.label == "T4")
    assert t4.low < t4.time < t4.high and t4.cost_low < t4.cost < t4.cost_high


def cli(argv, capsys):
    try:
        rc = main(argv)
    except SystemExit as exit_:
        rc = exit_.code
    captured = capsys.readouterr()
    return rc, [line for line in captured.err.splitlines() if line.strip()]


@pytest.mark.parametrize("content, words", [
    (json.dumps({"schema": "other-tool/3", "predictions": []}), ["not a PreNeT report"]),
    (json.dumps(variant("finished"))[:2000], ["not valid JSON"]),
    (json.dumps({**variant("finished"), "predictions": []}), ["no predictions"]),
])
def test_bad_reports_exit_2_with_one_line_and_leave_no_page(content, words, tmp_path, capsys):
    source = tmp_path / "run.json"
    source.write_text(content)
    rc, lines = cli(["report", str(source), "--html", str(tmp_path / "out.html")], capsys)
    assert rc == 2 and len(lines) == 1, lines
    assert all(word in lines[0] for word in words), lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_cli_writes_the_page_beside_the_panel(tmp_path, capsys):
    source = tmp_path / "run.json"
    source.write_text(json.dumps(variant("finished")))
    assert main(["report", str(source), "--html", str(tmp_path / "pages" / "run.html")]) == 0
    captured = capsys.readouterr()
    assert "PreNeT" in captured.out and "HTML report:" in captured.err
    assert (tmp_path / "pages" / "run.html").read_text().count("data-chart=") == len(CHARTS)


def test_a_failure_while_drawing_keeps_the_old_page_and_leaves_no_temp_file(tmp_path, monkeypatch):
    from prenet_callbacks.html import charts

    old = tmp_path / "page.html"
    old.write_text("old page")
    monkeypatch.setattr(charts, "layers_chart", lambda data: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        write_report_page(Report.from_dict(variant("finished")), old)
    assert old.read_text() == "old page" and [p.name for p in tmp_path.iterdir()] == ["page.html"]
    with pytest.raises(ReportError, match="is a directory"):
        write_report_page(Report.from_dict(variant("finished")), tmp_path)


def test_a_page_needs_no_plotting_package_and_imports_none(tmp_path):
    """The charts are SVG written from the data: with matplotlib made unimportable the page and the CLI's
    --html still work, and drawing a page imports no plotting package (it costs the run milliseconds)."""
    (tmp_path / "run.json").write_text(json.dumps(variant("finished")))
    code = f"""
import sys
sys.modules["matplotlib"] = None  # unimportable: any import of it would raise
from prenet_callbacks.cli import main
from prenet_callbacks.html import write_report_page
from prenet_callbacks.report import Report
write_report_page(Report.load({str(tmp_path / 'run.json')!r}), {str(tmp_path / 'x.html')!r})
rc = main(["report", {str(tmp_path / 'run.json')!r}, "--html", {str(tmp_path / 'y.html')!r}])
print("plotting:", sorted(m for m in sys.modules if m.split(".")[0] in ("matplotlib", "PIL", "plotly")))
sys.exit(rc)
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "plotting: ['matplotlib']" in result.stdout   # only the None placeholder set above
    for name in ("x.html", "y.html"):
        assert (tmp_path / name).read_text().count("data-chart=") == len(CHARTS)


def test_bands_that_rounding_put_on_the_wrong_side_still_hold_their_value(tmp_path):
    data = variant("finished")
    data["predictions"][-1].update(low_s=19.5, high_s=19.0)  # total 19.1
    data["targets"][1].update(total_low_s=2.61, total_s=2.6, total_high_s=2.59)
    _, parts = page_of(data, tmp_path)
    assert list(parts.charts) == list(CHARTS)
    t4 = next(p for p in hardware_points(data)[0] if p.label == "T4")
    assert (t4.low, t4.time, t4.high) == (2.6, 2.6, 2.6)


def test_a_folder_as_the_page_is_refused_before_any_work(tmp_path, capsys):
    source = tmp_path / "run.json"
    source.write_text(json.dumps(variant("finished")))
    rc, lines = cli(["report", str(source), "--html", str(tmp_path)], capsys)
    assert rc == 2 and len(lines) == 1 and "is a directory" in lines[0] and "--html" in lines[0]
