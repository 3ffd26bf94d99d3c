"""A zoo of small models that exercise the awkward corners of profiling, for any test to import.

Each entry of `ZOO` builds ``(model, batch_fn)``; ``batch_fn()`` returns ``(inputs, target)``
where ``inputs`` is a tuple of positional arguments and ``target`` feeds `loss_fn`. Models are
tiny so a few CPU steps take milliseconds. `train_steps` runs plain SGD steps.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

Batch = tuple[tuple[torch.Tensor, ...], torch.Tensor]
ZooEntry = Callable[[], tuple[nn.Module, Callable[[], Batch]]]


def _classification_batch(*shape: int, classes: int, seed: int = 0) -> Callable[[], Batch]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=gen)
    y = torch.randint(0, classes, (shape[0],), generator=gen)
    return lambda: ((x,), y)


class MLP(nn.Module):
    """Linear(512, 512) at batch 64 between two others, so its input requires grad."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(32, 512)
        self.hidden = nn.Linear(512, 512)
        self.out = nn.Linear(512, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.inp(x))
        h = self.hidden(h)
        h = torch.tanh(h) * 0.5      # functional code: belongs to the MLP itself
        return self.out(h)


class InplaceCNN(nn.Module):
    """Conv + BatchNorm + ReLU(inplace=True) + pooling: in-place ops break full backward hooks."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2),
            nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))


class TiedLM(nn.Module):
    """Embedding and decoder share one weight; one block is called twice (shared module)."""

    def __init__(self, vocab: int = 50, dim: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.block = nn.Linear(dim, dim)
        self.decoder = nn.Linear(dim, vocab)
        self.decoder.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)
        h = torch.relu(self.block(h))
        h = torch.relu(self.block(h))      # same module, second call
        return self.decoder(h).mean(1)


class TransformerBlock(nn.Module):
    """nn.MultiheadAttention + LayerNorm + MLP, then F.scaled_dot_product_attention directly."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm2(x)).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)   # functional: the block's
        x = x + a.transpose(1, 2).reshape(b, s, d)
        x = x + self.mlp(x)
        return self.head(x.mean(1))


class RecurrentNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.gru = nn.GRU(16, 16, batch_first=True)
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(x)
        h, _ = self.gru(h)
        return self.head(h[:, -1])


class _ScaledSquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x * 0.5

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * x


class CustomFunctionNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.out = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(_ScaledSquare.apply(self.fc(x)))


class CheckpointNet(nn.Module):
    """Two blocks under activation checkpointing, reentrant and non-reentrant."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(16, 32)
        self.block1 = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32))
        self.block2 = nn.Sequential(nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 32))
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        h = checkpoint(self.block1, h, use_reentrant=False)
        h = checkpoint(self.block2, h, use_reentrant=True)
        return self.head(h)


class CompiledSubmoduleNet(nn.Module):
    """`encoder` is a torch.compile'd submodule (aot_eager backend: no C++ toolchain needed)."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = torch.compile(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32)),
                                     backend="aot_eager")
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


def _seeded(build: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        torch.manual_seed(0)
        return build()
    return make


ZOO: dict[str, ZooEntry] = {
    "mlp": lambda: (_seeded(MLP)(), _classification_batch(64, 32, classes=10)),
    "inplace_cnn": lambda: (_seeded(InplaceCNN)(), _classification_batch(4, 3, 16, 16, classes=10)),
    "tied_lm": lambda: (_seeded(TiedLM)(), lambda: ((torch.arange(24).view(4, 6) % 50,),
                                                    torch.arange(4) % 50)),
    "transformer": lambda: (_seeded(TransformerBlock)(), _classification_batch(2, 8, 32, classes=10)),
    "recurrent": lambda: (_seeded(RecurrentNet)(), _classification_batch(4, 5, 8, classes=10)),
    "custom_function": lambda: (_seeded(CustomFunctionNet)(), _classification_batch(8, 16, classes=10)),
    "checkpoint": lambda: (_seeded(CheckpointNet)(), _classification_batch(8, 16, classes=10)),
    "compiled_submodule": lambda: (_seeded(CompiledSubmoduleNet)(),
                                   _classification_batch(8, 16, classes=10)),
}


def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(output, target)


def train_steps(model: nn.Module, batch_fn: Callable[[], Batch], steps: int, *,
                lr: float = 0.05, accumulate: int = 1, on_step: Callable[[], None] | None = None,
                optimizer: torch.optim.Optimizer | None = None,
                before_optimizer: Callable[[], None] | None = None) -> torch.optim.Optimizer:
    """Run `steps` SGD optimizer steps of `accumulate` micro-batches each; returns the optimizer.

    ``before_optimizer`` runs just before each ``optimizer.step()``, ``on_step`` after it.
    """
    opt = optimizer or torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for _ in range(steps):
        for _ in range(accumulate):
            inputs, target = batch_fn()
            loss = loss_fn(model(*inputs), target) / accumulate
            loss.backward()
        if before_optimizer is not None:
            before_optimizer()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if on_step is not None:
            on_step()
    return opt
