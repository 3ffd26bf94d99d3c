"""Tensor- and pipeline-parallel targets against public measurements.

    python benchmarks/projection_parallel.py [--data ../shared/data] [--out benchmarks/results/projection_parallel.json]

Two sets, every row kept, nothing fitted to them:

- NeuSight's distributed labels (``neusight/label/<GPU>/<model>-train-<seq>-<batch>-{dp4,tp4,pp4_1}.json``, MIT,
  sitar-lab/NeuSight ``scripts/asplos/collect_label_distributed.py``): GPT-2-large and GPT-3-XL configurations
  trained with Megatron-LM through Hugging Face Accelerate's ``MegatronLMPlugin`` on four H100 (SXM, 80 GB) or
  A100-SXM4-40GB, FP32 without TF32 (PyTorch 2.1), ``<batch>`` the global batch; the label is the mean of the
  10 fastest of 50 iterations of ``model(**batch)`` + ``accelerator.backward``, which under the plugin is
  Megatron's whole ``train_step`` (forward, backward, gradient reduction, Adam step). ``pp4_1``: one
  micro-batch. Each is projected as ``4x <GPU>`` (dp4: one sample per GPU), ``4x <GPU> tp=4`` or ``4x <GPU> pp=4``.
- Megatron-LM's weak-scaling table (Narayanan et al., SC'21, Table 1; ``benchmarks/data/megatron_sc21_table1.json``):
  achieved TFLOP/s per A100 of GPT models from 1.7B to 1T parameters, TP x PP x DP over up to 3,072 GPUs, fp16,
  activation recomputation, interleaved schedule. Achieved TFLOP/s = F / (step x GPUs) with the paper's
  F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)). The table does not give each row's micro-batch size nor its virtual
  stages: both are chosen the way the authors say they chose theirs (for throughput): among micro-batches
  1, 2, 4, 8 dividing the replica's batch and virtual stages 2-4 dividing the layers per stage (1 without pp),
  the combination the projection predicts fastest among those it says fit in 80 GB.

It also writes the worked example of docs/projection.md (Llama-2-13B's shape on 8, 16 and 32 H100, three layouts
each): predictions only, no measurement.

Both are Megatron-LM's GPT (`MegatronGPT`): pre-norm blocks in its [s, b, h] layout (strided batched QK^T with the
scale folded in, one fused scale-mask-softmax kernel, no transposing copies but the context's), GELU (tanh)
MLP of 4h, dropout 0.1, learned positions, the LM head tied to the embedding, vocabulary padded to 128 x tp,
fp32 cross entropy; its fused bias-dropout-add runs here as two kernels.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from prenet_callbacks import estimate  # noqa: E402
from prenet_callbacks.projection.pricing.predictor_source import default_predictor  # noqa: E402

NEUSIGHT_GPUS = {"NVIDIA_H100_80GB_HBM3": "H100-SXM5", "NVIDIA_A100-SXM4-40GB": "A100-SXM4-40GB"}
NEUSIGHT_MODES = {"dp4": "", "tp4": "tp=4", "pp4_1": "pp=4 microbatches=1"}
MEGATRON = HERE / "data/megatron_sc21_table1.json"
MEGATRON_GPU = "A100-SXM4-80GB"
MEGATRON_VOCAB, MEGATRON_SEQ = 51200, 2048
MICRO_BATCHES = (1, 2, 4, 8)
VIRTUAL_STAGES = (2, 3, 4)


class _Block(nn.Module):
    def __init__(self, hidden: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.fc1, self.fc2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
        self.drop = nn.Dropout(dropout)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        s, b, h = x.shape
        a, d = self.heads, h // self.heads
        q, k, v = self.qkv(x).view(s, b * a, 3 * d).split(d, dim=-1)   # [s, b*a, d] views
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        scores = torch.baddbmm(torch.empty(b * a, s, s, dtype=x.dtype, device=x.device), q, k.transpose(1, 2),
                               beta=0.0, alpha=1.0 / math.sqrt(d))
        probs = self.drop(torch.softmax(scores, dim=-1))      # Megatron's fused scale-mask-softmax: one kernel
        context = torch.bmm(probs, v).view(b, a, s, d).permute(2, 0, 1, 3).contiguous().view(s, b, h)
        return self.proj(context)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attention(self.ln1(x)))
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh")))


class MegatronGPT(nn.Module):
    """Megatron-LM's GPT (see the module docstring); input token ids (b, s), output logits (s, b, vocab)."""

    def __init__(self, vocab: int, hidden: int, layers: int, heads: int, positions: int, dropout: float = 0.1):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, hidden), nn.Embedding(positions, hidden)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(_Block(hidden, heads, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.drop(self.wte(ids) + self.wpe(pos)).transpose(0, 1).contiguous()
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def padded_vocab(vocab: int, tp: int) -> int:
    """Megatron-LM pads the vocabulary to a multiple of 128 x tp (make-vocab-size-divisible-by 128)."""
    step = 128 * tp
    return -(-vocab // step) * step


def _loss(batch: int, seq: int):
    labels = torch.empty(seq * batch, dtype=torch.long, device="meta")
    return lambda logits: F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels)


def _estimate(model_args: dict, batch: int, seq: int, targets: list[str], **options):
    with torch.device("meta"):
        model = MegatronGPT(**model_args)
    ids = torch.empty(batch, seq, dtype=torch.long, device="meta")
    return estimate(model, ids, targets=targets, loss_fn=_loss(batch, seq), **options)


# ------------------------------------------------------------------------------------------------ NeuSight
def neusight_labels(data: Path):
    for folder, gpu in NEUSIGHT_GPUS.items():
        for path in sorted((data / "neusight/label" / folder).glob("*-train-*-*-*.json")):
            model, _, seq, batch, mode = path.stem.split("-")
            if mode in NEUSIGHT_MODES:
                yield gpu, model, int(seq), int(batch), mode, json.loads(path.read_text())["e2e_latency"] / 1e3


def neusight_rows(data: Path, predictor) -> list[dict]:
    configs = data / "neusight/data/DLmodel_configs"
    rows = []
    for gpu, model, seq, batch, mode, seconds in neusight_labels(data):
        cfg = json.loads((configs / f"{model}.json").read_text())
        tp = 4 if mode == "tp4" else 1
        args = dict(vocab=padded_vocab(cfg["vocab_size"], tp), hidden=cfg["n_embd"], layers=cfg["n_layer"],
                    heads=cfg["n_head"], positions=cfg["n_positions"])
        per_device = batch // 4 if mode == "dp4" else batch
        target = f"4x {gpu} {NEUSIGHT_MODES[mode]}".strip()
        est = _estimate(args, per_device, seq, [target], precision="32-true", float32_matmul_precision="highest",
                        optimizer="adamw-fused", predictor=predictor)
        row = est.row(target)
        rows.append({"source": "neusight", "model": model, "seq": seq, "global_batch": batch, "mode": mode,
                     "target": row["label"], "measured_s": round(seconds, 6), "predicted_s": round(row["step_s"], 6),
                     "ape": round(abs(row["step_s"] / seconds - 1), 4), "layout": _brief(row)})
    return rows


# ------------------------------------------------------------------------------------------------ Megatron
def model_flops(row: dict) -> float:
    """F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)): one iteration with activation recomputation (SC'21, 5.1)."""
    b, s, l, h, v = row["batch"], MEGATRON_SEQ, row["layers"], row["hidden"], MEGATRON_VOCAB
    return 96.0 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))


def _megatron_target(row: dict, virtual: int) -> str:
    nodes = row["gpus"] // 8
    if row["tp"] == 1 and row["pp"] == 1:
        return f"{nodes}x8 {MEGATRON_GPU}"
    parts = [f"{nodes}x8 {MEGATRON_GPU}", f"tp={row['tp']}"] + ([f"pp={row['pp']}"] if row["pp"] > 1 else [])
    parts.append(f"global_batch={row['batch']}")
    if virtual > 1:
        parts.append(f"interleaved={virtual}")
    return " ".join(parts)


def megatron_candidates(row: dict) -> list[tuple[int, int]]:
    """(micro-batch, virtual stages) pairs the table's row may have run."""
    replicas = row["gpus"] // (row["tp"] * row["pp"])
    per_replica = row["batch"] // replicas
    per_stage = row["layers"] // row["pp"]
    virtuals = [v for v in VIRTUAL_STAGES if per_stage % v == 0] if row["pp"] > 1 else [1]
    return [(b, v) for b in MICRO_BATCHES if per_replica % b == 0 for v in virtuals or [1]]


def megatron_rows(predictor) -> list[dict]:
    table = json.loads(MEGATRON.read_text())["rows"]
    out = []
    for row in table:
        args = dict(vocab=MEGATRON_VOCAB, hidden=row["hidden"], layers=row["layers"], heads=row["heads"],
                    positions=MEGATRON_SEQ)
        replicas = row["gpus"] // (row["tp"] * row["pp"])
        tried = []
        for micro, virtual in megatron_candidates(row):
            target = _megatron_target(row, virtual)
            plain = row["tp"] == 1 and row["pp"] == 1
            est = _estimate(args, micro, MEGATRON_SEQ, [target], precision="16-true", optimizer="adamw-fused",
                            activation_checkpointing="full", predictor=predictor,
                            accumulate=row["batch"] // (replicas * micro) if plain else 1)
            projected = est.row(target)
            tried.append((micro, virtual, projected))
        fitting = [t for t in tried if t[2]["fits_memory"] is not False] or tried
        micro, virtual, best = min(fitting, key=lambda t: t[2]["step_s"])
        tflops = model_flops(row) / (best["step_s"] * row["gpus"]) / 1e12
        out.append({"source": "megatron-sc21", "params_b": row["params_b"], "tp": row["tp"], "pp": row["pp"],
                    "gpus": row["gpus"], "batch": row["batch"], "target": best["label"], "micro_batch": micro,
                    "virtual_stages": virtual, "fits_memory": best["fits_memory"], "memory_gib": best["memory_gib"],
                    "predicted_step_s": round(best["step_s"], 4), "measured_tflops": row["tflops_per_gpu"],
                    "predicted_tflops": round(tflops, 1), "ape": round(abs(tflops / row["tflops_per_gpu"] - 1), 4),
                    "candidates": [{"micro_batch": m, "virtual_stages": v, "step_s": round(r["step_s"], 4),
                                    "fits_memory": r["fits_memory"]} for m, v, r in tried],
                    "layout": _brief(best)})
    return out


# ------------------------------------------------------------------------------------------------ worked example
LLAMA_13B = dict(hidden_size=5120, intermediate_size=13824, num_hidden_layers=40, num_attention_heads=40,
                 num_key_value_heads=40, vocab_size=32000, max_position_embeddings=4096)
EXAMPLE_SEQ, EXAMPLE_BATCH = 4096, 128
EXAMPLE_LAYOUTS = {"8x H100": ("tp=8", "tp=4 pp=2", "tp=2 pp=4"), "2x8 H100": ("tp=8", "tp=8 pp=2", "tp=4 pp=2"),
                   "4x8 H100": ("tp=8", "tp=8 pp=4", "tp=4 pp=2")}


def worked_example(predictor) -> list[dict]:
    """Llama-2-13B's shape (Hugging Face LlamaForCausalLM, SDPA, random weights on meta), sequences of 4,096 tokens,
    one per micro-batch, 128 per optimizer step, bf16-mixed, AdamW: 8, 16 and 32 H100 in three layouts each."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**LLAMA_13B)
    config._attn_implementation = "sdpa"
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    targets = [f"{gpus} {layout} global_batch={EXAMPLE_BATCH}" for gpus, layouts in EXAMPLE_LAYOUTS.items()
               for layout in layouts]
    est = estimate(model, torch.empty(1, EXAMPLE_SEQ, dtype=torch.long, device="meta"), targets=targets,
                   precision="bf16-mixed", optimizer="adamw", predictor=predictor)
    tokens = EXAMPLE_SEQ * EXAMPLE_BATCH
    out = []
    for row in est.rows:
        layout = row["layout"]
        per_million = (row["usd_per_hour"] * row["step_s"] / 3600 / tokens * 1e6) if row["usd_per_hour"] else None
        out.append({"target": row["label"], "gpus": row["devices"], "step_s": round(row["step_s"], 2),
                    "tokens_per_s": round(tokens / row["step_s"]), "memory_gib": row["memory_gib"],
                    "fits_memory": row["fits_memory"], "bubble_share": layout["bubble_share"],
                    "tp_comm_s": layout["tp_comm_s"], "pp_comm_s": layout["pp_comm_s"], "dp_comm_s": layout["dp_comm_s"],
                    "usd_per_million_tokens": None if per_million is None else round(per_million, 3)})
    return out


def _brief(row: dict) -> dict | None:
    layout = row.get("layout")
    if not layout:
        return None
    keys = ("microbatches", "micro_batch_size", "bubble_share", "tp_comm_s", "pp_comm_s", "dp_comm_s", "stage_s",
            "param_share", "unsplit_share")
    return {k: layout.get(k) for k in keys}


def _summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "median": round(statistics.median(values), 4), "mape": round(statistics.fmean(values), 4),
            "max": round(max(values), 4), "within_15": sum(v <= 0.15 for v in values)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(HERE.parents[1] / "shared/data"))
    parser.add_argument("--out", default=str(HERE / "results/projection_parallel.json"))
    args = parser.parse_args(argv)
    data = Path(args.data)
    if not (data / "neusight/label").is_dir():
        print(f"no NeuSight labels under {data} (need neusight/label/); nothing to check", file=sys.stderr)
        return 2
    torch.backends.cudnn.allow_tf32 = False   # NeuSight's runs: FP32 without TF32
    predictor, note = default_predictor()
    neusight = neusight_rows(data, predictor)
    megatron = megatron_rows(predictor)
    example = worked_example(predictor)
    result = {
        "date": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "predictor": (getattr(predictor, "metadata", {}) or {}).get("version"), "predictor_note": note,
        "targets": {"neusight_median_ape": 0.10, "megatron_tflops_ape": 0.15},
        "neusight": {"summary": _summary([r["ape"] for r in neusight]),
                     "by_mode": {m: _summary([r["ape"] for r in neusight if r["mode"] == m]) for m in NEUSIGHT_MODES},
                     "rows": neusight},
        "megatron": {"summary": _summary([r["ape"] for r in megatron]), "rows": megatron},
        "worked_example": {"model": "Llama-2-13B shape", "seq": EXAMPLE_SEQ, "global_batch": EXAMPLE_BATCH,
                           "precision": "bf16-mixed", "rows": example},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for row in neusight:
        print(f"{row['model']:>10} {row['mode']:>5} {row['global_batch']:>3} {row['target']:<28} "
              f"{row['measured_s'] * 1e3:8.1f} ms  predicted {row['predicted_s'] * 1e3:8.1f} ms  {row['ape']:.1%}")
    for row in megatron:
        print(f"{row['params_b']:>7}B tp={row['tp']} pp={row['pp']:<3} {row['gpus']:>5} GPUs  b={row['micro_batch']} "
              f"v={row['virtual_stages']}  {row['measured_tflops']:>4} TFLOP/s  predicted {row['predicted_tflops']:6.1f}"
              f"  {row['ape']:.1%}")
    for row in example:
        print(f"{row['target']:<45} {row['step_s']:7.2f} s  {row['memory_gib']:6.1f} GiB  bubble {row['bubble_share']:.0%}")
    print(json.dumps({"neusight": result["neusight"]["summary"], "megatron": result["megatron"]["summary"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
