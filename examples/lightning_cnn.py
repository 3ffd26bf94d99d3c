"""Demo: a small CNN on synthetic images, trained with PreNeTCallback (about a minute on CPU).

    python examples/lightning_cnn.py [--epochs 12] [--targets A100 "8x H100"]

Validation and a checkpoint every epoch. A few steps in, PreNeT prints its prediction of the whole
fit; at the end it prints the measured time and the first prediction's error.
"""
from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

try:  # the unified package, else the standalone one: PreNeTCallback works with both
    import lightning.pytorch as pl
except ImportError:  # pragma: no cover
    import pytorch_lightning as pl

from prenet_callbacks import PreNeTCallback
from prenet_callbacks.units import format_duration


class SmallCNN(pl.LightningModule):
    """Conv-BN-ReLU(inplace) blocks, max-pooling and a linear head: a CIFAR-sized classifier."""

    def __init__(self, width: int = 32, classes: int = 10, lr: float = 0.05) -> None:
        super().__init__()
        self.save_hyperparameters()

        def block(c_in: int, c_out: int) -> nn.Sequential:
            return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
                                 nn.ReLU(inplace=True), nn.MaxPool2d(2))

        self.features = nn.Sequential(block(3, width), block(width, 2 * width), block(2 * width, 4 * width))
        self.head = nn.Linear(4 * width * 4 * 4, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        images, labels = batch
        loss = nn.functional.cross_entropy(self(images), labels)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        images, labels = batch
        logits = self(images)
        self.log("val_loss", nn.functional.cross_entropy(logits, labels), prog_bar=True)
        self.log("val_acc", (logits.argmax(1) == labels).float().mean())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)


def synthetic_images(n: int, classes: int = 10, seed: int = 0) -> TensorDataset:
    """Random 3x32x32 images whose class shifts the mean, so the loss can actually fall."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (n,), generator=generator)
    images = torch.randn(n, 3, 32, 32, generator=generator) + labels.view(-1, 1, 1, 1) / classes
    return TensorDataset(images, labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--train-size", type=int, default=6144)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--targets", nargs="*", default=None, help="other hardware, e.g. A100 '8x H100'")
    parser.add_argument("--out", default="runs/demo", help="log, checkpoint and report directory")
    args = parser.parse_args()

    pl.seed_everything(0, verbose=False)
    train = DataLoader(synthetic_images(args.train_size), batch_size=args.batch_size, shuffle=True,
                       num_workers=args.workers, persistent_workers=args.workers > 0)
    val = DataLoader(synthetic_images(1024, seed=1), batch_size=256, num_workers=args.workers,
                     persistent_workers=args.workers > 0)
    prenet = PreNeTCallback(targets=args.targets, report_path=f"{args.out}/prenet_report.json")
    trainer = pl.Trainer(
        max_epochs=args.epochs,
        accelerator="auto",
        devices=1,
        default_root_dir=args.out,
        callbacks=[prenet, pl.callbacks.ModelCheckpoint(dirpath=f"{args.out}/checkpoints", save_last=True)],
        enable_progress_bar=False,
        log_every_n_steps=20,
    )
    start = time.perf_counter()
    trainer.fit(SmallCNN(), train, val)
    measured = time.perf_counter() - start
    # PreNeT printed its panel a few steps in and a closing line ("the fit took ...; predicted ...")
    print(f"trainer.fit() wall time {format_duration(measured)}. "
          f"Report: {args.out}/prenet_report.json (re-render: prenet report {args.out}/prenet_report.json)")


if __name__ == "__main__":
    main()
