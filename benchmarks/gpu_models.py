"""Models for the GPU acceptance run, built from configs (no downloads, no torchvision).

ResNet-50 is written out here (torchvision's layout: bottleneck blocks 3-4-6-3); BERT-base and
GPT-2-small come from `transformers` configs when it is installed, else from GPT-2-shaped modules
of our own (pre-norm blocks with `scaled_dot_product_attention`). Each builder returns
``(model, make_batch, loss_fn)`` where ``make_batch(batch, device)`` gives one input batch and
``loss_fn(output)`` the scalar loss, the same for a real training step and for `estimate()`.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn
from torch.nn import functional as F

Builder = Callable[[], tuple[nn.Module, Callable[[int, Any], Any], Callable[[Any], torch.Tensor]]]


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        c_out = width * self.expansion
        self.conv1, self.bn1 = nn.Conv2d(c_in, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, c_out, 1, bias=False), nn.BatchNorm2d(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = F.relu(self.bn2(self.conv2(out)), inplace=True)
        out = self.bn3(self.conv3(out))
        return F.relu(out + (x if self.down is None else self.down(x)), inplace=True)


class ResNet(nn.Module):
    def __init__(self, layers: tuple[int, ...] = (3, 4, 6, 3), classes: int = 1000, base: int = 64) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, base, 7, 2, 3, bias=False), nn.BatchNorm2d(base), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, c_in = [], base
        for i, count in enumerate(layers):
            width = base * 2**i
            for j in range(count):
                blocks.append(Bottleneck(c_in, width, 2 if j == 0 and i > 0 else 1))
                c_in = width * Bottleneck.expansion
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(c_in, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


class Block(nn.Module):
    """A pre-norm transformer block (GPT-2 layout) with fused attention."""

    def __init__(self, dim: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, s, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    """GPT-2-shaped: token + position embeddings, blocks, final norm, tied LM head."""

    def __init__(self, vocab: int = 50257, dim: int = 768, heads: int = 12, layers: int = 12, seq: int = 1024,
                 causal: bool = True) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, causal) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.ln(x) @ self.tok.weight.t()


def resnet50() -> tuple:
    def batch(n: int, device: Any) -> torch.Tensor:
        return torch.randn(n, 3, 224, 224, device=device)

    return ResNet(), batch, lambda out: out.float().logsumexp(-1).mean()


def resnet50_channels_last() -> tuple:
    """ResNet-50 with its weights and inputs channels-last (NHWC): no layout transform around a half-precision
    convolution (`prenet_callbacks/projection/ops/layout.py`), so beside `resnet50` it measures what they cost."""
    model, batch, loss_fn = resnet50()

    def nhwc(n: int, device: Any) -> torch.Tensor:
        return batch(n, device).contiguous(memory_format=torch.channels_last)

    return model.to(memory_format=torch.channels_last), nhwc, loss_fn


def _token_batch(seq: int, vocab: int) -> Callable[[int, Any], dict]:
    def batch(n: int, device: Any) -> dict:
        ids = torch.randint(0, vocab, (n, seq), device=device)
        return {"input_ids": ids, "labels": ids}

    return batch


def gpt2_small(seq: int = 1024) -> tuple:
    try:
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(n_positions=seq, attn_implementation="sdpa")
        return GPT2LMHeadModel(config), _token_batch(seq, config.vocab_size), lambda out: out.loss
    except ImportError:
        model = TinyGPT(seq=seq)

        def batch(n: int, device: Any) -> torch.Tensor:
            return torch.randint(0, 50257, (n, seq), device=device)

        return model, batch, lambda out: out.float().logsumexp(-1).mean()


def bert_base(seq: int = 512) -> tuple:
    try:
        from transformers import BertConfig, BertForMaskedLM

        config = BertConfig(attn_implementation="sdpa")
        return BertForMaskedLM(config), _token_batch(seq, config.vocab_size), lambda out: out.loss
    except ImportError:
        model = TinyGPT(vocab=30522, seq=seq, causal=False)

        def batch(n: int, device: Any) -> torch.Tensor:
            return torch.randint(0, 30522, (n, seq), device=device)

        return model, batch, lambda out: out.float().logsumexp(-1).mean()


def tiny_gpt() -> tuple:
    """A GPT-2-shaped model small enough for the CPU smoke run."""
    model = TinyGPT(vocab=512, dim=64, heads=4, layers=2, seq=64)

    def batch(n: int, device: Any) -> torch.Tensor:
        return torch.randint(0, 512, (n, 64), device=device)

    return model, batch, lambda out: out.float().logsumexp(-1).mean()


ESTIMATE_MODELS: dict[str, tuple[Builder, tuple[int, int]]] = {
    "resnet50": (resnet50, (64, 128)),
    "resnet50_channels_last": (resnet50_channels_last, (64, 128)),
    "bert_base": (bert_base, (16, 32)),
    "gpt2_small": (gpt2_small, (8, 16)),
}
SMOKE_MODELS: dict[str, tuple[Builder, tuple[int, int]]] = {"tiny_gpt": (tiny_gpt, (4, 8))}
