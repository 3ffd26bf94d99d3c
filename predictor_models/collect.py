"""Measure single ops on this machine's CUDA GPU, in the row format `calibrate` and `train --extra` read.

    python -m predictor_models.collect --out DIR [--quick] [--dtypes float32 bfloat16] [--device cuda:1]

GEMMs, batched GEMMs, convolutions, layer norm / softmax and pointwise ops at a fixed grid of
sizes (`collection.cases`), each timed as device time with a cold L2 cache (`collection.timer`).
``--quick`` measures about 110 ops (seconds: 3 s on an H200); the full grid about 500. Writes
``<device>.csv`` (rows labelled with the catalog name of the GPU), ``<device>.json`` (what was
measured, how, with which library versions and math flags) and, for a GPU the catalog lacks,
``hardware.toml`` with the entry detected from the driver (usable as ``PRENET_HARDWARE``).
Without CUDA, or for a GPU whose figures cannot be read, it exits 2 with one line.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Sequence

from predictor_models.datasets.common import Sample
from predictor_models.paths import check_output_path

ROWS_SOURCE = "collect"
HARDWARE_FILE = "hardware.toml"
TIMER = "cuda events per call, L2 flushed before each call, median (do_bench method)"


class CollectError(RuntimeError):
    """Collection cannot run here (no CUDA, an unknown GPU whose figures cannot be read)."""


def file_stem(device_name: str) -> str:
    """A file name for a device name ("RTX 4090" -> "RTX_4090")."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", device_name).strip("_") or "gpu"


def device_entry(info) -> object:
    """The catalog (or detected) entry rows are labelled with; a clear error when there is none."""
    if info.kind not in ("cuda", "rocm"):
        raise CollectError(f"collect measures a GPU through torch.cuda; this device is {info.kind} ({info.name})")
    if info.accelerator is None:
        raise CollectError(f"GPU {info.name!r} is not in the hardware catalog and its figures could not be read from "
                           "the driver; describe it in a hardware file (see docs/hardware.md) and pass --catalog FILE")
    return info.accelerator


def write_collection(out: Path, entry, samples: list[Sample], meta: dict) -> Path:
    """Write ``<device>.csv``, ``<device>.json`` and (detected GPU) ``hardware.toml``; returns the CSV path.

    Each file is written beside its final name and renamed into place, so a failed run leaves no
    half-written file."""
    from predictor_models.datasets.rows import write_rows
    from predictor_models.hardware.detected import to_toml

    out.mkdir(parents=True, exist_ok=True)
    stem = file_stem(entry.name)
    path = out / f"{stem}.csv"
    _atomic(path, lambda tmp: write_rows(tmp, samples))
    _atomic(out / f"{stem}.json", lambda tmp: tmp.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n"))
    if getattr(entry, "detected", False):
        _atomic(out / HARDWARE_FILE, lambda tmp: tmp.write_text(to_toml(entry)))
    return path


def _atomic(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def collect(out: str | Path, *, dtypes: Sequence[str] | None = None, quick: bool = False, device: str | None = None,
            catalog: str | Path | None = None, budget_ms: float = 25.0, log=print) -> Path:
    """Measure the grid on a CUDA device (default: the current one) and write the rows into ``out``."""
    import torch

    from predictor_models.collection.cases import cases, default_dtypes, math_flags
    from predictor_models.collection.timer import CudaBackend, time_op
    from predictor_models.hardware import current_device, load_catalog

    out = check_output_path(out, "--out", directory=True)
    if not torch.cuda.is_available():
        raise CollectError("no CUDA device: collect measures ops on this machine's GPU")
    dev = torch.device(device or "cuda")
    if dev.type != "cuda":
        raise CollectError(f"--device {device!r} is not a CUDA device; pass e.g. --device cuda:0")
    dev = torch.device("cuda", torch.cuda.current_device() if dev.index is None else dev.index)
    info = current_device(load_catalog(catalog, on_error="raise") if catalog else None, dev)
    entry = device_entry(info)
    dtypes = list(dtypes or default_dtypes(torch))
    flags = math_flags(torch)
    grid = cases(dtypes, flags, quick=quick)
    log(f"measuring {len(grid)} ops on {info.name} ({'catalog entry' if not info.detected else 'detected'}: "
        f"{entry.name}), dtypes {', '.join(dtypes)}")
    start = time.time()
    samples: list[Sample] = []
    skipped: Counter = Counter()
    with torch.cuda.device(dev):
        backend = CudaBackend(torch, dev)
        for case in grid:
            fn = None
            try:
                fn = case.build(torch, dev)        # inputs are allocated inside the guard too
                timing = time_op(fn, backend, budget_ms=budget_ms)
            except torch.cuda.OutOfMemoryError:
                skipped["out of memory"] += 1
                del fn
                torch.cuda.empty_cache()
                continue
            except RuntimeError as error:           # a dtype or shape this GPU or library refuses
                skipped[f"{case.op.name} {case.op.dtype}: {str(error).splitlines()[0][:80]}"] += 1
                continue
            del fn
            samples.append(Sample(case.op, entry.name, timing.seconds, ROWS_SOURCE))
    if not samples:
        raise CollectError(f"no op could be measured on {info.name}: {dict(skipped)}")
    meta = {"schema": "prenet-rows/1", "device": entry.name, "driver_name": info.name, "detected": info.detected,
            "device_index": dev.index, "rows": len(samples), "skipped": dict(skipped), "quick": quick,
            "dtypes": dtypes, "math": flags, "timer": TIMER, "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "seconds_taken": round(time.time() - start, 1)}
    path = write_collection(Path(out), entry, samples, meta)
    log(f"wrote {len(samples)} rows to {path} in {time.time() - start:.0f} s"
        + (f"; skipped {sum(skipped.values())}: {dict(skipped)}" if skipped else ""))
    if info.detected:
        log(f"{entry.name} is not in the catalog: its detected figures are in {Path(out) / HARDWARE_FILE}")
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The collect options (shared with ``prenet collect``)."""
    parser.set_defaults(prog=parser.prog)  # errors name the command as typed ("prenet collect" or "python -m ...")
    parser.add_argument("--out", required=True, help="folder to write <device>.csv into")
    parser.add_argument("--dtypes", nargs="*", default=None,
                        help="dtypes to measure (default: float32 and bfloat16, or float16 where bf16 is not native)")
    parser.add_argument("--quick", action="store_true", help="about 110 ops, seconds on a GPU (default: about 500)")
    parser.add_argument("--device", default=None, help="the CUDA device to measure, e.g. cuda:1 (default: the current one)")
    parser.add_argument("--catalog", metavar="FILE", default=None,
                        help="hardware override file describing a GPU the catalog lacks (default: $PRENET_HARDWARE)")


def run(args) -> int:
    try:
        for dtype in args.dtypes or ():
            if dtype not in ("float32", "float16", "bfloat16"):
                raise ValueError(f"--dtypes: {dtype!r} is not one of float32, float16, bfloat16")
        collect(args.out, dtypes=args.dtypes, quick=args.quick, device=args.device, catalog=args.catalog)
    except (CollectError, ValueError) as error:
        print(f"{getattr(args, 'prog', 'collect')}: error: {error}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m predictor_models.collect", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
