"""Demo: a plain PyTorch training loop with PreNeT's `Tracker` (CPU, well under a minute).

    python examples/plain_loop.py [--steps 800] [--eval-every 200] [--save-every 400] [--accelerate]

A small transformer encoder regresses a synthetic target; the loop evaluates every
``--eval-every`` optimizer steps and saves every ``--save-every``. The only PreNeT lines are the
`Tracker`, ``tracker.step()`` after each optimizer step, the ``validation()`` / ``checkpoint()``
blocks and ``close()``. With ``--accelerate`` the same loop runs under ``accelerate.Accelerator``
(gradient accumulation 2), and the tracker reads the world size, device and precision from it.
"""
from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

import torch
from torch import nn


class Regressor(nn.Module):
    """Two transformer encoder layers over 32 tokens of 64 features, then a linear head."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=2 * width, batch_first=True, dropout=0.1)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x).mean(dim=1))


def batches(batch_size: int, width: int, *, seed: int):
    """An endless stream of (inputs, targets)."""
    generator = torch.Generator().manual_seed(seed)
    weights = torch.randn(width, 1, generator=torch.Generator().manual_seed(7))
    while True:
        x = torch.randn(batch_size, 32, width, generator=generator)
        yield x, x.mean(dim=1) @ weights


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=800, help="optimizer steps in the run")
    parser.add_argument("--eval-every", type=int, default=200)
    parser.add_argument("--save-every", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--accelerate", action="store_true", help="run under accelerate.Accelerator (accumulation 2)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 keeps timing steady)")
    parser.add_argument("--targets", nargs="*", default=None, help="other hardware, e.g. A100 '8x H100'")
    parser.add_argument("--out", default="runs/plain_loop_demo", help="report and checkpoint directory")
    args = parser.parse_args(argv)

    from prenet_callbacks import Tracker

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = Regressor(args.width)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    accelerator = None
    accumulate = 1
    if args.accelerate:
        from accelerate import Accelerator

        accumulate = 2
        accelerator = Accelerator(cpu=not torch.cuda.is_available(), gradient_accumulation_steps=accumulate)
        model, optimizer = accelerator.prepare(model, optimizer)
    device = accelerator.device if accelerator is not None else torch.device("cpu")
    train, evaluation = batches(args.batch_size, args.width, seed=1), batches(args.batch_size, args.width, seed=2)
    eval_batches = 20

    tracker = Tracker(total_steps=args.steps, model=model, optimizer=optimizer, accelerator=accelerator,
                      eval_every=args.eval_every, eval_batches=eval_batches, checkpoint_every=args.save_every,
                      report_path=out / "prenet_report.json", targets=args.targets)
    step = 0
    while step < args.steps:
        x, y = (t.to(device) for t in next(train))
        cycle = accelerator.accumulate(model) if accelerator is not None else contextlib.nullcontext()
        with cycle:
            loss = nn.functional.mse_loss(model(x), y)
            accelerator.backward(loss) if accelerator is not None else loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        tracker.step()  # ignored inside an accumulation cycle (accelerator.sync_gradients is False)
        if accelerator is not None and not accelerator.sync_gradients:
            continue
        step += 1
        if step % args.eval_every == 0:
            with tracker.validation(), torch.no_grad():
                model.eval()
                val_loss = sum(nn.functional.mse_loss(model(x.to(device)), y.to(device)).item()
                               for x, y in (next(evaluation) for _ in range(eval_batches))) / eval_batches
                model.train()
            print(f"step {step}: validation loss {val_loss:.4f}")
        if step % args.save_every == 0:
            with tracker.checkpoint():
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, out / "checkpoint.pt")
    report = tracker.close()

    if report.actual and tracker.run.session.outputs.is_rank_zero:
        # PreNeT's own last line compared its first prediction with the time the loop took
        print(f"Report: {out}/prenet_report.json  (re-render: prenet report {out}/prenet_report.json)")
    return report.to_dict()


if __name__ == "__main__":
    main()
