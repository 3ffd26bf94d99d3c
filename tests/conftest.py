"""Shared test set-up: quiet, single-threaded torch, so the suite runs fast and repeatably on 2 cores."""
from __future__ import annotations

import os
import warnings

os.environ.setdefault("DS_ACCELERATOR", "cpu")
os.environ.setdefault("PL_DISABLE_FORK", "1")

import pytest
import torch

torch.set_num_threads(1)
warnings.filterwarnings("ignore", message=".*does not have many workers.*")
warnings.filterwarnings("ignore", message=".*tensorboardX.*")
warnings.filterwarnings("ignore", message=".*LeafSpec.*")


@pytest.fixture
def tmp_report(tmp_path):
    return tmp_path / "report.json"
