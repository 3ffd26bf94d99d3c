"""Plain-PyTorch versions of the models behind the public whole-model measurements.

Built on ``meta`` by the accuracy benchmark (no weights are allocated). They follow the measured
implementations where it changes the op mix: torchvision ResNets; HuggingFace BERT / GPT-2 / OPT
with *eager* attention (matmul, scale, mask, softmax, dropout, matmul), as in NeuSight's PyTorch 2.1
runs; GPT-2's tanh-approximated GELU ("gelu_new") as its separate pointwise ops.
"""
from __future__ import annotations

import math

import torch
from torch import nn


# ---------------------------------------------------------------- ResNet (torchvision layout)
class _Basic(nn.Module):
    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != planes:
            self.down = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.down is None else self.down(x)))


class _Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != planes * 4:
            self.down = nn.Sequential(nn.Conv2d(cin, planes * 4, 1, stride, bias=False), nn.BatchNorm2d(planes * 4))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self, block, layers: list[int], num_classes: int = 1000, cifar: bool = False) -> None:
        super().__init__()
        self.cin = 64
        if cifar:  # the CIFAR-10 variant Gavel trains: 3x3 stem, no max-pool
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True))
        else:
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(3, 2, 1))
        stages = []
        for i, n in enumerate(layers):
            planes = 64 * 2 ** i
            blocks = []
            for j in range(n):
                blocks.append(block(self.cin, planes, 2 if (j == 0 and i > 0) else 1))
                self.cin = planes * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(self.cin, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.stages(self.stem(x))), 1))


def resnet18(num_classes: int = 10, cifar: bool = True) -> ResNet:
    return ResNet(_Basic, [2, 2, 2, 2], num_classes, cifar)


def resnet50(num_classes: int = 1000) -> ResNet:
    return ResNet(_Bottleneck, [3, 4, 6, 3], num_classes)


def resnet34(num_classes: int = 1000) -> ResNet:
    return ResNet(_Basic, [3, 4, 6, 3], num_classes)


def resnet101(num_classes: int = 1000) -> ResNet:
    return ResNet(_Bottleneck, [3, 4, 23, 3], num_classes)


def resnet152(num_classes: int = 1000) -> ResNet:
    return ResNet(_Bottleneck, [3, 8, 36, 3], num_classes)


# ---------------------------------------------------------------- VGG-16, MobileNetV2 (torchvision layout)
def vgg16(num_classes: int = 1000) -> nn.Module:
    layers: list[nn.Module] = []
    cin = 3
    for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU(inplace=True)]
            cin = v
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(7), nn.Flatten(),
                         nn.Linear(512 * 49, 4096), nn.ReLU(True), nn.Dropout(),
                         nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(), nn.Linear(4096, num_classes))


class _InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True)]
        layers += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
                   nn.ReLU6(inplace=True), nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


def mobilenet_v2(num_classes: int = 1000) -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6(inplace=True)]
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        for i in range(n):
            layers.append(_InvertedResidual(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6(inplace=True),
               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(1280, num_classes)]
    return nn.Sequential(*layers)


# ---------------------------------------------------------------- Transformers (HF layout, eager attention)
class _GeluNew(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class _Block(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, act: str, pre_norm: bool, causal: bool) -> None:
        super().__init__()
        self.heads, self.pre_norm, self.causal = heads, pre_norm, causal
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.act = {"gelu": nn.GELU(), "gelu_new": _GeluNew(), "relu": nn.ReLU()}[act]
        self.drop = nn.Dropout(0.1)

    def attention(self, x):
        b, s, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (t.view(b, s, h, d // h).permute(0, 2, 1, 3) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // h)
        if self.causal:
            mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
            scores = torch.where(mask, scores, torch.full_like(scores, -1e4))
        probs = self.drop(torch.softmax(scores, dim=-1))
        out = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(b, s, d)
        return self.drop(self.proj(out))

    def mlp(self, x):
        return self.drop(self.fc2(self.act(self.fc1(x))))

    def forward(self, x):
        if self.pre_norm:
            x = x + self.attention(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attention(x))
        return self.ln2(x + self.mlp(x))


class LanguageModel(nn.Module):
    def __init__(self, vocab: int, d: int, layers: int, heads: int, ffn: int, positions: int, act: str,
                 pre_norm: bool, causal: bool, bert_head: bool = False) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(positions, d)
        self.ln_in = None if pre_norm else nn.LayerNorm(d)
        self.blocks = nn.ModuleList(_Block(d, heads, ffn, act, pre_norm, causal) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d) if pre_norm else None
        self.transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d)) if bert_head else None
        self.head = nn.Linear(d, vocab, bias=bert_head)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        if self.ln_in is not None:
            x = self.ln_in(x)
        for block in self.blocks:
            x = block(x)
        if self.ln_f is not None:
            x = self.ln_f(x)
        if self.transform is not None:
            x = self.transform(x)
        return self.head(x)


def bert_large() -> LanguageModel:
    return LanguageModel(30522, 1024, 24, 16, 4096, 512, "gelu", pre_norm=False, causal=False, bert_head=True)


def gpt2_large() -> LanguageModel:
    return LanguageModel(50257, 1280, 36, 20, 5120, 1024, "gelu_new", pre_norm=True, causal=True)


def gpt3_xl() -> LanguageModel:
    return LanguageModel(50257, 3072, 24, 24, 4 * 3072, 2048, "gelu_new", pre_norm=True, causal=True)


def gpt3_27() -> LanguageModel:
    return LanguageModel(50257, 2560, 32, 32, 4 * 2560, 2048, "gelu_new", pre_norm=True, causal=True)


def opt_13() -> LanguageModel:
    return LanguageModel(50272, 2048, 24, 32, 8192, 2048, "relu", pre_norm=True, causal=True)
