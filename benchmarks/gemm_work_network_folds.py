"""Trial (issue 38): GEMMs priced by a network monotone in their work only, held out one GPU at a time.

    python benchmarks/gemm_work_network_folds.py [--inputs VARIANT] [--gpus ...] [--json OUT]
    python benchmarks/gemm_work_network_folds.py --inputs VARIANT --whole-steps DIR [--hidden 32,16] [--lbfgs-steps 300]

The class model's GEMMs break "more work is never faster" (`predictor_physics.py`: hundreds of grid steps per
precision). The tiled-kernel network (`mono.MonoNet`) is monotone by construction, but as shipped it is also
monotone in the device's strength (peak, bandwidth, SMs, board power all monotone inputs), and priced held-out
GPUs' half-precision GEMMs worse than the class model (model card: 30.9% against 15.9%). This trial asks whether a
GEMM network monotone in the *work only* keeps the class model's accuracy: every input that varies with b, m, n or
k is a monotone input, and each is non-decreasing in each of them (FLOPs and bytes over the device's rates, the
whole tiles' work, waves and whole waves of tiles, b, m, n, k, arithmetic intensity, bytes over L2); the device is
read through free inputs (SMs, ridge point, L2, board power per TFLOP, tensor cores, the math mode), clipped to
the training GPUs' range as the class model's features are. So more work is never predicted faster, for every
input; a stronger GPU is not guaranteed faster (the device envelope of `dominance.py` does that for measured GPUs).

Per fold: the network and the class model (one member each, the shipped weight decay) are trained on every other
GPU's GEMM rows (NeuSight's harness lag learnt per GPU beside the network and dropped, as for the shipped network),
and both are scored on the held-out GPU's GEMM rows, half precision and FP32 apart. NeuSight's FP32 rows hold that
lag; the network is scored with the other GPUs' median lag added (``network+lag``), as `network_fp32_folds.py` does.

The second trial (``--inputs scaled...``, `benchmarks/results/issue38_gemm_scaled_network/`): no raw size among the
monotone inputs, only times on the device (`time_features`), so that a GPU faster than the training ones reads as a
smaller op; ``network+floor`` holds the network at or above the training GPUs' fastest kernel-timed GEMM
(`kernel_floor`). Variants: ``scaled`` (the times beside the first trial's free device inputs), ``scaled-nodev`` (the
times and the FLOPs per board watt, the math mode and tensor-core flag the only free inputs, bf16 among them),
``scaled-half-alike`` (the same without a bf16 input: fp16 and bf16 alike), ``scaled-monotone`` (``scaled-nodev``'s
inputs with the tile's k-loop time, which grows with the SMs, replaced by log k), ``scaled-roofline``
(``scaled-half-alike`` with the compute and memory times as one input, their larger: DRAM bandwidth then moves a
compute-bound GEMM's inputs not at all), ``scaled-roofline-nopower`` (that without the FLOPs per board watt: at
equal time on the peak an H100 does 1.8x an A100's FLOPs per board watt, which a monotone input reads as a larger op;
its fit was 1.26x too slow on the H100's large fp16 GEMMs in sample).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FREE_DEVICE = ("log_sms", "log_ridge", "log_l2", "log_w_per_tflop")


def features(pairs, inputs: str = "work") -> tuple[np.ndarray, np.ndarray]:
    """(monotone, free) matrices of GEMM rows: see the module docstring. ``inputs`` "scaled": every monotone input
    is a time on the device (no raw b, m, n, k), so a GPU faster than the training ones is read through them."""
    if inputs.startswith("scaled"):
        return scaled_features(pairs, inputs)
    from predictor_models.predictor.kernel_features import TILE, _log, _padded, tiled_view

    _, b, m, n, k, _ = tiled_view(pairs)
    tiles = b * np.ceil(m / TILE) * np.ceil(n / TILE)
    waves = tiles / pairs.dev.sms
    ops = pairs.ops
    mono = [_log(ops.flops / pairs.peak), _log(ops.bytes / pairs.dev.bandwidth),
            _log(2.0 * b * _padded(m) * _padded(n) * k / pairs.peak), _log(waves), _log(np.ceil(waves)),
            _log(k), _log(b), _log(m), _log(n), _log(ops.flops / np.maximum(ops.bytes, 1.0)),
            _log(ops.bytes / pairs.dev.l2_bytes)]
    mode = ops.mode
    free = [(mode == 1) + 0.0, ((mode == 2) | (mode == 3)) + 0.0, (mode == 3) + 0.0, (mode == 4) + 0.0,
            pairs.tensor + 0.0, _log(pairs.dev.sms), _log(pairs.peak / pairs.dev.bandwidth),
            _log(pairs.dev.l2_bytes), _log(pairs.dev.tdp_w / (pairs.peak / 1e12))]
    return _stack(pairs, mono), _stack(pairs, free)


def _stack(pairs, cols) -> np.ndarray:
    """``(pairs, len(cols))``: each column broadcast to the pairs' shape and flattened."""
    return np.stack([np.broadcast_to(np.asarray(c, float), pairs.shape).reshape(-1) for c in cols], 1)


def time_features(pairs, bf16_input: bool = True) -> tuple[list, list]:
    """The second trial's (monotone, free) columns. Every monotone input but the waves is a time on the device, each
    non-decreasing in b, m, n and k: the FLOPs, the whole tiles' FLOPs and one tile's k-loop (on one SM's share of the
    peak, and that times the whole waves) at the mode's peak; the bytes at DRAM bandwidth and against L2; the FLOPs
    against the board's power. Free: the math mode (with a bf16 input where ``bf16_input``) and the tensor-core flag."""
    from predictor_models.predictor.kernel_features import TILE, _log, _padded, tiled_view

    _, b, m, n, k, _ = tiled_view(pairs)
    waves = b * np.ceil(m / TILE) * np.ceil(n / TILE) / pairs.dev.sms
    tile_s = 2.0 * TILE * TILE * k * pairs.dev.sms / pairs.peak
    ops = pairs.ops
    mono = [_log(ops.flops / pairs.peak), _log(ops.bytes / pairs.dev.bandwidth),
            _log(2.0 * b * _padded(m) * _padded(n) * k / pairs.peak), _log(waves), _log(np.ceil(waves)),
            _log(tile_s), _log(np.ceil(waves) * tile_s), _log(ops.bytes / pairs.dev.l2_bytes),
            _log(ops.flops / pairs.dev.tdp_w)]
    mode = ops.mode
    free = [(mode == 1) + 0.0, ((mode == 2) | (mode == 3)) + 0.0] + ([(mode == 3) + 0.0] if bf16_input else []) + [
        (mode == 4) + 0.0, pairs.tensor + 0.0]
    return mono, free


def scaled_features(pairs, inputs: str) -> tuple[np.ndarray, np.ndarray]:
    """The second trial's input matrices for the variant ``inputs`` (module docstring)."""
    from predictor_models.predictor.kernel_features import _log, tiled_view

    if inputs == "scaled-roofline-nopower":   # what ships since 2026-12-07: the predictor's own inputs
        from predictor_models.predictor.kernel_features import feature_arrays

        return feature_arrays(pairs, "gemm_times")
    mono, free = time_features(pairs, bf16_input=inputs not in ("scaled-half-alike", "scaled-roofline"))
    if inputs.startswith("scaled-roofline"):
        mono = [np.maximum(mono[0], mono[1])] + mono[2:]
    if inputs == "scaled-monotone":
        mono = mono[:5] + [_log(tiled_view(pairs)[4])] + mono[7:]
    if inputs == "scaled":
        return _stack(pairs, mono[:8]), features(pairs)[1]
    return _stack(pairs, mono), _stack(pairs, free)


def kernel_floor(ts, rows: np.ndarray) -> float:
    """The fastest GEMM among ``rows`` that a kernel-timed source (not NeuSight's events around one call) measured."""
    from predictor_models.predictor.training import kernel_floor_s

    return kernel_floor_s(ts, rows)


def fit_on(ts, rows: np.ndarray, inputs: str, seed: int, **fit_options):
    """The network fitted on ``rows`` of ``ts`` (capped per source, GPU and mode as the shipped network is), its harness
    lags learnt beside it; and the free inputs of those rows (for the device inputs' range)."""
    from predictor_models.predictor.bound import paired
    from predictor_models.predictor.mono_fit import fit_mono
    from predictor_models.predictor.training import NETWORK_CAP, balanced_rows, harness_lag_groups

    sub = ts.take(balanced_rows(ts, rows, cap=NETWORK_CAP, seed=seed, by_kernel=True))
    mono, free = features(paired(sub.ops, sub.devices), inputs)
    names, group = harness_lag_groups(sub.source, sub.gpu)
    return fit_mono(mono, free, sub.seconds, lag_group=group, lag_names=names, seed=seed, **fit_options), free


def mape(pred: np.ndarray, measured: np.ndarray) -> float:
    return float(np.mean(np.abs(pred / measured - 1.0)))


def fold(ts, gpu: str, seed: int, inputs: str = "work", **fit_options) -> dict:
    from predictor_models.predictor.bound import paired
    from predictor_models.predictor.features import feature_matrix
    from predictor_models.predictor.mlp import predict_mlp
    from predictor_models.predictor.training import HOST_LAG_SOURCES, fit_models

    gemm = ts.ops.op_class == "gemm"
    train = np.flatnonzero(gemm & (ts.gpu != gpu))
    test = np.flatnonzero(gemm & (ts.gpu == gpu))
    started = time.perf_counter()
    net, free = fit_on(ts, train, inputs, seed, **fit_options)
    fit_s = time.perf_counter() - started
    lo, hi = free[:, 5:].min(axis=0), free[:, 5:].max(axis=0)   # none without device inputs
    held = ts.take(test)
    hp = paired(held.ops, held.devices)
    hm, hf = features(hp, inputs)
    hf[:, 5:] = np.clip(hf[:, 5:], lo, hi)
    kernel = np.maximum(held.bound, np.exp(net(hm, hf)))
    floored = np.maximum(kernel, kernel_floor(ts, train))   # the training GPUs' fastest kernel-timed GEMM
    lag = statistics.median(net.lags.values()) if net.lags else 0.0
    with_lag = kernel + np.where(np.isin(held.source, list(HOST_LAG_SOURCES)), lag, 0.0)
    class_model = fit_models(ts.take(train), classes=["gemm"], seed=seed)["gemm"][0]
    by_class = held.bound * np.exp(np.maximum(predict_mlp(class_model, feature_matrix("gemm", hp)), 0.0))
    half = np.isin(held.ops.mode, [2, 3])
    out = {"gpu": gpu, "fit_s": round(fit_s, 1)}
    for name, rows in (("half", half), ("fp32", ~half)):
        if rows.any():
            out[name] = {"n": int(rows.sum()), "network": round(mape(kernel[rows], held.seconds[rows]), 4),
                         "network+lag": round(mape(with_lag[rows], held.seconds[rows]), 4),
                         "network+floor": round(mape(floored[rows], held.seconds[rows]), 4),
                         "class_model": round(mape(by_class[rows], held.seconds[rows]), 4)}
    return out


def trial_network(ts, rows: np.ndarray, inputs: str, seed: int, modes: tuple[str, ...], **fit_options):
    """A GEMM network fitted on ``rows`` (`fit_on`), as a `KernelNetwork` pricing GEMMs in ``modes`` with the inputs
    ``inputs``, held at or above the rows' fastest kernel-timed GEMM (`kernel_floor`); and the fitted network."""
    from dataclasses import dataclass

    from predictor_models.predictor.model import KernelNetwork

    net, _ = fit_on(ts, rows, inputs, seed, **fit_options)
    floor = kernel_floor(ts, rows)

    @dataclass(frozen=True)
    class TrialNetwork(KernelNetwork):
        def log_seconds(self, pairs) -> np.ndarray:
            mono, free = features(pairs, inputs)
            return np.maximum(net(mono, free).reshape(pairs.shape), np.log(floor))

    return TrialNetwork(("gemm",), modes, (net,)), net


def pooled(folds: list[dict], parts: tuple[str, ...], keys: tuple[str, ...]) -> dict:
    """Each part's figures ``keys`` over the folds, weighted by their rows."""
    summary = {}
    for part in parts:
        rows = [f[part] for f in folds if part in f]
        n = sum(r["n"] for r in rows)
        if n:
            summary[part] = {"n": n, **{k: round(sum(r[k] * r["n"] for r in rows) / n, 4) for k in keys}}
    return summary


def whole_steps(ts, inputs: str, seed: int, out: str, hidden: tuple[int, int], lbfgs_steps: int) -> None:
    """Fit the network on every GPU's GEMM rows, let it price fp16 and bf16 GEMMs on tensor-core GPUs in the shipped
    predictor (this process only; held at or above `kernel_floor`), and run the whole-step development sets with it
    into the folder ``out``; then print its in-sample bias on the trained GPUs' half-precision GEMMs, by size."""
    import torch

    from benchmarks import estimate_h200, projection_accuracy, projection_lambda_bert
    from predictor_models.hardware import lookup_hardware
    from predictor_models.predictor import load_predictor

    torch.set_num_threads(1)
    rows = np.flatnonzero(ts.ops.op_class == "gemm")
    network, _ = trial_network(ts, rows, inputs, seed, ("fp16", "bf16"), hidden=hidden, lbfgs_steps=lbfgs_steps)
    predictor = load_predictor()    # the cached shipped predictor every benchmark below prices with
    # in place of the shipped GEMM network (since 2026-12-07), beside the tiled-kernel one
    predictor.networks = tuple(n for n in predictor.networks if "gemm" not in n.classes) + (network,)
    Path(out).mkdir(parents=True, exist_ok=True)
    estimate_h200.main(["--json", f"{out}/estimate_h200.json"])
    projection_lambda_bert.main(["--table", "v2", "--json", f"{out}/projection_lambda_bert_v2.json"])
    projection_accuracy.main(["--out", f"{out}/projection_accuracy.json"])
    half = (ts.ops.op_class == "gemm") & np.isin(ts.ops.mode, [2, 3])
    for gpu in ("A100-SXM4-80GB", "A40", "H100-SXM5"):
        held = ts.take(np.flatnonzero(half & (ts.gpu == gpu)))
        ratio = predictor.predict_seconds([x.op for x in held.samples], lookup_hardware(gpu)) / held.seconds
        for lo, hi in ((0, 1e-4), (1e-4, 1e-3), (1e-3, 1)):
            k = (held.bound >= lo) & (held.bound < hi)
            print(f"in sample {gpu:16s} bound {lo:.0e}-{hi:.0e} s: predicted / measured median {np.median(ratio[k]):.3f}")


def main(argv: list[str] | None = None) -> int:
    from predictor_models.train import load_training_set

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", nargs="*", help="held-out GPUs (default: every GPU with GEMM rows)")
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--inputs", choices=("work", "scaled", "scaled-nodev", "scaled-half-alike", "scaled-monotone",
                                                   "scaled-roofline", "scaled-roofline-nopower"), default="work",
                        help="the network's monotone inputs: work sizes and times (the first trial), or times only")
    parser.add_argument("--json", help="write the folds here")
    parser.add_argument("--whole-steps", metavar="DIR",
                        help="instead of the folds: the network trained on every GPU, the whole-step sets priced with it")
    parser.add_argument("--hidden", default="32,16", help="the network's hidden widths")
    parser.add_argument("--lbfgs-steps", type=int, default=300, help="L-BFGS iterations (with --whole-steps)")
    args = parser.parse_args(argv)
    ts, _ = load_training_set(None, None, None)
    if args.whole_steps:
        hidden = tuple(int(x) for x in args.hidden.split(","))
        whole_steps(ts, args.inputs, args.seed, args.whole_steps, (hidden[0], hidden[1]), args.lbfgs_steps)
        return 0
    gpus = args.gpus or sorted(set(ts.gpu[ts.ops.op_class == "gemm"].tolist()))
    hidden = tuple(int(x) for x in args.hidden.split(","))
    folds = []
    for gpu in gpus:
        folds.append(fold(ts, gpu, args.seed, args.inputs, hidden=(hidden[0], hidden[1])))
        print(json.dumps(folds[-1]), flush=True)
    summary = pooled(folds, ("half", "fp32"), ("network", "network+lag", "network+floor", "class_model"))
    print(json.dumps(summary))
    if args.json:
        Path(args.json).write_text(json.dumps({"benchmark": "gemm_work_network_folds", "seed": args.seed, "inputs": args.inputs, "hidden": list(hidden),
                                               "folds": folds, "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
