"""cuDNN's algorithm search as `estimate()` reads it (``torch.backends.cudnn.benchmark``): with it on, a 3x3 FP32
convolution where it runs in FP32 (before Ampere) is priced at the lesser of its direct and Winograd kernels; with it
off, the direct price stands and the notes say what the search could do (`projection/ops/conv_search.py`)."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from prenet_callbacks import estimate


def _cnn(kernel: int) -> nn.Module:
    pad = kernel // 2
    return nn.Sequential(nn.Conv2d(3, 64, kernel, padding=pad), nn.ReLU(), nn.Conv2d(64, 128, kernel, padding=pad),
                         nn.ReLU(), nn.Conv2d(128, 128, kernel, padding=pad), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(128, 10))


@pytest.fixture
def search():
    """Set torch.backends.cudnn.benchmark within a test, restored after."""
    before = torch.backends.cudnn.benchmark

    def set_to(flag: bool) -> None:
        torch.backends.cudnn.benchmark = flag
    yield set_to
    torch.backends.cudnn.benchmark = before


def _estimate(kernel: int, precision: str = "32-true"):
    with torch.device("meta"):
        model, images = _cnn(kernel), torch.empty(32, 3, 64, 64)
    return estimate(model, images, targets=["V100", "T4", "A100"], precision=precision, optimizer="sgd")


def _search_notes(est) -> list[str]:
    return [note for note in est.notes if "algorithm search" in note]


def test_the_search_prices_winograd_where_fp32_runs_and_the_notes_say_so_without_it(search):
    search(False)
    off = _estimate(3)
    search(True)
    on = _estimate(3)
    assert len(_search_notes(off)) == 1 and "3x3 FP32 convolutions" in _search_notes(off)[0]
    assert not _search_notes(on)
    for gpu in ("V100", "T4"):          # before Ampere: FP32 kernels, Winograd where faster
        assert on.row(gpu)["step_s"] < off.row(gpu)["step_s"]
    # TF32 on an A100 (PyTorch's default for cuDNN convolutions) runs no Winograd kernel: the same price
    assert on.row("A100")["step_s"] == pytest.approx(off.row("A100")["step_s"], rel=1e-9)


def test_no_note_where_the_search_would_change_nothing(search):
    search(False)
    assert not _search_notes(_estimate(1))                   # 1x1 convolutions: no Winograd
    assert not _search_notes(_estimate(3, "16-mixed"))       # half precision: tensor-core implicit GEMMs
