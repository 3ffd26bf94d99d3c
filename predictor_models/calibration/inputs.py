"""What `calibrate` reads: a folder of rows from `prenet collect`, or a run report's per-op device
times (``measured.op_samples``, schema ``prenet-report/2``), all from one device, checked.

Every problem is one `CalibrationError` naming the file and the fix: a missing, empty or corrupt
rows folder, a rows file of another schema version, rows from several devices or from another
device than the one named, a report without per-op samples, a device the catalog cannot describe.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from predictor_models.datasets.common import LoadReport, Sample
from predictor_models.datasets.rows import RowsError, read_row_file, row_files
from predictor_models.op_spec import OpSpec

from .fit import CalibrationError

HARDWARE_FILE = "hardware.toml"    # written by collect beside rows of a GPU the catalog lacks
REPORT_SCHEMAS = ("prenet-report/2",)
COLLECT_HINT = "measure the GPU with `prenet collect --out DIR`"


@dataclass
class Measured:
    """Samples of one device, the device's catalog (or detected) entry, and where they came from."""

    samples: list[Sample]
    device: object
    source: str
    unparsed: int = 0


def _resolve(name: str, where: str, catalogs: list[Path]):
    """The entry for a device name: the catalog, else an override file (``--catalog`` or the rows'
    ``hardware.toml``)."""
    from predictor_models.hardware import UnknownHardwareError, load_catalog, lookup_hardware

    try:
        return lookup_hardware(name)
    except UnknownHardwareError as error:
        problem = str(error)
    for path in catalogs:
        if path.is_file():
            try:
                return load_catalog(path, on_error="raise").lookup(name)
            except ValueError as error:  # HardwareCatalogError / UnknownHardwareError
                problem = str(error)
    raise CalibrationError(f"{where}: device {name!r} is not in the hardware catalog ({problem}); pass --catalog FILE "
                           f"with its figures (collect writes {HARDWARE_FILE} for a GPU the catalog lacks)")


def _check_device(found, named, where: str, fix: str) -> None:
    if named is not None and found.name != named.name:
        raise CalibrationError(f"{where}: rows measured on {found.name!r}, not on {named.name!r} as --device names; "
                               f"{fix}")


def read_rows_folder(folder: str | Path, *, device: str | None = None, catalog: str | Path | None = None) -> Measured:
    """All rows of a `prenet collect` folder (or one rows file), which must come from one device."""
    folder = Path(folder)
    if not folder.exists():
        raise CalibrationError(f"rows folder {folder} not found; {COLLECT_HINT} on the GPU, then pass --rows DIR")
    files = row_files([folder])
    if not files:
        raise CalibrationError(f"{folder}: no rows file (*.csv, *.csv.xz, *.csv.gz) in it; {COLLECT_HINT}")
    catalogs = [Path(catalog)] if catalog else []
    catalogs.append((folder if folder.is_dir() else folder.parent) / HARDWARE_FILE)
    named = _resolve(device, "--device", catalogs) if device else None
    samples: list[Sample] = []
    found: dict[str, tuple[object, Path]] = {}
    report = LoadReport("rows")
    for path in files:
        before = sum(report.excluded.values())
        try:
            rows = read_row_file(path, report)
        except RowsError as error:
            raise CalibrationError(str(error)) from None
        if not rows:
            bad = sum(report.excluded.values()) - before
            raise CalibrationError(f"{path}: no usable row ({bad} unparseable or invalid); {COLLECT_HINT} again, or "
                                   "remove the file from the folder")
        for name in sorted({s.device for s in rows}):
            entry = _resolve(name, str(path), catalogs)
            _check_device(entry, named, str(path), "pass the folder measured on that GPU, or --device "
                                                   f"{entry.name!r}")
            found.setdefault(entry.name, (entry, path))
        samples.extend(rows)
    if len(found) > 1:
        listed = ", ".join(f"{name} ({path.name})" for name, (_, path) in sorted(found.items()))
        raise CalibrationError(f"{folder}: rows from {len(found)} devices: {listed}; a calibration is for one GPU: pass "
                               "--device NAME, or a folder with one GPU's rows")
    entry = next(iter(found.values()))[0]   # every device name in the rows resolved to it
    return Measured(samples, entry, str(folder), sum(report.excluded.values()))


def read_report(path: str | Path, *, device: str | None = None, catalog: str | Path | None = None) -> Measured:
    """The per-op device times of a GPU run's report (``measured.op_samples``)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise CalibrationError(f"report {path} not found; pass the prenet_report.json a GPU run wrote") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CalibrationError(f"{path}: not a readable JSON report ({error}); pass the prenet_report.json a run "
                               "wrote") from None
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema not in REPORT_SCHEMAS:
        raise CalibrationError(f"{path}: report schema {schema!r} has no per-op device times (this version reads "
                               f"{', '.join(REPORT_SCHEMAS)}); run the fit again on the GPU with this version of prenet, "
                               f"or {COLLECT_HINT} and pass --rows DIR")
    block = (doc.get("measured") or {}).get("op_samples")
    if not isinstance(block, dict) or not block.get("rows"):
        raise CalibrationError(f"{path}: the report has no measured.op_samples (a CPU run, or no GPU ops profiled); "
                               f"calibrate from a GPU run's report, or {COLLECT_HINT} and pass --rows DIR")
    name = block.get("catalog_name") or block.get("device")
    if not name:
        raise CalibrationError(f"{path}: measured.op_samples names no device; {COLLECT_HINT} and pass --rows DIR")
    entry = _resolve(str(name), str(path), [Path(catalog)] if catalog else [])
    if device:
        _check_device(entry, _resolve(device, "--device", [Path(catalog)] if catalog else []), str(path),
                      f"pass a report of a run on that GPU, or --device {entry.name!r}")
    samples, bad = [], 0
    for row in block["rows"]:
        try:
            op = OpSpec(str(row["op_class"]), str(row["dtype"]), float(row["flops"]), float(row["bytes_read"]),
                        float(row["bytes_written"]), dict(row.get("dims") or {}), bool(row.get("tf32", False)),
                        str(row.get("name", "")))
            seconds = float(row["seconds"])
        except (KeyError, TypeError, ValueError):
            bad += 1
            continue
        if seconds > 0:
            samples.append(Sample(op, entry.name, seconds, "report"))
        else:
            bad += 1
    if not samples:
        raise CalibrationError(f"{path}: none of the {len(block['rows'])} rows of measured.op_samples is usable; "
                               f"{COLLECT_HINT} and pass --rows DIR")
    return Measured(samples, entry, str(path), bad)
