"""The project's own H200 op table: ``prenet collect --quick`` on one H200 SXM (our measurement).

``benchmarks/results/gpu/H200-SXM-collect-quick.csv`` (canonical rows, `rows`; its ``.json``
beside it: torch 2.11 + CUDA 13.0, cuDNN 9.19, CUDA events per call with L2 flushed before each
call, median; fp32 GEMMs without TF32, fp32 convolutions with cuDNN TF32 on, bf16): 108 rows of
GEMM/BMM, convolution forward, layer norm, softmax and four pointwise ops, fp32 and bf16.

Registered as source ``prenet-h200`` but not a default training source: it is also an evaluation
set. ``load(data_dir)`` reads ``data_dir/prenet_h200/H200-SXM-collect-quick.csv`` when that exists,
else the file committed in this repository (absent from an installed wheel: then the source is
reported as not loaded).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .common import LoadReport, Sample
from .rows import read_row_file

SOURCE = "prenet-h200"
FILE_NAME = "H200-SXM-collect-quick.csv"
REPO_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "gpu" / FILE_NAME


def _path(data_dir: str | Path | None) -> Path:
    if data_dir is not None and (Path(data_dir) / "prenet_h200" / FILE_NAME).is_file():
        return Path(data_dir) / "prenet_h200" / FILE_NAME
    return REPO_FILE


def load(data_dir: str | Path | None = None) -> tuple[list[Sample], LoadReport]:
    """The H200 op rows as samples of source ``prenet-h200``."""
    path = _path(data_dir)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (the committed H200 op table is in the repository, not the wheel)")
    report = LoadReport(SOURCE)
    report.notes.append("our prenet collect --quick on one H200 SXM: torch 2.11+cu130, CUDA events, L2 flushed, "
                        "median; fp32 GEMM without TF32, fp32 conv with cuDNN TF32; also an evaluation set")
    samples = [replace(s, source=SOURCE) for s in read_row_file(path, report)]
    report.kept = len(samples)
    return samples, report
