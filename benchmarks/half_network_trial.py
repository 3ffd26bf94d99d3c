"""Trial (issue 38): the kernel network pricing half-precision convolutions on GPUs without tensor cores for them.

    python benchmarks/half_network_trial.py --variant shipped|every_gpu [--json OUT]

The shipped network prices its modes where they run on tensor cores, and FP32 everywhere
(`Predictor._network_prices`); a Pascal GPU's fp16 and bf16 on a V100, T4 or P100 (no bf16 units) stay with the
class models, which break "more work is never faster" there (`predictor_physics.py`: 35 bf16 convolution steps).
``every_gpu`` lets the network price its modes on every GPU (it learnt DeepBench's P100 pseudo-fp16 convolutions).
The predictor is patched in this process only. Judged on the host-bound CNN steps (`projection_hostbound.py`: fp16
steps on a GTX 1080 Ti and a TITAN Xp, the only development steps in half precision on such GPUs) and on the
physics grids' convolutions.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import show_and_write  # noqa: E402


def install(variant: str) -> None:
    from predictor_models.predictor.model import Predictor

    if variant == "every_gpu":
        Predictor._network_prices = staticmethod(lambda modes, devs: np.ones((modes.size, len(devs.names)), bool))


def evaluate() -> dict:
    from benchmarks import predictor_physics, projection_hostbound
    from predictor_models.hardware import lookup_hardware
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor = default_predictor()[0]
    rows = projection_hostbound.hostbound_rows(predictor)
    errors = [abs(r["predicted_s"] / r["measured_s"] - 1) for r in rows]
    out = {"hostbound": {"n": len(rows), "mape": round(statistics.fmean(errors), 4), "max": round(max(errors), 4)},
           "hostbound_half_by_gpu": {}}
    for gpu in sorted({r["gpu"] for r in rows if r["precision"] != "32-true"}):
        signed = [r["predicted_s"] / r["measured_s"] - 1 for r in rows if r["gpu"] == gpu and r["precision"] != "32-true"]
        out["hostbound_half_by_gpu"][gpu] = {"median": round(statistics.median(signed), 4),
                                             "worst": round(max(map(abs, signed)), 4)}
    work = predictor_physics.work_violations(predictor, [lookup_hardware(g) for g in predictor_physics.GPUS])
    out["conv_work_violations"] = {k: v["violations"] for k, v in work.items() if k.startswith("conv")}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("shipped", "every_gpu"), required=True)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    install(args.variant)
    return show_and_write({"benchmark": "half_network_trial", "variant": args.variant, **evaluate()}, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
