"""Train the per-op predictor from public measurements (and your own, from ``collect``).

    python -m predictor_models.train --out predictor_models/pretrained [--extra DIR] [--data ../shared/data]

The public rows ship with the package (`datasets.shipped`); ``--data DIR`` reads the raw source
folders instead (same rows, same predictor). Deterministic (seeded, single-threaded BLAS); about a
minute on one core. Writes ``predictor.json``.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import sys
import time
from pathlib import Path
from typing import Sequence
from predictor_models.paths import check_output_path


VERSION = "1.4.0"
DEFAULT_MEMBERS = 3


class TrainError(RuntimeError):
    """Training cannot start (missing data folder, nothing usable in it)."""


def check_members(members: object, option: str = "--members") -> int:
    """The ensemble size: an integer >= 1."""
    if isinstance(members, bool) or not isinstance(members, int) or members < 1:
        raise ValueError(f"{option} must be an integer >= 1 (MLPs per op class), got {members!r}; "
                         f"pass e.g. {option} {max(DEFAULT_MEMBERS, 1)}")
    return members


def check_weight_decay(items: Sequence[str] | None, option: str = "--weight-decay") -> dict[str, float]:
    """``CLASS=VALUE`` items as a dict: a modelled op class and a finite penalty >= 0."""
    from predictor_models.predictor.features import FEATURES

    decays: dict[str, float] = {}
    for item in items or ():
        op_class, sep, text = str(item).partition("=")
        if not sep or op_class not in FEATURES:
            raise ValueError(f"{option}: {item!r} is not CLASS=VALUE with CLASS one of {', '.join(FEATURES)}; "
                             f"pass e.g. {option} gemm=0.01")
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{option}: the penalty in {item!r} must be a number >= 0; pass e.g. {option} {op_class}=0.1")
        decays[op_class] = value
    return decays


def check_sources(sources: Sequence[str] | None, option: str = "--sources") -> None:
    """Every name is a known data source."""
    from predictor_models.datasets.registry import SOURCES

    unknown = [name for name in sources or () if name not in SOURCES]
    if unknown:
        raise ValueError(f"{option}: unknown data source {unknown[0]!r}; known: {', '.join(SOURCES)}")


def load_training_set(data: str | Path | None, sources: Sequence[str] | None, extra: Sequence[str] | None,
                      remove_host_lag: bool = False):
    """Samples from the shipped rows (``data`` None) or a raw data folder, plus extra row files,
    resolved against the hardware catalog."""
    from predictor_models.datasets import LoadReport, load_all, read_rows
    from predictor_models.datasets.registry import DEFAULT_SOURCES
    from predictor_models.datasets.shipped_files import ShippedDataError, load_shipped
    from predictor_models.hardware import lookup_hardware
    from predictor_models.predictor.training import build_training_set

    if data is None:
        try:
            samples, reports = load_shipped(tuple(sources or DEFAULT_SOURCES))
        except ShippedDataError as error:
            raise TrainError(str(error)) from None
        where = "the shipped rows"
    else:
        root = Path(data)
        if not root.is_dir():
            raise TrainError(f"data folder {root} not found (pass --data with the raw source folders, e.g. "
                             "--data ../shared/data, or leave --data out to use the rows shipped with prenet)")
        samples, reports = load_all(root, tuple(sources or DEFAULT_SOURCES))
        where = str(root)
    lookup = lookup_hardware
    if extra:
        report = LoadReport("extra")
        mine = read_rows(extra, report)
        samples = samples + mine
        reports.append(report)
        lookup = extra_lookup(extra, {s.device for s in mine})
    if not samples:
        raise TrainError(f"no usable measurements in {where} (sources: {', '.join(sources or DEFAULT_SOURCES)})")
    ts = build_training_set(samples, lookup, remove_host_lag=remove_host_lag)
    if not len(ts):
        raise TrainError("no measurement is on a GPU the hardware catalog knows")
    return ts, reports


def extra_lookup(extra: Sequence[str], devices: set[str]):
    """Name -> catalog entry, knowing the GPUs described by ``hardware.toml`` files beside the extra rows
    (collect writes one for a GPU the catalog lacks); an extra device nobody describes is an error."""
    from predictor_models.hardware import UnknownHardwareError, default_catalog, lookup_hardware
    from predictor_models.hardware.catalog import apply_override

    catalog = default_catalog()
    for folder in extra:
        path = Path(folder) / "hardware.toml"
        if path.is_file():
            catalog = apply_override(catalog, path)
    for name in sorted(devices):
        try:
            lookup_hardware(name, catalog=catalog)
        except UnknownHardwareError as error:
            raise TrainError(f"--extra rows of {name!r}: {error}; put the hardware.toml that `prenet collect` wrote "
                             "for it beside the rows, or describe it in $PRENET_HARDWARE") from None
    return lambda name: lookup_hardware(name, catalog=catalog)


def train(data: str | Path | None, out: str | Path, *, extra: Sequence[str] | None = None, sources: Sequence[str] | None = None,
          members: int = DEFAULT_MEMBERS, date: str | None = None, weight_decay: dict[str, float] | None = None,
          remove_host_lag: bool = False, networks: bool = True, log=print) -> Path:
    """Fit every class model (and, unless ``networks`` is False, the tiled-kernel and GEMM networks) and write the
    artifact; returns its path."""
    from threadpoolctl import threadpool_limits

    from predictor_models.predictor import Predictor, save_predictor
    from predictor_models.predictor.expand import PROXIED
    from predictor_models.predictor.training import SEED, fit_models, weight_decays

    check_members(members, "members")
    check_sources(sources, "sources")
    check_output_path(out, "out", directory=True)
    start = time.time()
    ts, reports = load_training_set(data, sources, extra, remove_host_lag)
    log(f"loaded {len(ts)} samples on {len(set(ts.gpu))} GPUs in {time.time() - start:.0f} s")
    with threadpool_limits(1):
        models = fit_models(ts, members=members, seed=SEED, weight_decay=weight_decay)
        fitted = _fit_networks(ts, SEED, log) if networks else []
    counts = {}
    for cls in sorted(models):
        mask = ts.ops.op_class == cls
        counts[cls] = {str(g): int((mask & (ts.gpu == g)).sum()) for g in sorted(set(ts.gpu[mask]))}
    metadata = {
        "version": VERSION,
        "date": date or os.environ.get("PRENET_TRAIN_DATE") or _dt.date.today().isoformat(),
        "trained_on": sorted(set(map(str, ts.gpu))),
        "samples": counts,
        "data_sources": [r.as_dict() for r in reports],
        "excluded_at_training": dict(sorted(ts.excluded.items())),
        "modelled_classes": sorted(models),
        "proxied_classes": {k: v for k, v in PROXIED.items()},
        "seed": SEED,
        "members": members,
        "weight_decay": {cls: decay for cls, decay in sorted(weight_decays(weight_decay).items()) if cls in models},
        "host_lag_removed": bool(remove_host_lag),
        "networks": [{"prices": list(net.classes), "modes": list(net.modes), "inputs": net.inputs,
                      "harness_lags_s": net.members[0].lags} for net in fitted],
    }
    path = save_predictor(Predictor(models, metadata, networks=fitted), out)
    log(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB) in {time.time() - start:.0f} s")
    return path


def _fit_networks(ts, seed: int, log) -> list:
    """The tiled-kernel network (half-precision and FP32 convolutions) and the GEMM network (half-precision GEMMs),
    those the data has rows for."""
    import torch

    from predictor_models.predictor.training import fit_gemm_network, fit_network

    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # one thread: the same file on every run of one machine
    try:
        fitted = []
        for name, fit in (("tiled-kernel", fit_network), ("GEMM", fit_gemm_network)):
            start = time.time()
            network = fit(ts, seed=seed)
            if network is not None:
                log(f"fitted the {name} network in {time.time() - start:.0f} s")
                fitted.append(network)
        return fitted
    finally:
        torch.set_num_threads(threads)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The train options (shared with ``prenet train``)."""
    parser.set_defaults(prog=parser.prog)  # errors name the command as typed ("prenet train" or "python -m ...")
    add_data_argument(parser)
    parser.add_argument("--out", required=True, help="folder to write predictor.json into")
    parser.add_argument("--extra", nargs="*", default=None, help="folders/files of rows written by `collect`")
    parser.add_argument("--sources", nargs="*", default=None, help="data sources to use (default neusight xla vidur)")
    parser.add_argument("--members", type=int, default=DEFAULT_MEMBERS, help="MLPs per op class (ensemble)")
    parser.add_argument("--date", default=None, help="date recorded in the metadata (default: today)")
    add_weight_decay_argument(parser)
    parser.add_argument("--no-networks", action="store_true",
                        help="skip the kernel networks (half-precision convolutions and GEMMs then use the per-class "
                             "model; a quicker train)")
    parser.add_argument("--remove-host-lag", action="store_true",
                        help="learn kernel times: take off the host lag that NeuSight's per-op timings carry "
                             "(experimental; see the model card)")


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    """``--data DIR`` (shared with evaluate): raw source folders instead of the shipped rows."""
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="raw public source folders (e.g. ../shared/data) instead of the rows shipped with prenet")


def add_weight_decay_argument(parser: argparse.ArgumentParser) -> None:
    """``--weight-decay CLASS=VALUE ...`` (shared with evaluate)."""
    parser.add_argument("--weight-decay", nargs="*", default=None, metavar="CLASS=VALUE",
                        help="L2 penalty per op class instead of the default (e.g. gemm=0.01 elementwise=1)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m predictor_models.train", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args) -> int:
    try:
        check_members(args.members)  # bad options fail here, before the data is loaded
        check_sources(args.sources)
        decays = check_weight_decay(args.weight_decay)
        check_output_path(args.out, "--out", directory=True)
        train(args.data, args.out, extra=args.extra, sources=args.sources, members=args.members, date=args.date,
              weight_decay=decays, remove_host_lag=args.remove_host_lag, networks=not args.no_networks)
    except (TrainError, ValueError, FileNotFoundError) as error:  # RowsError is a ValueError
        print(f"{getattr(args, 'prog', 'train')}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
