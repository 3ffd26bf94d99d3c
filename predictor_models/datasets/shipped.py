"""The public training rows that ship with the package, and how they are rebuilt from the raw sources.

``predictor_models/public_data/`` (inside the wheel, as package data) holds:

- ``rows.csv.xz``: every sample the default loaders (NeuSight MIT, OpenXLA Apache-2.0, Vidur MIT)
  produce from the raw source folders, in the canonical row format (`rows`), in load order;
- ``labels.csv.xz``: NeuSight's per-node training labels of transformer layer 0 (evaluation only);
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
import hashlib
import json
import sys
from pathlib import Path
from typing import Iterator, Sequence

from .common import LoadReport, Sample
from .rows import open_text, read_row_file, write_rows

SHIPPED_DIR = Path(__file__).resolve().parent.parent / "public_data"
ROWS_FILE = "rows.csv.xz"
LABELS_FILE = "labels.csv.xz"
MANIFEST_FILE = "manifest.json"
SCHEMA = "prenet-public-data/1"
BUILD_COMMAND = "python -m predictor_models.datasets.shipped --data ../shared/data"

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
}


class ShippedDataError(RuntimeError):
    """The shipped rows are missing, altered, or lack a requested source."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(folder: Path = SHIPPED_DIR) -> dict:
    """The manifest, checked against the files beside it."""
    path = folder / MANIFEST_FILE
    fix = f"reinstall prenet-callbacks, or rebuild the files with `{BUILD_COMMAND}`"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ShippedDataError(f"{path}: the shipped training rows are missing or unreadable ({error}); {fix}") from None
    if manifest.get("schema") != SCHEMA:
        raise ShippedDataError(f"{path}: schema {manifest.get('schema')!r}, this code reads {SCHEMA!r}; {fix}")
    for key in ("rows", "labels"):
        name = manifest[f"{key}_file"]
        if not (folder / name).is_file() or _sha256(folder / name) != manifest[f"{key}_sha256"]:
            raise ShippedDataError(f"{folder / name}: missing or not the file the manifest describes; {fix}")
    return manifest


def load_shipped(sources: Sequence[str] | None = None, folder: Path = SHIPPED_DIR) -> tuple[list[Sample], list[LoadReport]]:
    """The shipped samples of ``sources`` (default: all shipped, which are the default training
    sources) in the order `load_all` gives them from the raw folders, with the loaders' reports."""
    manifest = read_manifest(folder)
    reports = {r["source"]: r for r in manifest["reports"]}
    wanted = list(sources) if sources else [r["source"] for r in manifest["reports"]]
    missing = [name for name in wanted if name not in reports]
    if missing:
        raise ShippedDataError(f"source {missing[0]!r} is not in the shipped rows (shipped: {', '.join(reports)}); "
                               "pass --data DIR with the raw source folders to use it")
    by_source: dict[str, list[Sample]] = {name: [] for name in wanted}
    for sample in read_row_file(folder / manifest["rows_file"], sources=wanted):
        by_source[sample.source].append(sample)
    out_reports = []
    for name in wanted:
        r = reports[name]
        report = LoadReport(name, int(r["kept"]), notes=list(r["notes"]))
        report.excluded.update(r["excluded"])
        out_reports.append(report)
    return [s for name in wanted for s in by_source[name]], out_reports


def shipped_label_rows(folder: Path = SHIPPED_DIR) -> Iterator[dict]:
    """The shipped NeuSight layer-0 label rows (the columns `neusight_labels.node_ops` reads)."""
    manifest = read_manifest(folder)
    with open_text(folder / manifest["labels_file"]) as handle:
        yield from csv.DictReader(handle)


def build(data_dir: str | Path, out: Path = SHIPPED_DIR, *, log=print) -> dict:
    """Write the rows, labels and manifest from the raw source folders; returns the manifest."""
    from .neusight_labels import LABEL_COLUMNS, label_rows
    from .registry import load_all

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
    manifest = {
        "schema": SCHEMA, "built_with": BUILD_COMMAND,
        "rows_file": ROWS_FILE, "rows": count, "rows_sha256": _sha256(out / ROWS_FILE),
        "labels_file": LABELS_FILE, "label_rows": labels, "labels_sha256": _sha256(out / LABELS_FILE),
        "reports": [r.as_dict() for r in reports],
        "sources": LICENSED_SOURCES,
    }
    (out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    log(f"wrote {count} rows and {labels} label rows to {out} "
        f"({(out / ROWS_FILE).stat().st_size / 1e6:.1f} + {(out / LABELS_FILE).stat().st_size / 1e6:.1f} MB)")
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
