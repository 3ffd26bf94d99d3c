"""Small transformers for the tensor/pipeline-parallel tests, built on ``meta`` (hand-countable shapes)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class GPTBlock(nn.Module):
    """Pre-norm block: fused QKV, SDPA (causal), out projection, GELU MLP."""

    def __init__(self, hidden: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.fc1, self.fc2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(out.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class LlamaBlock(nn.Module):
    """Separate square q / o projections, a rotary-like pointwise step on q and k, gated MLP, RMS-style norms."""

    def __init__(self, hidden: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(hidden, ffn, bias=False), nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)
        self.n1, self.n2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        y = self.n1(x)
        q, k, v = (p(y).view(b, s, self.heads, h // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        q, k = q * 0.5 + q.flip(-1), k * 0.5 + k.flip(-1)      # rotary-like: pointwise work on q and k
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(out.transpose(1, 2).reshape(b, s, h))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class TinyLM(nn.Module):
    """Token and position embeddings, `layers` blocks, a final norm and an untied LM head."""

    def __init__(self, vocab: int = 128, hidden: int = 64, layers: int = 2, heads: int = 4, ffn: int = 256,
                 seq: int = 16, block: type = GPTBlock) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(block(hidden, heads, ffn) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def tiny_lm(**kwargs) -> TinyLM:
    with torch.device("meta"):
        return TinyLM(**kwargs)


def ids(batch: int = 2, seq: int = 16) -> torch.Tensor:
    return torch.empty(batch, seq, dtype=torch.long, device="meta")
