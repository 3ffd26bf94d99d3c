"""Trial (issue 38): FP32 and TF32 GEMMs priced by a monotone GEMM network of their own, judged on whole steps.

    python benchmarks/fp32_gemm_network_trial.py [--inputs VARIANT] [--json OUT]

`gemm_levelled_network_folds.py --fp32-only --inputs scaled-roofline` trains the GEMM network on FP32 and TF32 GEMM
rows only, with the FLOPs per board watt among its monotone inputs (the low-power cards' FP32 GEMMs run far below
their datasheet peak). Here that network is trained on every GPU's FP32 and TF32 GEMM rows (NeuSight's harness lag
learnt beside it and dropped, as for the shipped network; held at or above the training rows' fastest kernel-timed
GEMM) and prices FP32 GEMMs on every GPU and TF32 GEMMs on GPUs with TF32 tensor cores, in the shipped predictor in
this process only. It reports the development sets of `tf32_conv_levelled_trial.py` (whose ``shipped`` file is the
comparison). Monotone in b, m, n and k by construction.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402


def install(inputs: str, seed: int) -> dict:
    """Fit the network and put it in the default predictor for FP32 and TF32 GEMMs; returns what was fitted."""
    import torch

    from benchmarks.gemm_work_network_folds import kernel_floor, trial_network
    from predictor_models.train import load_training_set
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    torch.set_num_threads(1)
    ts, _ = load_training_set(None, None, None)
    rows = np.flatnonzero((ts.ops.op_class == "gemm") & np.isin(ts.ops.mode, [0, 1]))
    network, net = trial_network(ts, rows, inputs, seed, ("fp32", "tf32"))
    predictor, _ = default_predictor()
    predictor.networks = predictor.networks + (network,)
    return {"rows": int(rows.size), "floor_s": kernel_floor(ts, rows),
            "lags": {k: round(v, 7) for k, v in (net.lags or {}).items()}}


def main(argv: list[str] | None = None) -> int:
    from benchmarks import network_fp32_trial

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", default="scaled-roofline", choices=("scaled-roofline", "scaled-roofline-nopower"))
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data"))
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    fitted = install(args.inputs, args.seed)
    result = {"inputs": args.inputs, "network": fitted, **network_fp32_trial.evaluate_with_hostbound(Path(args.data))}
    print(json.dumps({k: v for k, v in result.items() if k not in ("h200_rows", "network")}, indent=1))
    if args.json:
        write_result(args.json, "fp32_gemm_network_trial", argv, **result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
