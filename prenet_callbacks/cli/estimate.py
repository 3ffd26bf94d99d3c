"""`prenet estimate`: project a model's training step onto other hardware, before training.

    prenet estimate mypkg.models:resnet50 --input 1024,3,224,224 --targets A100 "8x H100" \\
        --precision bf16-mixed --steps 50000
    prenet estimate mypkg.models:bert_large --input 256,384:int64 --json

The callable is called inside ``torch.device("meta")``: no weights are allocated. Each ``--input``
is one positional input (``SHAPE[:DTYPE]``, shape as ``256,384`` or ``256x384``); ``name=SHAPE[:DTYPE]``
passes it by keyword. Bad input exits with code 2 and one line on stderr.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

from prenet_callbacks.cli import UsageError
from prenet_callbacks.cli.projection_options import add_projection_options, projection_kwargs

_DTYPES = {"float32": "float32", "float": "float32", "fp32": "float32", "float16": "float16", "half": "float16",
           "fp16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16", "int64": "int64", "long": "int64",
           "int32": "int32", "int": "int32", "bool": "bool", "uint8": "uint8", "float64": "float64"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "estimate", help="project a model's training step onto other hardware (no training)",
        description="Capture one training step of MODEL on the meta device and project it onto targets.")
    parser.add_argument("model", metavar="MODULE:CALLABLE", help="import path of a callable returning the nn.Module")
    parser.add_argument("--input", "-i", dest="inputs", action="append", required=True, metavar="[NAME=]SHAPE[:DTYPE]",
                        help="one model input per device, e.g. 64,3,224,224 or input_ids=8x512:int64 (repeatable)")
    parser.add_argument("--targets", "-t", nargs="+", metavar="TARGET",
                        help="hardware such as A100 '8x H100 SXM5' '4x8 H100' (4 nodes of 8) '2x8 H100 @ 200G', "
                             "with a layout '4x8 H100 tp=8 pp=4 microbatches=16' (docs/model-parallel.md) "
                             "(default: the documented default set)")
    parser.add_argument("--precision", default="32-true",
                        help="32-true, 16-mixed, bf16-mixed, 16-true, bf16-true, or fp8 (torchao float8 training: "
                             "Linear GEMMs in FP8; FP8 GPUs only) (default 32-true)")
    parser.add_argument("--matmul-precision", dest="matmul_precision", choices=("highest", "high", "medium"),
                        help="torch.set_float32_matmul_precision for 32-true (default: this process's setting)")
    parser.add_argument("--optimizer", default="adamw",
                        help="adamw, adam, sgd, sgd-momentum, none (PyTorch's default implementation on each target), "
                             "or named: adamw-fused, adamw-foreach, adamw-forloop, ...")
    parser.add_argument("--steps", type=int, help="optimizer steps of the run (gives totals and costs)")
    parser.add_argument("--model-kwargs", default="{}", metavar="JSON", help="keyword arguments for the callable")
    parser.add_argument("--zero-stage", type=int, choices=(0, 1, 2, 3), default=0,
                        help="DeepSpeed ZeRO stage (or --sharding)")
    add_projection_options(parser)
    parser.add_argument("--activation-checkpointing", dest="activation_checkpointing", choices=("full", "selective"),
                        help="activation checkpointing of the model's repeated blocks: 'full' (each block re-runs "
                             "its forward in backward) or 'selective' (attention and every other matmul kept)")
    parser.add_argument("--accumulate", type=int, default=1, metavar="N",
                        help="gradient accumulation: micro-batches (the --input) per optimizer step (default 1)")
    parser.add_argument("--channels-last", dest="channels_last", action="store_true", default=None,
                        help="the convolutions run channels-last on the targets (default: as the model's tensors); "
                             "NCHW half-precision convolutions pay cuDNN's layout transforms")
    parser.add_argument("--predictor", metavar="PATH",
                        help="predictor.json (or its folder) from `prenet train` to use instead of the shipped one")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run)


def parse_input(text: str):
    """``[NAME=]SHAPE[:DTYPE]`` -> (name or None, shape tuple, torch dtype)."""
    import torch

    name = None
    if "=" in text:
        name, text = text.split("=", 1)
        name = name.strip()
        if not name.isidentifier():
            raise UsageError(f"--input {text!r}: {name!r} is not a keyword name")
    shape_text, _, dtype_text = text.partition(":")
    dtype_key = _DTYPES.get((dtype_text or "float32").strip().lower())
    if dtype_key is None:
        raise UsageError(f"--input: unknown dtype {dtype_text!r}; use one of {', '.join(sorted(set(_DTYPES.values())))}")
    parts = [p for p in shape_text.replace("x", ",").replace("X", ",").split(",") if p.strip()]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise UsageError(f"--input: shape {shape_text!r} is not a list of integers such as 64,3,224,224") from None
    if not shape or any(d < 1 for d in shape):
        raise UsageError(f"--input: shape {shape_text!r} must have positive dimensions")
    return name, shape, getattr(torch, dtype_key)


def load_callable(path: str):
    """Import ``module:callable`` (the current directory is importable)."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"model {path!r} must be written module:callable, e.g. mypkg.models:resnet50")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UsageError(f"cannot import {module_name!r}: {error}") from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise UsageError(f"{module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise UsageError(f"{path!r} is not callable")
    return target


def run(args: argparse.Namespace) -> int:
    import torch

    from prenet_callbacks.projection.estimation import estimate
    from prenet_callbacks.projection.ops.capture import CaptureError
    from prenet_callbacks.projection.targets import resolve_targets

    from prenet_callbacks.projection.pricing.predictor_source import load_predictor_option

    resolve_targets(args.targets)  # unknown names and a bad predictor fail before the model is built
    predictor = load_predictor_option(args.predictor, "--predictor")
    try:
        kwargs = json.loads(args.model_kwargs)
    except json.JSONDecodeError as error:
        raise UsageError(f"--model-kwargs is not JSON: {error}") from None
    if not isinstance(kwargs, dict):
        raise UsageError("--model-kwargs must be a JSON object")
    if args.steps is not None and args.steps < 1:
        raise UsageError("--steps must be >= 1")
    factory = load_callable(args.model)
    positional, keyword = [], {}
    for text in args.inputs:
        name, shape, dtype = parse_input(text)
        tensor = torch.empty(shape, dtype=dtype, device="meta")
        if name:
            keyword[name] = tensor
        else:
            positional.append(tensor)
    if positional and keyword:
        raise UsageError("give inputs either all positional or all by name")
    call = f"{args.model}(**{json.dumps(kwargs)})" if kwargs else f"{args.model}()"
    try:
        with torch.device("meta"):
            model = factory(**kwargs)
    except Exception as error:  # noqa: BLE001 - the user's code: any failure is bad input here
        text = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        raise UsageError(f"building the model with {call} failed ({text}); MODULE:CALLABLE must be a callable that "
                         "returns a torch.nn.Module, and --model-kwargs must hold the keyword arguments it takes"
                         ) from None
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"{call} returned {type(model).__name__}, not a torch.nn.Module; point MODULE:CALLABLE "
                         "at a model class or a function that builds one")
    example = keyword if keyword else (positional[0] if len(positional) == 1 else tuple(positional))
    if args.zero_stage and args.sharding:
        raise UsageError("give --zero-stage or --sharding, not both (e.g. --sharding zero3)")
    try:
        result = estimate(model, example, targets=args.targets, precision=args.precision, optimizer=args.optimizer,
                          float32_matmul_precision=args.matmul_precision, steps=args.steps,
                          deepspeed={"zero_stage": args.zero_stage} if args.zero_stage else None,
                          predictor=predictor, channels_last=args.channels_last, accumulate=args.accumulate,
                          activation_checkpointing=args.activation_checkpointing,
                          **projection_kwargs(args))
    except CaptureError as error:
        raise UsageError(str(error)) from None
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, allow_nan=False))
    else:
        print(result.table(), end="")
    return 0
