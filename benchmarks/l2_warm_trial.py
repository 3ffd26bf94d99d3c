"""Trial (issue 38): the half-precision pointwise ops and norms learnt without the rows a warm L2 served.

    python benchmarks/l2_warm_trial.py --variant shipped|fits|twice|fits+floor|twice+floor [--json OUT]
    python benchmarks/l2_warm_trial.py --folds fits+floor|twice+floor [--json OUT]

Vidur's profiler times each op back to back with no flush between repeats, so an op whose working set fits in the
L2 reads it from the L2: its fp16 adds on an H100 reach 1.02-1.06 of the DRAM bandwidth at 0.5-2x the L2, which
DRAM cannot give. Those are the training set's only half-precision pointwise ops and norms. The H200's own rows,
timed cold (an L2 flush before every call), run ~1.5x longer than the predictor prices them at that size (a
5.9M-element bf16 mul, a 2,376 x 2,936 bf16 layer norm), and Liger's eager modules, timed by Triton's ``do_bench``,
which also flushes, are priced too fast in bf16 (RoPE 0.52-0.66, RMSNorm 0.83). A training step reads both: the
previous op's output, warm where it fits, and activations saved long before, cold.

Variants: ``fits`` refits the pointwise and norm class models (three members, the shipped seed and weight decay)
without Vidur's rows whose bytes fit in their GPU's L2; ``twice`` also without those up to twice the L2. Every other
class, the network and the host model are as shipped; the shipped predictor is patched in this process only.
``+floor``: the two classes' device time is also never below `training.KERNEL_FLOOR_S` (5 us, the shortest kernel in
the kernel-timed sources): without the warm rows no half-precision row smaller than the L2 teaches the floor.

Judged on the development sets of `stream_lag_free_trial.evaluate` (the H200 steps, Lambda's tables, the public
whole-step sets, the physics grids of norms and adds), Liger's eager modules (`liger_ops.py`) and, held out, the
H200's kernel-timed op rows (`h200_op_rows.py`). ``--folds``: the two classes held out one GPU at a time (the class
models alone, as `predictor_models.evaluate` scores its ``mape``), refit as shipped and as the variant on the same
folds, scored on every row of the held-out GPU and on its rows a warm L2 did not serve.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import show_and_write  # noqa: E402
from benchmarks.stream_lag_free_trial import STREAMING, evaluate  # noqa: E402

WARM_SOURCES = ("vidur",)          # harnesses that repeat an op with no flush in between
LIMITS = {"fits": 1.0, "twice": 2.0}   # working set over the L2 below which a row is left out
VARIANTS = ("shipped", *LIMITS, *(f"{name}+floor" for name in LIMITS))


def warm_rows(ts, limit: float) -> np.ndarray:
    """Which rows of ``ts`` a warm L2 served: streaming rows of `WARM_SOURCES` moving less than ``limit`` x the L2."""
    return (np.isin(ts.source, WARM_SOURCES) & np.isin(ts.ops.op_class, STREAMING)
            & (ts.ops.bytes < limit * ts.devices.l2_bytes))


def refit_models(limit: float) -> tuple[dict, int]:
    """The two streaming classes refit without the warm rows below ``limit`` x the L2; and how many were left out."""
    from threadpoolctl import threadpool_limits

    from predictor_models.predictor.training import SEED, fit_models
    from predictor_models.train import DEFAULT_MEMBERS, load_training_set

    ts, _ = load_training_set(None, None, None)
    warm = warm_rows(ts, limit)
    kept = ts.take(np.flatnonzero(~warm))
    with threadpool_limits(1):
        return fit_models(kept, classes=STREAMING, members=DEFAULT_MEMBERS, seed=SEED), int(warm.sum())


def install(variant: str) -> int:
    """Patch the default predictor (this process only); the warm rows left out."""
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    if variant == "shipped":
        return 0
    predictor = default_predictor()[0]
    models, left_out = refit_models(LIMITS[variant.removesuffix("+floor")])
    predictor.models.update(models)
    if variant.endswith("+floor"):
        from predictor_models.predictor.training import KERNEL_FLOOR_S

        adjust = predictor.adjust_times

        def floored(cols, devs, times, bound):
            adjusted = adjust(cols, devs, times, bound)
            streaming = np.isin(cols.op_class, STREAMING)[:, None]
            return np.where(streaming, np.maximum(adjusted, KERNEL_FLOOR_S), adjusted)

        predictor.adjust_times = floored
    return left_out


def _mape(predicted: np.ndarray, measured: np.ndarray) -> float | None:
    return round(float(np.mean(np.abs(predicted / measured - 1.0))), 4) if measured.size else None


def folds(variant: str) -> dict:
    """Per held-out GPU and class: MAPE of the shipped refit and of the variant, on all its rows and on the cold ones."""
    from threadpoolctl import threadpool_limits

    from predictor_models.predictor.model import Predictor
    from predictor_models.predictor.training import KERNEL_FLOOR_S, SEED, class_xy, fit_models
    from predictor_models.train import DEFAULT_MEMBERS, load_training_set

    ts, _ = load_training_set(None, None, None)
    warm = warm_rows(ts, LIMITS[variant.removesuffix("+floor")])
    out: dict = {}
    gpus = sorted({str(g) for g, c in zip(ts.gpu, ts.ops.op_class) if c in STREAMING})
    for gpu in gpus:
        held = ts.gpu == gpu
        with threadpool_limits(1):
            shipped = fit_models(ts.take(np.flatnonzero(~held)), classes=STREAMING, members=DEFAULT_MEMBERS, seed=SEED)
            trial = fit_models(ts.take(np.flatnonzero(~held & ~warm)), classes=STREAMING, members=DEFAULT_MEMBERS,
                               seed=SEED)
        for op_class in STREAMING:
            rows = np.flatnonzero(held & (ts.ops.op_class == op_class))
            if not rows.size:
                continue
            x, _ = class_xy(ts, op_class, rows)
            sub = ts.take(rows)
            priced = {}
            for name, models in (("shipped", shipped), ("variant", trial)):
                seconds = sub.bound * np.exp(np.maximum(Predictor._ensemble(models[op_class], x), 0.0))
                priced[name] = np.maximum(seconds, KERNEL_FLOOR_S) if name == "variant" and variant.endswith("+floor") \
                    else seconds
            cold = ~warm[rows]
            out[f"{gpu}/{op_class}"] = {"rows": int(rows.size), "cold_rows": int(cold.sum()),
                                        **{f"{name}_all": _mape(t, sub.seconds) for name, t in priced.items()},
                                        **{f"{name}_cold": _mape(t[cold], sub.seconds[cold]) for name, t in priced.items()}}
    pooled = {}
    for key in ("shipped_all", "variant_all", "shipped_cold", "variant_cold"):
        weight = "cold_rows" if key.endswith("cold") else "rows"
        scored = [(v[key], v[weight]) for v in out.values() if v[key] is not None]
        pooled[key] = round(sum(m * n for m, n in scored) / sum(n for _, n in scored), 4)
    return {"folds": out, "pooled": pooled}


def op_checks() -> dict:
    """Liger's eager modules (device-bound rows by dtype) and the H200's streaming op rows, with the patched predictor."""
    from benchmarks import h200_op_rows, liger_ops

    h200 = h200_op_rows.evaluate()
    return {"liger": liger_ops.evaluate()["summary"]["by_dtype"],
            "h200_op_rows": {k: v["shipped"] for k, v in h200.items() if k.split("/")[0] in STREAMING}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS)
    parser.add_argument("--folds", choices=[v for v in VARIANTS if v != "shipped"],
                        help="the two classes held out one GPU at a time, as shipped and as this variant")
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data"))
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    if args.folds:
        return show_and_write({"benchmark": "l2_warm_trial", "folds_of": args.folds, **folds(args.folds)}, args.json)
    if not args.variant:
        parser.error("--variant or --folds")
    left_out = install(args.variant)
    return show_and_write({"benchmark": "l2_warm_trial", "variant": args.variant, "warm_rows_left_out": left_out,
                           **op_checks(), **evaluate(Path(args.data))}, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
