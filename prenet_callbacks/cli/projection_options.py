"""Command-line options that say how the targets run, shared by `prenet estimate` and `prenet report`."""
from __future__ import annotations

import argparse
from typing import Any

from prenet_callbacks.projection.pricing.host import COMPILE_MODES
from prenet_callbacks.projection.parallel.data_parallel import SHARDINGS
from prenet_callbacks.projection.rows.project import BATCH_CONVENTIONS


def add_projection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-convention", dest="batch_convention", choices=BATCH_CONVENTIONS,
                        default="per_device",
                        help="multi-GPU targets: 'per_device' keeps each GPU's batch (default), 'global' keeps the "
                             "global batch and splits it over the target's GPUs")
    parser.add_argument("--sharding", choices=SHARDINGS,
                        help="the targets' set-up: none, zero1, zero2, zero3 or fsdp (default: as the run)")
    parser.add_argument("--compile", choices=COMPILE_MODES, default="none",
                        help="torch.compile mode on the targets (default: none, eager)")
    parser.add_argument("--cuda-graphs", dest="cuda_graphs", action="store_true",
                        help="the step is replayed as a CUDA graph on the targets")
    parser.add_argument("--provider", metavar="NAME",
                        help="price the targets with one provider's listings (e.g. Lambda, GCP, AWS, CoreWeave, "
                             "RunPod; case-insensitive); default: the cheapest listing matching each target's GPU "
                             "count; 'prenet hardware NAME' lists a GPU's listings")


def projection_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return {"batch_convention": args.batch_convention, "sharding": args.sharding, "compile": args.compile,
            "cuda_graphs": args.cuda_graphs, "provider": args.provider}
