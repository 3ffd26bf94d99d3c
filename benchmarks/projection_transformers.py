"""Transformer training steps (bf16, eager PyTorch with SDPA) against public measurements.

    python benchmarks/projection_transformers.py

Sources and their configurations: ``benchmarks/data/transformer_steps_public.json``. Each model is
built from its configuration on ``meta`` (Hugging Face ``LlamaForCausalLM``, or ``GPT2LMHeadModel`` for
MPT, random weights, SDPA attention) and projected with `estimate`'s machinery: fused attention on the
target, PyTorch's default optimizer implementation, eager host costs; FSDP runs as ``sharding="fsdp"`` over the
measured node layout. A GPU run with its clock locked below boost is projected on the catalog entry
with its TFLOPS scaled by locked / boost clock (memory bandwidth unchanged); a source that states its
part's memory bandwidth gets it. A source's activation checkpointing is reproduced in the capture
(full per block, or torchtitan's selective "op" policy: the backward then holds the recomputed forward
ops, as on the GPU), and its gradient accumulation repeats the micro-batch's forward, backward and FSDP
collectives. Nothing is fitted here.
"""
from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from prenet_callbacks.projection.estimation import workload_from_capture  # noqa: E402
from prenet_callbacks.projection.ops.capture import capture_step  # noqa: E402
from prenet_callbacks.projection.pricing.host import ExecutionOptions  # noqa: E402
from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig  # noqa: E402
from prenet_callbacks.projection.ops.precision import parse_precision  # noqa: E402
from prenet_callbacks.projection.ops.recompute import apply_recompute  # noqa: E402
from prenet_callbacks.projection.rows.project import RunShape, project_targets  # noqa: E402
from prenet_callbacks.projection.targets import ProjectionTarget, parse_projection_target  # noqa: E402

DATA = HERE / "data/transformer_steps_public.json"
# name -> (LlamaConfig keywords, precision, optimizer, sharding, model held in bf16)
LLAMAS = {
    "llama-3.2-1b": (dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                          num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=True), "bf16-true", "sgd",
                     None, True),
    "llama-3-8b": (dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                        num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=False), "bf16-mixed", "adamw",
                   "fsdp", False),
    "llama-2-13b": (dict(hidden_size=5120, intermediate_size=13824, num_hidden_layers=40, num_attention_heads=40,
                         num_key_value_heads=40, vocab_size=32000, tie_word_embeddings=False), "bf16-mixed", "adamw",
                    "fsdp", False),
}
# MPT sizes (llm-foundry yamls): d_model, n_heads, n_layers; vocab 50368, MLP 4x, learned positions, tied head
MPTS = {"mpt-125m": (768, 12, 12), "mpt-350m": (1024, 16, 24), "mpt-760m": (1536, 12, 24), "mpt-1b": (2048, 16, 24),
        "mpt-3b": (2560, 20, 32), "mpt-7b": (4096, 32, 32), "mpt-13b": (5120, 40, 40)}
MPT_VOCAB = 50368


def _model(config: dict, true_half: bool):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(max_position_embeddings=131072, **config)
    cfg._attn_implementation = "sdpa"
    with torch.device("meta"):
        model = LlamaForCausalLM(cfg)
    return model.to(torch.bfloat16) if true_half else model


class LowPrecisionLayerNorm(torch.nn.LayerNorm):
    """llm-foundry's ``LPLayerNorm`` (``llmfoundry/models/layers/norm.py``), which its benchmark sets as every MPT's
    norm (``submit_benchmarks.py``: ``norm_type = "low_precision_layernorm"``): the input, weight and bias cast to
    autocast's dtype, the layer norm run in it with autocast off. The aten call takes no autocast policy in the
    capture's emulation, as the source's region turns autocast off."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        half = torch.bfloat16
        return torch.ops.aten.layer_norm.default(x.to(half), list(self.normalized_shape), self.weight.to(half),
                                                 self.bias.to(half), self.eps)


class FusedCrossEntropy(torch.autograd.Function):
    """llm-foundry MPT's default loss (``loss_fn: fused_crossentropy``, flash-attn's xentropy kernel): one forward
    pass over the bf16 logits (each row's log-sum-exp, fp32 inside the kernel), one backward pass writing their
    gradient; no fp32 copy of the logits. On ``meta`` the two passes stand as one reduction and one softmax over the
    logits, which read and write what the kernels do."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        lse = torch.ops.aten.logsumexp.default(logits, [-1])
        ctx.save_for_backward(logits)
        return lse.mean()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (logits,) = ctx.saved_tensors
        return torch.ops.aten._softmax.default(logits, -1, False), None


def _mpt(name: str, seq: int):
    """MPT as llm-foundry's benchmark ran it, on Hugging Face's GPT-2 decoder (pre-norm, MLP 4x, biases, learned
    positions, tied head: the same parameter count as the source's table for every row): the MLP's exact GELU
    (``ffn.py``: ``nn.GELU(approximate='none')``, where GPT-2's default is the tanh form, eight pointwise kernels) and
    low-precision layer norms."""
    from transformers import GPT2Config, GPT2LMHeadModel

    d_model, heads, layers = MPTS[name]
    cfg = GPT2Config(n_embd=d_model, n_head=heads, n_layer=layers, n_positions=seq, vocab_size=MPT_VOCAB,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, activation_function="gelu")
    cfg._attn_implementation = "sdpa"
    with torch.device("meta"):
        model = GPT2LMHeadModel(cfg)
    for parent in [model.transformer, *model.transformer.h]:
        for attr, child in list(parent.named_children()):
            if type(child) is torch.nn.LayerNorm:
                lp = LowPrecisionLayerNorm(child.normalized_shape, eps=child.eps, device="meta")
                setattr(parent, attr, lp)
    return model


def _build(point: dict):
    """(model, decoder layers, vocabulary, precision, optimizer, sharding, inputs) for one measured point."""
    b, s = point["batch"], point["seq"]
    if point["model"] in MPTS:
        model = _mpt(point["model"], s)
        # amp_bf16 (autocast) and Composer's PURE bf16 both compute in bf16 with fp32 master weights
        return (model, model.transformer.h, MPT_VOCAB, "bf16-mixed", "adamw", "fsdp",
                {"input_ids": torch.empty(b, s, dtype=torch.long, device="meta")})
    config, precision, optimizer, sharding, true_half = LLAMAS[point["model"]]
    model = _model(config, true_half)
    if point["model"] == "llama-3.2-1b":   # the source feeds inputs_embeds (no embedding lookup)
        inputs = {"inputs_embeds": torch.empty(b, s, config["hidden_size"], dtype=torch.bfloat16, device="meta")}
    else:
        inputs = {"input_ids": torch.empty(b, s, dtype=torch.long, device="meta")}
    return model, model.model.layers, config["vocab_size"], precision, optimizer, sharding, inputs


def _target(point: dict) -> ProjectionTarget:
    gpus = point["gpus"]
    network = f" @ {point['network_gbps_per_gpu']:g}G" if point.get("network_gbps_per_gpu") else ""
    target = parse_projection_target(point["gpu"] if gpus == "1"
                                     else f"{gpus}{'x' if 'x' not in gpus else ''} {point['gpu']}{network}")
    clock = point.get("locked_clock_mhz")
    acc = target.accelerator
    if clock and acc.boost_clock_mhz:
        s = clock / acc.boost_clock_mhz
        scaled = {f: getattr(acc, f) * s for f in ("fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops",
                                                    "fp8_tflops", "fp64_tflops") if getattr(acc, f)}
        acc = dataclasses.replace(acc, name=f"{acc.name} @ {clock} MHz", boost_clock_mhz=float(clock), **scaled)
    if point.get("memory_bandwidth_gbs"):
        acc = dataclasses.replace(acc, name=f"{acc.name} @ {point['memory_bandwidth_gbs']} GB/s",
                                  memory_bandwidth_gbs=float(point["memory_bandwidth_gbs"]))
    return dataclasses.replace(target, accelerator=acc)


def transformer_rows(predictor) -> list[dict]:
    points = json.loads(DATA.read_text())["points"]
    rows = []
    for point in points:
        model, layers, vocab, precision, optimizer, sharding, inputs = _build(point)
        b, s = point["batch"], point["seq"]
        labels = torch.empty(b * s, dtype=torch.long, device="meta")
        if point["model"] in MPTS:
            def loss_fn(out):
                return FusedCrossEntropy.apply(out.logits.view(-1, vocab), labels)
        else:
            def loss_fn(out):
                return torch.nn.functional.cross_entropy(out.logits.view(-1, vocab), labels)
        capture = capture_step(model, inputs, batch_size=b, layers=list(layers), loss_fn=loss_fn)
        if point.get("activation_checkpointing"):   # the package's rule (prenet_callbacks/projection/ops/recompute.py)
            apply_recompute(capture, point["activation_checkpointing"])
        workload = workload_from_capture(capture, parse_precision(precision, "highest", conv_tf32=True), optimizer,
                                         ZeroConfig.from_sharding(sharding), ExecutionOptions())
        row = project_targets(workload, [_target(point)], predictor, RunShape())[0]
        # gradient accumulation: forward, backward and FSDP's gathers and reductions run per micro-batch
        # (Composer does not skip FSDP's gradient sync between micro-batches), the optimizer once
        accumulate = point.get("accumulate", 1)
        optimizer_s = row["phases_s"]["optimizer"] or 0.0
        predicted = accumulate * (row["step_s"] - optimizer_s) + optimizer_s
        rows.append({"model": point["model"], "gpu": point["gpu"], "gpus": point["gpus"], "batch": b, "seq": s,
                     "accumulate": accumulate, "measured_s": point["step_s"], "predicted_s": round(predicted, 6),
                     "ape": round(abs(predicted / point["step_s"] - 1), 4), "attention": row["assumed"]["attention"],
                     "activation_checkpointing": point.get("activation_checkpointing", "none"),
                     "host_bound": row["host_bound"]})
    return rows


def summary(rows: list[dict]) -> dict:
    def part(values):
        e = [r["ape"] for r in values]
        return {"n": len(e), "median": round(statistics.median(e), 4), "mape": round(statistics.fmean(e), 4),
                "max": round(max(e), 4)} if e else {"n": 0}

    families = {"A100 (all variants)": "A100", "H100 (all variants)": "H100"}   # the targets are per family
    return {"all": part(rows), **{gpu: part([r for r in rows if r["gpu"] == gpu])
                                  for gpu in sorted({r["gpu"] for r in rows})},
            **{label: part([r for r in rows if r["gpu"].startswith(prefix)]) for label, prefix in families.items()}}


if __name__ == "__main__":
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    result = transformer_rows(default_predictor()[0])
    for r in result:
        print(f"{r['model']:13s} {r['gpus']:>4s} {r['gpu']:15s} b{r['batch']:<3d} s{r['seq']:<6d} measured "
              f"{r['measured_s']:.3f} s  predicted {r['predicted_s']:.3f} s  {r['ape'] * 100:5.1f}%  {r['attention']}")
    print(summary(result))
