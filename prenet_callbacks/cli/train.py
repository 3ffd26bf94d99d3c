"""`prenet train`: train the per-op predictor from measurements (delegates to `predictor_models.train`)."""
from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    from predictor_models import train as impl

    parser = subparsers.add_parser("train", help="train the per-op predictor from measurements", description=(impl.__doc__ or "").strip().splitlines()[0])
    impl.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from predictor_models import train as impl

    return impl.run(args)
