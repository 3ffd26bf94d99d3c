"""`prenet collect`: measure single ops on this CUDA GPU for retraining (delegates to `predictor_models.collect`)."""
from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    from predictor_models import collect as impl

    parser = subparsers.add_parser("collect", help="measure single ops on this CUDA GPU for retraining", description=(impl.__doc__ or "").strip().splitlines()[0])
    impl.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from predictor_models import collect as impl

    return impl.run(args)
