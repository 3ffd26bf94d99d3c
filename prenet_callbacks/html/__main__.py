"""Draw one page from a report file: ``python -m prenet_callbacks.html REPORT.json PAGE.html``.

What `PagePublisher` runs in a separate process during training (``--remove-input`` deletes the
report snapshot it was given). `prenet report REPORT.json --html PAGE.html` is the command for people.
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from prenet_callbacks.html.page import write_report_page
from prenet_callbacks.report import Report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m prenet_callbacks.html", description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("page", type=Path)
    parser.add_argument("--remove-input", action="store_true", help="delete REPORT.json once read")
    parser.add_argument("--errors", type=Path, help="this process's error file: removed when the page is written")
    args = parser.parse_args(argv)
    # stopped by a newer page: unwind, so that the atomic write removes its temporary file
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    try:
        report = Report.load(args.report)
        if args.remove_input:
            args.report.unlink(missing_ok=True)
        write_report_page(report, args.page)
        if args.errors is not None:
            args.errors.unlink(missing_ok=True)   # nothing to report: leave no empty file in the run folder
    except Exception as error:  # noqa: BLE001 - one line for the parent, which raises it as a warning
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
