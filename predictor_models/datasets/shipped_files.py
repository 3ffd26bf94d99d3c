"""Reading the public training rows that ship with the package (`shipped` says what they are and
rebuilds them): the manifest, checked against its files, the rows and the NeuSight label rows.

Kept apart from the rebuild so that the loaders the rebuild runs (`neusight_labels`) can read the
shipped files without importing it.
"""
from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Iterator, Sequence

from .common import LoadReport, Sample
from .rows import open_text, read_row_file

SHIPPED_DIR = Path(__file__).resolve().parent.parent / "public_data"
ROWS_FILE = "rows.csv.xz"
LABELS_FILE = "labels.csv.xz"
LIGER_FILE = "liger_eager.csv.xz"   # an evaluation set (`liger_eager`), not training rows
MANIFEST_FILE = "manifest.json"
SCHEMA = "prenet-public-data/1"
BUILD_COMMAND = "python -m predictor_models.datasets.shipped --data ../shared/data"


class ShippedDataError(RuntimeError):
    """The shipped rows are missing, altered, or lack a requested source."""


def sha256_of(path: Path) -> str:
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
    for key in ("rows", "labels", "liger"):
        if f"{key}_file" not in manifest:
            continue
        name = manifest[f"{key}_file"]
        if not (folder / name).is_file() or sha256_of(folder / name) != manifest[f"{key}_sha256"]:
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
