"""Activation checkpointing in a capture (`prenet_callbacks/projection/ops/recompute.py`), as the transformer
benchmark (`benchmarks/projection_transformers.py`) reproduces its sources' set-ups and `estimate()` offers it."""
import importlib.util
from pathlib import Path

import pytest
import torch

from predictor_models.op_spec import OpSpec

transformers = pytest.importorskip("transformers", reason="the transformer benchmark builds Hugging Face Llama models")

from prenet_callbacks.projection.ops.recompute import apply_recompute  # noqa: E402

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("projection_transformers", BENCH / "projection_transformers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _capture_with_spans(bench, model, layers, vocab: int):
    """One training step of ``model`` (batch 2 x 16 tokens) captured on meta, with its layers' spans."""
    from prenet_callbacks.projection.ops.capture import capture_step

    labels = torch.empty(2 * 16, dtype=torch.long, device="meta")
    capture = capture_step(model, {"input_ids": torch.empty(2, 16, dtype=torch.long, device="meta")}, batch_size=2,
                           layers=list(layers),
                           loss_fn=lambda out: torch.nn.functional.cross_entropy(out.logits.view(-1, vocab), labels))
    return capture, capture.layer_spans


def _capture(bench, layers: int):
    config = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=layers, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=256, tie_word_embeddings=False)
    model = bench._model(config, true_half=True)
    return _capture_with_spans(bench, model, model.model.layers, 256)


def test_each_layer_recomputes_its_forward_but_attention_and_every_other_matmul(bench):
    capture, spans = _capture(bench, layers=3)
    assert len(spans) == 3 and all(end > start for start, end in spans)
    layer_ops = capture.sequence["fwd"][spans[0][0]:spans[0][1]]
    mms = [op for op in layer_ops if getattr(op, "name", "") == "aten::mm"]
    assert len(mms) == 7          # q, k, v, o, gate, up, down
    attention = [op for op in layer_ops if isinstance(op, OpSpec)]
    assert len(attention) == 1    # the fused SDPA call
    bwd_before = len(capture.sequence["bwd"])

    added = apply_recompute(capture, "selective-op")

    per_layer = len(layer_ops) - len(attention) - 4   # the 1st, 3rd, 5th and 7th matmul are kept
    assert added == 3 * per_layer
    assert len(capture.sequence["bwd"]) == bwd_before + added
    recomputed_mms = [op for op in capture.sequence["bwd"][:added] if getattr(op, "name", "") == "aten::mm"]
    assert len(recomputed_mms) == 3 * 3
    assert sum(capture.ops["bwd"].values()) == len(capture.sequence["bwd"])


def test_the_checkpointed_points_project_slower_than_without_recompute(bench):
    from prenet_callbacks.projection.estimation import workload_from_capture
    from prenet_callbacks.projection.pricing.host import ExecutionOptions
    from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig
    from prenet_callbacks.projection.ops.precision import parse_precision

    capture, spans = _capture(bench, layers=2)
    precision = parse_precision("bf16-true", "highest", conv_tf32=True)
    plain = workload_from_capture(capture, precision, "sgd", ZeroConfig(), ExecutionOptions())
    apply_recompute(capture, "selective-op")
    checkpointed = workload_from_capture(capture, precision, "sgd", ZeroConfig(), ExecutionOptions())
    flops = [sum(op.flops * n for unit in w.units if unit.phase == "bwd" for op, n in unit.ops)
             for w in (plain, checkpointed)]
    assert flops[1] > flops[0]


def test_full_checkpointing_recomputes_each_block_whole(bench):
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_embd=64, n_head=4, n_layer=2, n_positions=16, vocab_size=128)
    config._attn_implementation = "sdpa"
    with torch.device("meta"):
        model = GPT2LMHeadModel(config)
    capture, spans = _capture_with_spans(bench, model, model.transformer.h, 128)
    block_ops = sum(end - start for start, end in spans)
    assert len(spans) == 2 and block_ops > 0

    assert apply_recompute(capture, "full") == block_ops
    recomputed = capture.sequence["bwd"][:block_ops]
    assert sum(isinstance(op, OpSpec) for op in recomputed) == 2   # each block's attention runs again
    with pytest.raises(ValueError, match="'full' or 'selective'"):
        apply_recompute(capture, "every-other-layer")


def test_checkpointing_shrinks_the_saved_activations_and_estimate_offers_it():
    from transformers import GPT2Config, GPT2LMHeadModel

    from prenet_callbacks import estimate

    config = GPT2Config(n_embd=128, n_head=4, n_layer=3, n_positions=256, vocab_size=512)
    with torch.device("meta"):
        model = GPT2LMHeadModel(config)
    ids = torch.zeros(4, 256, dtype=torch.long, device="meta")
    batch = {"input_ids": ids, "labels": ids}
    plain = estimate(model, batch, targets=["H100"], precision="bf16-mixed")
    full = estimate(model, batch, targets=["H100"], precision="bf16-mixed", activation_checkpointing="full")
    selective = estimate(model, batch, targets=["H100"], precision="bf16-mixed", activation_checkpointing="selective")
    assert full.workload.activation_bytes < selective.workload.activation_bytes < plain.workload.activation_bytes
    assert full.row("H100")["phases_s"]["backward"] > plain.row("H100")["phases_s"]["backward"]
    # Hugging Face's gradient_checkpointing_enable() cannot run on meta: estimated as "full", flags restored
    model.gradient_checkpointing_enable()
    enabled = estimate(model, batch, targets=["H100"], precision="bf16-mixed")
    assert model.is_gradient_checkpointing
    assert enabled.step_seconds("H100") == pytest.approx(full.step_seconds("H100"))
    assert enabled.workload.activation_bytes == pytest.approx(full.workload.activation_bytes)
    with pytest.raises(ValueError, match="activation_checkpointing"):
        estimate(model, batch, targets=["H100"], activation_checkpointing="half")


def test_mpt_runs_as_llm_foundrys_benchmark_ran_it(bench):
    """Exact GELU (one kernel each way, not GPT-2's tanh form), layer norms in bf16 under autocast, and the fused
    cross-entropy: one pass over the bf16 logits each way, no fp32 copy of them."""
    from prenet_callbacks.projection.ops.capture import capture_step
    from prenet_callbacks.projection.estimation import workload_from_capture
    from prenet_callbacks.projection.pricing.host import ExecutionOptions
    from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig
    from prenet_callbacks.projection.ops.precision import parse_precision

    model, layers, vocab, precision, optimizer, _, inputs = bench._build({"model": "mpt-125m", "batch": 2, "seq": 32})
    norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert len(norms) == 2 * 12 + 1 and all(isinstance(m, bench.LowPrecisionLayerNorm) for m in norms)
    labels = torch.empty(2 * 32, dtype=torch.long, device="meta")
    capture = capture_step(model, inputs, batch_size=2, layers=list(layers),
                           loss_fn=lambda out: bench.FusedCrossEntropy.apply(out.logits.view(-1, vocab), labels))
    workload = workload_from_capture(capture, parse_precision(precision, "highest", conv_tf32=True), optimizer,
                                     ZeroConfig(), ExecutionOptions())
    ops = [(unit.phase, op) for unit in workload.units for op, _ in unit.ops]
    names = {op.name for _, op in ops}
    assert "aten::gelu" in names and "aten::tanh" not in names and "aten::pow" not in names
    assert {op.dtype for _, op in ops if "layer_norm" in op.name} == {"bfloat16"}
    logits = 2 * 32 * vocab
    over_logits = [op for _, op in ops if op.dims.get("numel", op.dims.get("rows", 0) * op.dims.get("cols", 0)) == logits]
    assert over_logits and all(op.dtype == "bfloat16" for op in over_logits)
    assert sorted(op.name for op in over_logits if op.op_class != "gemm") == ["aten::_softmax", "aten::logsumexp"]
