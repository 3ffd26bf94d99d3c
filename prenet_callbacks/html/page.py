"""The report as one self-contained HTML page: the panel's facts and four inline-SVG charts.

The page loads nothing: no scripts, no external styles, fonts or images, so it opens offline and
from an e-mail attachment alike. It is written atomically (a temp file beside the target, then a
rename), so a failure never leaves a partial page behind.
"""
from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any, Callable

from prenet_callbacks.html import facts, view
from prenet_callbacks.report import Report, ReportError, write_atomic

CHARTS = ("history", "breakdown", "layers", "hardware")  # each a section id, `data-chart` and `charts.<name>_chart`
_CSS = """
body{margin:0;background:#f6f7f9;color:#222;
font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
main{max-width:1040px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:0 0 12px}
.meta{color:#666;margin:0 0 20px;font-size:13px}
section{background:#fff;border:1px solid #e1e4e8;border-radius:6px;padding:16px 20px;margin:0 0 18px}
figure{margin:0 0 12px}figure svg{display:block;width:100%;height:auto}
figcaption{color:#555;font-size:13px;margin-top:4px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:0}
dl.facts dt{color:#555}dl.facts dd{margin:0}
table{border-collapse:collapse;font-size:13px;margin:8px 0;width:100%}
caption{caption-side:bottom;text-align:left;color:#666;padding-top:4px}
th,td{padding:3px 8px;border-bottom:1px solid #eceff2;text-align:left;white-space:nowrap}
th{border-bottom:2px solid #d0d5da}.num{text-align:right;font-variant-numeric:tabular-nums}
td:first-child{white-space:normal;word-break:break-all}
.bad{color:#c62828;font-weight:600}.missing{color:#8a5a00;background:#fff8e1;padding:8px 12px;border-radius:4px}
ul.notes{font-size:13px;color:#555;margin:6px 0 0;padding-left:20px}
"""


class ReportPageError(ValueError):
    """A report the page cannot be made from: it has no predictions."""


def _chart(name: str, data: dict[str, Any], caption: str) -> str:
    from prenet_callbacks.html import charts

    chart = getattr(charts, f"{name}_chart")(data)
    if chart is None:
        return ""
    return (f'<figure class=chart data-chart="{name}">{chart.svg(caption)}'
            f"<figcaption>{escape(caption)}</figcaption></figure>")


def _section(name: str, heading: str, chart: str, table: str, missing: str) -> str:
    body = chart + table if chart else f'<p class=missing data-missing="{name}">{escape(missing)}</p>' + table
    return f'<section id="{name}"><h2>{escape(heading)}</h2>{body}</section>'


def render_report_page(report: Report) -> str:
    """The page as a string (a few milliseconds). Raises `ReportPageError` for a report without predictions."""
    data = report.to_dict()
    if not data.get("predictions"):
        raise ReportPageError("the report has no predictions (the run ended before its first prediction): "
                              "there is nothing to chart; pass a report written after the first prediction")
    sections = _sections(data)
    body = "".join(_section(name, heading, _chart(name, data, caption), table(data), missing)
                   for name, heading, caption, table, missing in sections)
    notes = facts.notes_list([*(data.get("limitations") or []), *((data.get("projection") or {}).get("notes") or [])])
    title = f"PreNeT report: {facts.device_label(data)}"
    made = f"made {facts.when(data.get('created'))}"
    if data.get("updated") and data.get("updated") != data.get("created"):
        made += f", last written {facts.when(data.get('updated'))}"
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content=\"width=device-width,initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body><main>"
            f"<h1>{escape(title)}</h1><p class=meta>{escape(made)} · {escape(str(data.get('schema', '')))}</p>"
            f"<section id=summary><h2>Summary</h2>{facts.summary(data)}</section>{body}"
            + (f"<section id=notes><h2>Notes and limitations</h2>{notes}</section>" if notes else "")
            + "</main></body></html>\n")


def _sections(data: dict[str, Any]) -> list[tuple[str, str, str, Callable[[dict[str, Any]], str], str]]:
    """Per chart: name, heading, caption, the facts table under it, and what to say when it cannot be drawn."""
    whole, word = view.has_totals(data), view.run_word(data)
    return [
        ("history", "Prediction history",
         f"Predicted whole-{word} time at each optimizer step, with its band, the actual time once the {word} ended, "
         "and the naive progress-bar estimate (elapsed / fraction done)" if whole else
         "The run's length is unknown: time per optimizer step at each prediction",
         lambda _: "", "no prediction has an optimizer step"),
        ("breakdown", "Where the time goes",
         f"Left: the whole {word}'s predicted parts (hatched: data loading inside training). Right: one measured "
         "optimizer step.", facts.breakdown_table, "no breakdown and no measured step phases in this report"),
        ("layers", "Layers",
         "Forward and backward time per optimizer step of the slowest layers, with their FLOPs and arithmetic "
         "intensity; right: achieved FLOP/s against FLOP per byte (numbers match the bars).",
         facts.layers_table, f"No per-layer profile: {view.no_layers_reason(data)}."),
        ("hardware", "Other hardware",
         "Predicted time against cost for each target (bars: the band); dashed: the time/cost front; "
         "ringed: the recommended choices; red crosses: does not fit in memory; targets without a price "
         "on the strip below.", facts.targets_table,
         "No other hardware in this report: re-project it with `prenet report REPORT.json --targets default "
         "--html PAGE.html`."),
    ]


def write_report_page(report: Report, path: str | os.PathLike[str]) -> Path:
    """Render `report` and write it to `path` atomically; returns the path.

    Raises `ReportPageError` for a report without predictions and `ReportError` for a path that cannot
    be written (both `ValueError`s).
    On any failure an existing page at `path` is left as it was and no partial file remains.
    """
    if Path(path).is_dir():
        raise ReportError(f"cannot write page {str(path)!r}: it is a directory (pass a file such as report.html)")
    return write_atomic(path, render_report_page(report), what="page")
