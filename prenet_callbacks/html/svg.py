"""A matplotlib figure as an SVG element to put inline in an HTML page.

Text stays text (``svg.fonttype = none``: small, selectable, searchable). The XML prologue, the
DOCTYPE, the metadata block and the namespace declarations go (HTML parses inline SVG without them,
and they are the only URLs matplotlib writes), and every id gets the chart's prefix so that several
charts on one page never share an id.
"""
from __future__ import annotations

import io
import re
from typing import Any

import matplotlib

_PROLOGUE = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_NAMESPACES = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')
_SIZE = re.compile(r'(<svg\b[^>]*?)\s+width="[^"]*"\s+height="[^"]*"')


def figure_svg(figure: Any, prefix: str, title: str) -> str:
    """The figure as an ``<svg>`` element that scales to its container, ids prefixed with `prefix`."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": prefix}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = _METADATA.sub("", _PROLOGUE.sub("", buffer.getvalue(), count=1))
    text = _NAMESPACES.sub("", text)
    text = text.replace("xlink:href=", "href=")
    text = re.sub(r'\bid="', f'id="{prefix}-', text)
    text = text.replace("url(#", f"url(#{prefix}-").replace('href="#', f'href="#{prefix}-')
    text = _SIZE.sub(r'\1 role="img" aria-label="' + _attribute(title) + '"', text, count=1)
    return text.strip()


def _attribute(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
