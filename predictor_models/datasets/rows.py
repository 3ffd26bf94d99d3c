"""The canonical row CSV: what `collect` writes, `train --extra` and `calibrate --rows` read, and
what the shipped public rows are stored as.

Columns: ``device, source, op_class, name, dtype, tf32, flops, bytes_read, bytes_written, dims,
seconds`` with ``dims`` a JSON object. The first line names the schema (``#schema=prenet-rows/1``);
files without it (written before the line existed) have the same columns and read as version 1.
A file may be compressed (``.csv.xz`` or ``.csv.gz``). Floats are written with ``repr``, so a
round trip is exact.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import lzma
from pathlib import Path
from typing import IO, Iterable, Sequence

from predictor_models.op_spec import OP_CLASSES, OpSpec

from .common import LoadReport, Sample

ROW_COLUMNS = ("device", "source", "op_class", "name", "dtype", "tf32", "flops", "bytes_read",
               "bytes_written", "dims", "seconds")
SCHEMA = "prenet-rows/1"
_SCHEMA_PREFIX = "#schema="
ROW_SUFFIXES = (".csv", ".csv.xz", ".csv.gz")


class RowsError(ValueError):
    """A rows file or folder cannot be used; the message names the file and the fix."""


def is_row_file(path: Path) -> bool:
    return path.name.endswith(ROW_SUFFIXES)


def open_text(path: str | Path, mode: str = "rt") -> IO[str]:
    """Open a row file for text IO, (de)compressing by suffix (xz files are deterministic: no timestamp)."""
    path = Path(path)
    if path.name.endswith(".xz"):
        return lzma.open(path, mode, encoding="utf-8", newline="", preset=9 if "w" in mode else None)
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.GzipFile(path, mode[0] + "b", mtime=0), encoding="utf-8", newline="")
    return open(path, mode, encoding="utf-8", newline="")


def write_rows(path: str | Path, samples: Iterable[Sample]) -> int:
    """Write samples in the canonical row CSV (compressed by suffix); returns the number written."""
    with open_text(path, "wt") as handle:
        return write_rows_to(handle, samples)


def write_rows_to(handle: IO[str], samples: Iterable[Sample]) -> int:
    """Write the schema line, the header and one row per sample to an open text handle."""
    handle.write(f"{_SCHEMA_PREFIX}{SCHEMA}\n")
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(ROW_COLUMNS)
    count = 0
    for s in samples:
        op = s.op
        writer.writerow([s.device, s.source, op.op_class, op.name, op.dtype, int(op.tf32), repr(float(op.flops)),
                         repr(float(op.bytes_read)), repr(float(op.bytes_written)),
                         json.dumps(op.dims, sort_keys=True), repr(float(s.seconds))])
        count += 1
    return count


def row_files(paths: Sequence[str | Path]) -> list[Path]:
    """The row files named: files as given, folders expanded to their ``*.csv[.xz|.gz]`` (sorted)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(f for f in p.iterdir() if f.is_file() and is_row_file(f)))
        else:
            files.append(p)
    return files


def read_rows(paths: Sequence[str | Path], report: LoadReport | None = None) -> list[Sample]:
    """Read canonical row files (files, or folders of them); bad rows are counted, not fatal.

    Raises `RowsError` for a file that is missing, unreadable, of another schema version or not a
    row CSV at all."""
    out: list[Sample] = []
    for f in row_files(paths):
        out.extend(read_row_file(f, report))
    if report:
        report.kept += len(out)
    return out


def read_row_file(path: Path, report: LoadReport | None = None, sources: Sequence[str] | None = None) -> list[Sample]:
    """The samples of one row file (see `read_rows`); ``report`` counts the rows that did not parse.
    ``sources`` keeps only rows of those sources (the others are skipped unparsed)."""
    if not path.is_file():
        raise RowsError(f"{path}: no such rows file; pass a file or folder written by `prenet collect --out DIR`")
    try:
        with open_text(path) as handle:
            return _parse(path, handle, report, frozenset(sources) if sources is not None else None)
    except (OSError, EOFError, lzma.LZMAError, UnicodeDecodeError, csv.Error) as error:
        raise RowsError(f"{path}: unreadable rows file ({error}); measure again with `prenet collect --out DIR` "
                        "or remove the file") from None


def _parse(path: Path, handle: IO[str], report: LoadReport | None, sources: frozenset | None) -> list[Sample]:
    first = handle.readline()
    if first.startswith(_SCHEMA_PREFIX):
        schema = first[len(_SCHEMA_PREFIX):].strip()
        if schema != SCHEMA:
            raise RowsError(f"{path}: rows of schema {schema!r}; this version of prenet reads {SCHEMA!r}. Measure "
                            "again with this version (`prenet collect --out DIR`) or use the prenet that wrote it")
        header_line = handle.readline()
    else:
        header_line = first
    reader = csv.DictReader(handle, fieldnames=next(csv.reader([header_line]), []))
    missing = set(ROW_COLUMNS) - set(reader.fieldnames or ())
    if missing:
        raise RowsError(f"{path}: not a prenet row CSV (missing columns {sorted(missing)}); pass files written by "
                        "`prenet collect --out DIR`")
    out: list[Sample] = []
    for row in reader:
        if sources is not None and row.get("source") not in sources:
            continue
        try:
            op = OpSpec(row["op_class"], row["dtype"], float(row["flops"]), float(row["bytes_read"]),
                        float(row["bytes_written"]), json.loads(row["dims"] or "{}"),
                        row["tf32"] in ("1", "True", "true"), row["name"])
            seconds = float(row["seconds"])
            if not isinstance(op.dims, dict):
                raise ValueError("dims is not a JSON object")
        except (ValueError, KeyError, TypeError, json.JSONDecodeError):
            if report:
                report.exclude("unparseable row")
            continue
        if op.op_class not in OP_CLASSES or not seconds > 0:
            if report:
                report.exclude("unknown op class or non-positive time")
            continue
        out.append(Sample(op, row["device"], seconds, row["source"] or "extra"))
    return out
