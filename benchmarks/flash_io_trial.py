"""Trial (issue 38): a fused attention's two GEMMs priced without the score matrix they never write.

    python benchmarks/flash_io_trial.py --variant shipped|flash_io --json OUT

The predictor prices a fused (flash / efficient / cuDNN) attention as its QK^T and PV GEMMs (`expand._attention`),
each with a GEMM's bytes: QK^T writes and PV reads the batch x heads x s_q x s_kv score matrix. A flash kernel keeps
the scores on chip and moves Q, K, V and the output only (FlashAttention, Dao et al. 2022: its HBM traffic is the
inputs and output, the N^2 matrix never leaves SRAM). ``flash_io`` gives the two GEMMs those bytes: QK^T reads Q and
K and writes nothing, PV reads V and writes the output. Everything else as shipped.

Sets: the transformer steps (`projection_transformers.transformer_rows`: Llama-3.2-1B on the H200 at 768-16K
tokens, whose over-prediction grows with the sequence, +7.5% to +16.8%; MPT and Llama under FSDP on A100 and H100),
the H200 `estimate()` steps and Lambda's BERT with SDPA (`projection_lambda_bert.py --amp-as 16-mixed --attention
sdpa`). The flops are unchanged; only memory-bound attention GEMMs (long sequences, small head dims) move.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402


def flash_io(parts):
    """The two GEMMs of `expand._attention` with a flash kernel's bytes (module docstring)."""
    if len(parts) != 2 or parts[0][0].name != "attention.qk":
        return parts
    (qk, m_qk), (pv, m_pv) = parts
    d_qk, d_pv = qk.dims, pv.dims
    size = qk.bytes_written / max(d_qk["b"] * d_qk["m"] * d_qk["n"], 1.0)       # bytes per element
    q, k = d_qk["b"] * d_qk["m"] * d_qk["k"] * size, d_qk["b"] * d_qk["n"] * d_qk["k"] * size
    v, o = d_pv["b"] * d_pv["k"] * d_pv["n"] * size, d_pv["b"] * d_pv["m"] * d_pv["n"] * size
    return [(replace(qk, bytes_read=q + k, bytes_written=0.0), m_qk), (replace(pv, bytes_read=v, bytes_written=o), m_pv)]


def run(variant: str) -> dict:
    from benchmarks import estimate_h200, projection_lambda_bert, projection_transformers
    from predictor_models.predictor import expand as expand_module
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    original = expand_module._attention
    if variant == "flash_io":
        expand_module._attention = lambda op: flash_io(original(op))
    try:
        transformers = projection_transformers.transformer_rows(default_predictor()[0])
        h200 = estimate_h200.rows()
        bert = projection_lambda_bert.rows(projection_lambda_bert.TABLES["v1"][0], attention="sdpa", amp="16-mixed")
    finally:
        expand_module._attention = original
    return {"variant": variant,
            "transformers": {"summary": projection_transformers.summary(transformers),
                             "rows": [{k: r[k] for k in ("model", "gpu", "seq", "measured_s", "predicted_s", "ape")}
                                      for r in transformers]},
            "h200": estimate_h200.summary(h200),
            "lambda_bert_sdpa": {prec: {"median_abs_error": round(statistics.median(abs(r["error"]) for r in bert
                                                                                    if r["precision"] == prec), 4),
                                        "worst_abs_error": round(max(abs(r["error"]) for r in bert
                                                                     if r["precision"] == prec), 4)}
                                 for prec in sorted({r["precision"] for r in bert})}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("shipped", "flash_io"), required=True)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    result = run(args.variant)
    t = result["transformers"]["summary"]
    print(f"{args.variant}: transformer steps median {t['all']['median']:.1%}, worst {t['all']['max']:.1%}")
    for r in result["transformers"]["rows"]:
        print(f"   {r['model']:13s} {r['gpu']:15s} seq {r['seq']:6d}  {r['predicted_s'] / r['measured_s'] - 1:+.1%}")
    print("H200", {k: (v["median_abs_error"], v["worst_abs_error"]) for k, v in result["h200"].items()})
    print("Lambda BERT (autocast, SDPA)", result["lambda_bert_sdpa"])
    if args.json:
        write_result(args.json, "flash_io_trial", argv, **result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
