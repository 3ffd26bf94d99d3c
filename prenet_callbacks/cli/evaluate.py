"""`prenet evaluate`: leave-one-GPU-out evaluation of the predictor vs the PreNeT baseline (delegates to `predictor_models.evaluate`)."""
from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    from predictor_models import evaluate as impl

    parser = subparsers.add_parser("evaluate", help="leave-one-GPU-out evaluation of the predictor vs the PreNeT baseline", description=(impl.__doc__ or "").strip().splitlines()[0])
    impl.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from predictor_models import evaluate as impl

    return impl.run(args)
