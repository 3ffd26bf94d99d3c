"""Demo: a raw DeepSpeed training loop with PreNeT attached (one CPU process, gloo, under a minute).

    python examples/deepspeed_raw.py [--zero 2] [--precision bf16] [--accumulate 2] [--steps 1000]

A small MLP regressor on synthetic data, trained by a plain ``engine(x)`` / ``engine.backward`` /
``engine.step`` loop. A few optimizer steps in, PreNeT prints its prediction of the whole run; at
the end the script compares it with the measured time. On a GPU machine launch it with the
``deepspeed`` launcher instead and drop ``init_single_process_cpu``.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("DS_ACCELERATOR", "cpu")  # before deepspeed is imported

import torch
from torch import nn

from integrations.deepspeed_cpu import init_single_process_cpu
from prenet_callbacks.units import format_duration


def make_model(width: int) -> nn.Module:
    """An MLP with in-place ReLUs and LayerNorm: cheap on CPU, a few hundred thousand parameters."""
    return nn.Sequential(nn.Linear(64, width), nn.LayerNorm(width), nn.ReLU(inplace=True),
                         nn.Linear(width, width), nn.ReLU(inplace=True), nn.Linear(width, 1))


def deepspeed_config(args: argparse.Namespace) -> dict:
    config: dict = {
        "train_micro_batch_size_per_gpu": args.batch_size,
        "gradient_accumulation_steps": args.accumulate,
        # torch_adam: PyTorch's Adam, no FusedAdam JIT build (about a minute on first use)
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
        "zero_optimization": {"stage": args.zero},
        "steps_per_print": 10**9,
    }
    if args.precision == "bf16":
        config["bf16"] = {"enabled": True}
    elif args.precision == "fp16":
        config["fp16"] = {"enabled": True, "initial_scale_power": 12}
    return config


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zero", type=int, default=2, choices=[0, 1, 2, 3], help="ZeRO stage")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--accumulate", type=int, default=2, help="gradient accumulation steps")
    parser.add_argument("--steps", type=int, default=1000, help="optimizer steps in the whole run")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (1 keeps timing steady on a small shared machine)")
    parser.add_argument("--targets", nargs="*", default=None, help="other hardware, e.g. A100 '8x H100'")
    parser.add_argument("--out", default="runs/deepspeed_demo", help="report directory")
    args = parser.parse_args(argv)

    init_single_process_cpu()  # one rank, gloo, no shared-memory op build
    import deepspeed

    from integrations.deepspeed import attach

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = make_model(args.width)
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                      config=deepspeed_config(args))
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.precision]
    target_w = torch.randn(64, 1)

    start = time.perf_counter()
    prenet = attach(engine, total_steps=args.steps, report_path=f"{args.out}/prenet_report.json",
                    targets=args.targets)
    while engine.global_steps < args.steps:  # the user's loop: PreNeT needs no change to it
        x = torch.randn(args.batch_size, 64)
        y = x @ target_w
        loss = nn.functional.mse_loss(engine(x.to(dtype)).float(), y)
        engine.backward(loss)
        engine.step()
    measured = time.perf_counter() - start

    report = prenet.report
    if report.actual:  # PreNeT's own last line compared its first prediction with the time taken
        print(f"Loop wall time {format_duration(measured)}; final loss {loss.item():.4f}.")
        print(f"Report: {args.out}/prenet_report.json  (re-render: prenet report {args.out}/prenet_report.json)")
    return report.to_dict()


if __name__ == "__main__":
    main()
