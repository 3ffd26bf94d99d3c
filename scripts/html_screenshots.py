"""Open a report's HTML page in headless Chromium, screenshot each chart, fail on console errors.

    python scripts/html_screenshots.py runs/demo/prenet_report.json --out docs/img/html-report
    python scripts/html_screenshots.py page.html --out /tmp/shots

The argument is a report (rendered to a page first; ``--page`` keeps that page) or a page already
written. Each ``<figure data-chart=NAME>`` becomes ``NAME.png`` (palette-quantised when Pillow is
installed, to keep the files small). The script exits 1 when the page logs an error
to the browser console, loads any resource (a self-contained page loads none), or lacks a chart's
drawing; it stops with a message naming the install command when Chromium or its driver is missing.

Needs Chromium and its WebDriver; on Debian / Ubuntu::

    apt-get install -y chromium chromium-driver

It talks to ``chromedriver`` over the W3C WebDriver HTTP protocol with the standard library (no
Selenium needed), so it runs in the project's environment as it is.
"""
from __future__ import annotations

import argparse
import base64
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

INSTALL = "apt-get install -y chromium chromium-driver"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WINDOW = (1100, 900)


class WebDriver:
    """The few W3C WebDriver commands this script needs, over HTTP to a local chromedriver."""

    def __init__(self, driver: str, browser: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process = subprocess.Popen([driver, f"--port={self.port}"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        self.session = ""
        deadline = time.monotonic() + 30
        while True:
            try:
                self._call("GET", "/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    raise RuntimeError(f"{driver} did not start")
                time.sleep(0.2)
        options = {"binary": browser, "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                                               "--hide-scrollbars", "--force-device-scale-factor=1",
                                               f"--window-size={WINDOW[0]},{WINDOW[1]}"]}
        capabilities = {"browserName": "chrome", "goog:chromeOptions": options, "goog:loggingPrefs": {"browser": "ALL"}}
        self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}})["sessionId"]

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read() or b"{}").get("value")
        except urllib.error.HTTPError as error:
            detail = json.loads(error.read() or b"{}").get("value", {})
            raise RuntimeError(f"WebDriver {method} {path}: {detail.get('message', error)}") from None

    def command(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._call(method, f"/session/{self.session}{path}", body)

    def script(self, source: str) -> Any:
        return self.command("POST", "/execute/sync", {"script": source, "args": []})

    def close(self) -> None:
        try:
            if self.session:
                self._call("DELETE", f"/session/{self.session}")
        finally:
            self.process.terminate()
            self.process.wait(timeout=30)


def find_tools() -> tuple[str, str]:
    browser = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        missing = " and ".join(n for n, p in (("Chromium", browser), ("chromedriver", driver)) if not p)
        raise SystemExit(f"html_screenshots: {missing} not found; install them with `{INSTALL}` (Debian/Ubuntu)")
    return browser, driver


def page_for(source: Path, page: Path) -> Path:
    """The page to open: `source` itself when it is HTML, else the report rendered to `page`."""
    if source.suffix.lower() in (".html", ".htm"):
        return source
    from prenet_callbacks.html import write_report_page
    from prenet_callbacks.report import Report

    return write_report_page(Report.load(source), page)


def shrink(png: bytes) -> bytes:
    """Quantise to a 256-colour palette (charts have few colours); unchanged without Pillow."""
    try:
        from io import BytesIO

        from PIL import Image
    except ImportError:
        return png
    image = Image.open(BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    buffer = BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def screenshot_charts(page: Path, out: Path) -> list[str]:
    """Write one PNG per chart into `out`; return the problems found (empty: the page is fine)."""
    browser, driver_path = find_tools()
    driver = WebDriver(driver_path, browser)
    problems: list[str] = []
    try:
        driver.command("POST", "/url", {"url": page.resolve().as_uri()})
        charts = driver.script("return Array.from(document.querySelectorAll('figure[data-chart]'))"
                               ".map(f => [f.dataset.chart, f.querySelectorAll('svg text').length])")
        for name, texts in charts:
            if not texts:
                problems.append(f"chart {name!r} has no drawing")
            element = driver.command("POST", "/element", {"using": "css selector",
                                                          "value": f"figure[data-chart='{name}']"})
            element_id = next(iter(element.values()))
            driver.command("POST", "/execute/sync", {"script": "arguments[0].scrollIntoView()", "args": [element]})
            png = base64.b64decode(driver.command("GET", f"/element/{element_id}/screenshot"))
            (out / f"{name}.png").write_bytes(shrink(png))
            print(f"{out / f'{name}.png'}  ({(out / f'{name}.png').stat().st_size // 1024} KB)")
        loaded = driver.script("return performance.getEntriesByType('resource').map(e => e.name)")
        problems += [f"the page loaded {url} (it must be self-contained)" for url in loaded]
        for entry in driver.command("POST", "/se/log", {"type": "browser"}) or []:
            if entry.get("level") in ("SEVERE", "ERROR"):
                problems.append(f"console error: {entry.get('message')}")
        if not charts:
            problems.append("the page has no charts")
    finally:
        driver.close()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="a prenet report (.json) or a page written from one (.html)")
    parser.add_argument("--out", type=Path, required=True, help="folder for NAME.png per chart")
    parser.add_argument("--page", type=Path,
                        help="where to write the page rendered from a report (default: a temp folder)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="prenet-page-") as folder:
        page = page_for(args.source, args.page or Path(folder) / "page.html")
        problems = screenshot_charts(page, args.out)
    for problem in problems:
        print(f"html_screenshots: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
