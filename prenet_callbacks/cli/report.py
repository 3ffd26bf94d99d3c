"""`prenet report`: re-render a saved run's report, optionally for other hardware, without the model.

    prenet report lightning_logs/version_0/prenet_report.json
    prenet report report.json --targets "8x H100" L4 A100     # project onto these instead
    prenet report report.json --targets default --json        # the default set, as JSON
    prenet report report.json --targets H100 --precision fp8  # the same run in FP8 training
    prenet report report.json --targets H100 --accumulate 8   # 8 micro-batches per optimizer step
    prenet report report.json --targets "8x H100" --activation-checkpointing full
    prenet report report.json --html report.html              # also a self-contained page with charts
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from prenet_callbacks.cli import UsageError
from prenet_callbacks.cli.projection_options import add_projection_options, projection_kwargs


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report", help="re-render a saved report, optionally for other hardware",
        description="Print a saved PreNeT report; --targets projects the measured run onto other hardware.")
    parser.add_argument("path", metavar="REPORT.json", help="a report written by PreNeTCallback")
    parser.add_argument("--targets", "-t", nargs="+", metavar="TARGET",
                        help="hardware such as A100 '8x H100' '4x8 H100 tp=8 pp=4' ('default' = the default set; "
                             "'none' = no table)")
    parser.add_argument("--predictor", metavar="PATH",
                        help="with --targets: predictor.json (or its folder) from `prenet train` instead of the shipped one")
    add_projection_options(parser)
    parser.add_argument("--precision", metavar="P",
                        help="with --targets: re-project the run at another training precision: 32-true, 16-mixed, "
                             "bf16-mixed, 16-true, bf16-true, or fp8 (torchao float8 training: Linear GEMMs in FP8; "
                             "FP8 GPUs only); default: the run's own")
    parser.add_argument("--accumulate", type=int, metavar="N",
                        help="with --targets: re-project each optimizer step as N micro-batches (gradient "
                             "accumulation: forward and backward N times, the optimizer once); default: the run's")
    parser.add_argument("--activation-checkpointing", dest="activation_checkpointing", choices=("full", "selective"),
                        help="with --targets: re-project with activation checkpointing of the run's repeated blocks "
                             "(read from its per-layer table): 'full' (each block re-runs its forward in backward) "
                             "or 'selective' (attention and every other matmul kept)")
    parser.add_argument("--channels-last", dest="channels_last", action="store_true",
                        help="with --precision: the run's convolutions take channels-last tensors (default: NCHW, "
                             "whose half-precision convolutions pay cuDNN's layout transforms)")
    parser.add_argument("--json", action="store_true", help="print the (re-projected) report as JSON")
    parser.add_argument("--out", metavar="FILE", help="also write the re-projected report to FILE")
    parser.add_argument("--width", type=int, default=None,
                        help="text width (default: the terminal's; piped, $COLUMNS, else 100)")
    parser.add_argument("--html", metavar="PAGE.html",
                        help="also write the report as one self-contained HTML page with charts")
    parser.set_defaults(func=run)


def _targets(names: list[str] | None) -> list[str] | None:
    from prenet_callbacks.projection.targets import target_names

    return target_names(names, "--targets")


def _check_html_option(page: str) -> None:
    """Fail before any work when the page cannot be made: a folder given."""
    if Path(page).is_dir():
        raise UsageError(f"--html {page}: is a directory; pass a file such as report.html")


def run(args: argparse.Namespace) -> int:
    from prenet_callbacks.projection import project_report
    from prenet_callbacks.outputs.render import render_text
    from prenet_callbacks.report import Report

    from prenet_callbacks.projection.pricing.predictor_source import load_predictor_option

    targets = _targets(args.targets)  # unknown names: exit 2 with the closest names, before reading anything
    if args.predictor is not None and args.targets is None:
        raise UsageError("--predictor applies to a re-projection: add --targets (e.g. --targets default)")
    options = projection_kwargs(args)
    if args.targets is None and any(getattr(args, k) != d for k, d in (("batch_convention", "per_device"),
                                                                       ("sharding", None), ("compile", "none"),
                                                                       ("cuda_graphs", False), ("provider", None),
                                                                       ("precision", None), ("accumulate", None),
                                                                       ("activation_checkpointing", None),
                                                                       ("channels_last", False))):
        raise UsageError("--batch-convention, --sharding, --compile, --cuda-graphs, --provider, --precision, "
                         "--accumulate, --activation-checkpointing and --channels-last apply to a re-projection: add "
                         "--targets "
                         "(e.g. --targets default)")
    if args.accumulate is not None and args.accumulate < 1:   # exits 2 before the report is read
        raise UsageError(f"--accumulate must be an integer >= 1 (micro-batches per optimizer step), got "
                         f"{args.accumulate}; pass e.g. --accumulate 4")
    if args.precision is not None:   # a bad name exits 2 before the report is read
        from prenet_callbacks.projection.ops.precision import parse_precision

        try:
            parse_precision(args.precision, "highest", conv_tf32=True, allow_fp8=True)
        except ValueError as error:
            raise UsageError(f"--precision: {error}") from None
    predictor = load_predictor_option(args.predictor, "--predictor")
    if args.width is not None and args.width < 40:
        raise UsageError("--width must be >= 40")
    if args.html is not None:
        _check_html_option(args.html)
    report = Report.load(Path(args.path))
    if args.targets is not None:
        project_report(report, targets, predictor=predictor, precision=args.precision, accumulate=args.accumulate,
                       activation_checkpointing=args.activation_checkpointing, channels_last=args.channels_last,
                       refuse_layouts=True, **options)
    if args.html is not None:
        from prenet_callbacks.html import ReportPageError, write_report_page

        try:
            page = write_report_page(report, args.html)
        except ReportPageError as error:
            raise UsageError(f"--html {args.html}: {error}") from None
        print(f"HTML report: {page} ({page.stat().st_size / 1024:,.0f} KB)", file=sys.stderr)
    if args.out:
        report.save(args.out)
    if args.json:
        print(report.to_json())
    else:
        print(render_text(report, width=args.width), end="")
    return 0
