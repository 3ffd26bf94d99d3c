"""Trial (issue 38): TF32 GEMMs priced by the shipped monotone GEMM network, judged on whole steps.

    python benchmarks/tf32_gemm_network_trial.py --variant shipped|tf32|no_tf32 [--json OUT]

The GEMM network was trained on every GEMM row, OpenXLA's TF32 GEMMs on the H100 and B200 among them, and is monotone
in b, m, n and k by construction. Until predictor 1.4.0 it priced fp16 and bf16 only, and TF32 GEMMs were the class
model's, which `predictor_physics.py` found faster with twice the work on 345 of 4,160 grid steps. Held out one GPU
at a time, the network prices those TF32 rows better in the worst case than the class model
(`results/issue38_gemm_levelled/folds.json`: B200 18.5% against 32.5%, H100 21.0% against 17.4%; one member each).
``tf32`` gives the GEMM network TF32 GEMMs (on GPUs with TF32 tensor cores; elsewhere a TF32 GEMM runs FP32 kernels
and stays with the class model), ``no_tf32`` takes them away, ``shipped`` leaves the predictor as it is, all in this
process only. The committed runs were made at 92a0393, before 1.4.0: there ``shipped`` is the predictor without TF32
GEMMs and ``tf32`` the change; since 1.4.0 ``shipped`` and ``tf32`` are the same, and ``no_tf32`` is the comparison.
Each reports the development sets of `network_fp32_trial.evaluate_with_hostbound` and the physics grids, the worst
pair of Lambda's BERT steps relative to one another, and (``wider``) `stream_lag_free_trial.evaluate`'s sets (Lambda's
v2 tables, the transformer steps, the public absolute and relative steps, data-parallel steps).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402


def install(tf32: bool) -> list[dict]:
    """Let the default predictor's GEMM network price TF32 GEMMs (``tf32``) or not; returns the networks' classes and
    modes."""
    from dataclasses import replace

    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()

    def modes(net) -> tuple[str, ...]:
        kept = tuple(m for m in net.modes if m != "tf32")
        return (*kept, "tf32") if tf32 else kept
    predictor.networks = tuple(replace(net, modes=modes(net)) if net.classes == ("gemm",) else net
                               for net in predictor.networks)
    return [{"classes": list(n.classes), "modes": list(n.modes)} for n in predictor.networks]


def bert_relative_worst() -> dict:
    """The worst pair of Lambda's v1 BERT steps relative to one another, per precision (the summaries give means)."""
    from benchmarks import projection_lambda_bert

    rel = projection_lambda_bert.relative(projection_lambda_bert.rows(), group=("model", "precision"))
    worst: dict = {}
    for r in rel:
        key = r["precision"]
        if abs(r["error"]) > abs(worst.get(key, {"error": 0})["error"]):
            worst[key] = r
    return worst


def main(argv: list[str] | None = None) -> int:
    from benchmarks import network_fp32_trial, stream_lag_free_trial

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("shipped", "tf32", "no_tf32"), required=True)
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data"))
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    networks = None if args.variant == "shipped" else install(args.variant == "tf32")
    result = {"variant": args.variant, "networks": networks,
              **network_fp32_trial.evaluate_with_hostbound(Path(args.data)),
              "lambda_bert_relative_worst": bert_relative_worst(),
              "wider": stream_lag_free_trial.evaluate(Path(args.data))}
    print(json.dumps({k: v for k, v in result.items() if k != "h200_rows"}, indent=1))
    if args.json:
        write_result(args.json, "tf32_gemm_network_trial", argv, **result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
