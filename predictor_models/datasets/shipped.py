"""The public training rows that ship with the package, and how they are rebuilt from the raw sources.

``predictor_models/public_data/`` (inside the wheel, as package data) holds:

- ``rows.csv.xz``: every sample the default loaders (NeuSight MIT, OpenXLA Apache-2.0, Vidur MIT,
  DeepBench Apache-2.0) produce from the raw source folders, in the canonical row format (`rows`), in load order;
- ``labels.csv.xz``: NeuSight's per-node training labels of transformer layer 0 (evaluation only);
- ``liger_eager.csv.xz``: Liger-Kernel's eager-PyTorch module times (BSD-2; an evaluation set read by
  `liger_eager.load_liger_eager`, never training rows);
- ``manifest.json``: each loader's `LoadReport` (kept and excluded counts, notes), the files'
  SHA-256, and per source its licence, repository, commit and attribution;
- ``LICENSES/``: each source's licence text; ``NOTICE.md``: the attributions.

Training and evaluation read these by default, so they run anywhere; ``--data DIR`` reads the raw
folders instead and gives the same rows (a test checks it where the raw folders exist).
Rebuild with ``python -m predictor_models.datasets.shipped --data ../shared/data``.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Sequence

from .neusight_labels import LABEL_COLUMNS, label_rows
from .registry import load_all
from .rows import open_text, write_rows
from . import liger_eager
from .shipped_files import (BUILD_COMMAND, LABELS_FILE, LIGER_FILE, MANIFEST_FILE, ROWS_FILE, SCHEMA, SHIPPED_DIR,
                            ShippedDataError, load_shipped, read_manifest, sha256_of, shipped_label_rows)

# The reading side lives in `shipped_files` (so `neusight_labels` can read the labels without
# importing the rebuild); it is re-exported here.
__all__ = ["LICENSED_SOURCES", "build", "main", "BUILD_COMMAND", "SHIPPED_DIR", "ShippedDataError",
           "load_shipped", "read_manifest", "shipped_label_rows"]

# Only sources whose licence allows redistribution, and only those the default training set uses.
LICENSED_SOURCES: dict[str, dict[str, str]] = {
    "neusight": {
        "licence": "MIT", "licence_file": "LICENSES/NeuSight-MIT.txt",
        "repository": "https://github.com/sitar-lab/NeuSight", "commit": "6945927d9afcca2b9daf021f8395e53edc5b4eef",
        "attribution": "NeuSight (Lee et al., ASPLOS'25), Copyright (c) 2025 Georgia Institute of Technology and "
                       "Microsoft Corporation: single-op latencies and per-node transformer-layer labels",
    },
    "xla": {
        "licence": "Apache-2.0", "licence_file": "LICENSES/OpenXLA-Apache-2.0.txt",
        "repository": "https://github.com/openxla/xla (copy read from ROCm/xla)",
        "commit": "62edde4be67bf0154635595852e44079423997df",
        "attribution": "OpenXLA GPU cost-model matmul tables, Copyright 2023/2025 The OpenXLA Authors: "
                       "GEMM throughputs derived into rows (numbers only, no code)",
    },
    "vidur": {
        "licence": "MIT", "licence_file": "LICENSES/Vidur-MIT.txt",
        "repository": "https://github.com/microsoft/vidur", "commit": "7d47513363ec447a741ac5e47241580b47724fbf",
        "attribution": "Vidur (Agrawal et al., MLSys'24), Copyright (c) Microsoft Corporation: per-op profiles of "
                       "LLM decoder layers",
    },
    "deepbench": {
        "licence": "Apache-2.0", "licence_file": "LICENSES/DeepBench-Apache-2.0.txt",
        "repository": "https://github.com/baidu-research/DeepBench",
        "commit": "da81ba7820739e2e506dc27f382d15be5479f98f",
        "attribution": "DeepBench, Copyright Baidu Research: GEMM and convolution forward/dgrad/wgrad kernel "
                       "times of results/train (fp32, fp16) on V100, T4, P100, GTX 1080 Ti, TITAN Xp",
    },
}

# Evaluation sets shipped beside the rows (never trained on); their licence may be another permissive one.
EVALUATION_SOURCES: dict[str, dict[str, str]] = {
    "liger_kernel": {
        "licence": "BSD-2-Clause", "licence_file": "LICENSES/Liger-Kernel-BSD-2-Clause.txt",
        "repository": "https://github.com/linkedin/Liger-Kernel", "commit": "ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c",
        "attribution": "Liger-Kernel, Copyright 2024 LinkedIn Corporation: benchmark/data/all_benchmark_data.csv, "
                       "the speed rows of its eager-PyTorch providers (huggingface, torch, megatron-unfused)",
        "file": LIGER_FILE,
    },
}


def build(data_dir: str | Path, out: Path = SHIPPED_DIR, *, log=print) -> dict:
    """Write the rows, labels and manifest from the raw source folders; returns the manifest."""
    root = Path(data_dir)
    if not (root / "neusight").is_dir():
        raise ShippedDataError(f"{root}: no raw source folders here (no neusight/); pass --data ../shared/data")
    sources = tuple(LICENSED_SOURCES)
    samples, reports = load_all(root, sources)
    not_loaded = [r.source for r in reports if any(n.startswith("not loaded") for n in r.notes)]
    if not_loaded:
        raise ShippedDataError(f"{root}: source {not_loaded[0]!r} could not be loaded; every shipped source is needed")
    out.mkdir(parents=True, exist_ok=True)
    count = write_rows(out / ROWS_FILE, samples)
    labels = 0
    with open_text(out / LABELS_FILE, "wt") as handle:
        writer = csv.DictWriter(handle, LABEL_COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in label_rows(root):
            writer.writerow(row)
            labels += 1
    liger = liger_eager.build(root, out / LIGER_FILE)
    manifest = {
        "schema": SCHEMA, "built_with": BUILD_COMMAND,
        "rows_file": ROWS_FILE, "rows": count, "rows_sha256": sha256_of(out / ROWS_FILE),
        "labels_file": LABELS_FILE, "label_rows": labels, "labels_sha256": sha256_of(out / LABELS_FILE),
        "liger_file": LIGER_FILE, "liger_rows": liger, "liger_sha256": sha256_of(out / LIGER_FILE),
        "reports": [r.as_dict() for r in reports],
        "sources": LICENSED_SOURCES,
        "evaluation_sources": EVALUATION_SOURCES,
    }
    (out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    log(f"wrote {count} rows, {labels} label rows and {liger} Liger evaluation rows to {out} "
        f"({(out / ROWS_FILE).stat().st_size / 1e6:.1f} + {(out / LABELS_FILE).stat().st_size / 1e6:.1f} + "
        f"{(out / LIGER_FILE).stat().st_size / 1e6:.2f} MB)")
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m predictor_models.datasets.shipped",
                                     description="Rebuild the shipped public training rows from the raw source folders.")
    parser.add_argument("--data", required=True, help="the raw source folders, e.g. ../shared/data")
    parser.add_argument("--out", default=str(SHIPPED_DIR), help="where to write (default: the package's public_data/)")
    args = parser.parse_args(argv)
    try:
        build(args.data, Path(args.out))
    except ShippedDataError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
