"""The report as a self-contained HTML page with charts (``pip install 'prenet-callbacks[html]'``).

    from prenet_callbacks.html import write_report_page
    write_report_page(Report.load("prenet_report.json"), "prenet_report.html")

Importing this package never needs matplotlib; rendering does, and its error names the extra.
"""
from __future__ import annotations

from prenet_callbacks.html.page import (CHARTS, ReportPageError, plotting_available, render_report_page,
                                        write_report_page)
from prenet_callbacks.html.publisher import PagePublisher

__all__ = ["CHARTS", "PagePublisher", "ReportPageError", "plotting_available", "render_report_page",
           "write_report_page"]
