"""Trial (issue 38): FP32 convolutions priced by the monotone tiled-kernel network, judged on whole steps.

    python benchmarks/network_fp32_trial.py --modes fp16 bf16 [fp32] [--classes conv [gemm]] [--json OUT]

The shipped network (`mono.py`) prices half-precision convolutions only; it was trained on every GEMM and
convolution in every mode, FP32 included. `network_fp32_folds.py` found it as good as the per-class model on
held-out GPUs' FP32 convolutions (26.9% against 26.4% MAPE) and worse on FP32 GEMMs (25.2% against 23.3%). Priced by
the network, an FP32 convolution is monotone in its work by construction (the class model breaks that order on
120 of 1,092 grid steps, `predictor_physics.py`). This trial patches the shipped predictor in this process only
(the network's modes and classes; the files are untouched) and reports what moves:

- development (whole steps the issue allows): Lambda's ResNet-50 and BERT tables (`projection_lambda.py`,
  `projection_lambda_bert.py`), the committed H200 steps (`estimate_h200.py`);
- `projection_accuracy.py`'s public steps (Gavel's FP32 ResNets on K80/P100/V100, NeuSight's FP32 transformers);
- the physics grids of `predictor_physics.py` (work steps predicted faster, per chain and dtype).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402


def install(classes: tuple[str, ...], modes: tuple[str, ...]) -> None:
    """Give the default predictor's network these classes and modes (in this process only)."""
    from predictor_models.predictor.model import KernelNetwork
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()
    predictor.networks = tuple(KernelNetwork(classes, modes, net.members) for net in predictor.networks)
    predictor._network_modes = frozenset(m for net in predictor.networks if "conv" in net.classes for m in net.modes)


def evaluate(data: Path) -> dict:
    from benchmarks import estimate_h200, predictor_physics, projection_accuracy, projection_lambda, \
        projection_lambda_bert
    from predictor_models.hardware import lookup_hardware
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    resnet = projection_lambda.rows()
    resnet_rel = projection_lambda.relative(resnet)
    bert = projection_lambda_bert.rows()
    bert_rel = projection_lambda_bert.relative(bert, group=("model", "precision"))
    h200 = estimate_h200.rows()
    gavel = projection_accuracy.gavel(data)
    transformers, _ = projection_accuracy.neusight(data)
    public = {}
    for name, rows in (("gavel", gavel), ("neusight", transformers)):
        rel = projection_accuracy.relative_errors(rows)
        public[name] = {"relative_mape": round(statistics.mean(r["ape"] for r in rel), 4) if rel else None,
                        "absolute_median_ape": round(statistics.median(
                            abs(r["predicted_s"] / r["measured_s"] - 1) for r in rows), 4) if rows else None}
    predictor, _ = default_predictor()
    devices = [lookup_hardware(g) for g in predictor_physics.GPUS]
    physics = {chain: {"steps": v["steps"], "violations": v["violations"]}
               for chain, v in predictor_physics.work_violations(predictor, devices).items()}
    return {"lambda_resnet50": projection_lambda.summary(resnet, resnet_rel),
            "lambda_bert": projection_lambda_bert.summary(bert, bert_rel),
            "h200": estimate_h200.summary(h200), "h200_rows": h200, "public_steps": public, "physics": physics}


def evaluate_with_hostbound(data: Path) -> dict:
    """`evaluate`, and the host-bound CNN steps (`projection_hostbound.py`) priced by the default predictor as it
    stands (the whole-step sets of the trials that patch it)."""
    from benchmarks import projection_hostbound
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()
    return {**evaluate(data), "hostbound": projection_hostbound.summary(projection_hostbound.hostbound_rows(predictor))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", required=True)
    parser.add_argument("--classes", nargs="+", default=["conv"])
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data"))
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    install(tuple(args.classes), tuple(args.modes))
    result = {"classes": args.classes, "modes": args.modes, **evaluate(Path(args.data))}
    print(json.dumps({k: v for k, v in result.items() if k != "h200_rows"}, indent=1))
    if args.json:
        write_result(args.json, "network_fp32_trial", argv, **result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
