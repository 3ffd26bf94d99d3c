"""The report as a self-contained HTML page with charts (inline SVG written from the data; no extra needed).

    from prenet_callbacks.html import write_report_page
    write_report_page(Report.load("prenet_report.json"), "prenet_report.html")
"""
from __future__ import annotations

from prenet_callbacks.html.page import (CHARTS, ReportPageError, render_report_page, write_report_page)
from prenet_callbacks.html.publisher import PagePublisher

__all__ = ["CHARTS", "PagePublisher", "ReportPageError", "render_report_page", "write_report_page"]
