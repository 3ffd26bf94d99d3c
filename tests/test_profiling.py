"""ModuleProfiler: attribution, per-step accounting and never changing what the model computes."""
from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from model_zoo import ZOO, MLP, loss_fn, train_steps
from prenet_callbacks.measure.profiling import (OPTIMIZER_NAME, ROOT_NAME, LayerTable, ModuleProfiler,
                                        ProfilerError, hook_snapshot)


def _profile(model: nn.Module, batch_fn, steps: int = 2, **kw) -> tuple[LayerTable, ModuleProfiler]:
    train_steps(model, batch_fn, 1)  # warm-up outside the window, as the engine does
    profiler = ModuleProfiler(model)
    profiler.start()
    train_steps(model, batch_fn, steps, on_step=profiler.end_step, **kw)
    return profiler.stop(), profiler


def _ops(table: LayerTable, layer: str, phase: str, op_class: str) -> list:
    return [o for o in table.layer(layer).ops if o.phase == phase and o.spec.op_class == op_class]


def test_linear_gemms_forward_and_backward():
    model, batch = ZOO["mlp"]()
    table, _ = _profile(model, batch)
    assert table.steps == 2
    fwd = _ops(table, "hidden", "fwd", "gemm")
    assert len(fwd) == 1 and fwd[0].count_per_step == 1
    assert fwd[0].spec.dims == {"b": 1, "m": 64, "n": 512, "k": 512}
    assert fwd[0].spec.flops == 2 * 64 * 512 * 512
    bwd = _ops(table, "hidden", "bwd", "gemm")
    assert len(bwd) == 2 and all(o.spec.flops == 2 * 64 * 512 * 512 for o in bwd)
    rec = table.layer("hidden")
    assert rec.params == 512 * 512 + 512 and rec.calls_per_step == 1
    assert rec.forward_s > 0 and rec.backward_s > 0
    assert rec.features.co_flops == 2 * 64 * 512 * 512
    assert rec.features.bwd_flops == 2 * 2 * 64 * 512 * 512 + 64 * 512  # + the bias-grad sum
    assert rec.features.cm_input_bytes == rec.features.cm_output_bytes == 64 * 512 * 4
    assert rec.features.ct_seconds is None  # CPU: no catalog peak
    # the first layer's input needs no grad: only the weight-gradient GEMM runs
    assert len(_ops(table, "inp", "bwd", "gemm")) == 1


def test_after_stop_the_profiler_keeps_the_table_and_lets_go_of_the_model():
    model, batch = ZOO["mlp"]()
    table, profiler = _profile(model, batch)
    assert profiler.model is None and profiler.stop() is table   # the table stays, and stop is still idempotent
    assert not profiler._seen and not profiler._ops                # the per-call records, thousands of objects
    assert table.layer("hidden").ops


def test_functional_code_goes_to_the_parent_module():
    torch.manual_seed(0)
    model = nn.Sequential(MLP())
    x, y = torch.randn(64, 32), torch.randint(0, 10, (64,))
    table, _ = _profile(model, lambda: ((x,), y))
    parent = {o.name for o in table.layer("0").ops}
    assert {"aten::tanh", "aten::relu", "aten::mul"} <= parent          # MLP.forward's own code
    assert "aten::tanh_backward" in {o.name for o in table.layer("0").ops if o.phase == "bwd"}
    assert "aten::nll_loss_forward" in {o.name for o in table.layer(ROOT_NAME).ops}  # the loss
    assert not [o for o in table.layer("0.hidden").ops if o.name == "aten::tanh"]


@pytest.mark.parametrize("name", sorted(ZOO))
def test_bit_identical_and_no_leaked_hooks(name):
    ref_model, batch = ZOO[name]()
    train_steps(ref_model, batch, 1)   # same schedule as below: warm-up, then 2 fresh steps
    train_steps(ref_model, batch, 2)
    model, batch = ZOO[name]()
    before = hook_snapshot(model)
    train_steps(model, batch, 1)
    profiler = ModuleProfiler(model)
    profiler.start()
    train_steps(model, batch, 2, on_step=profiler.end_step)
    table = profiler.stop()
    assert hook_snapshot(model) == before and profiler.hook_count() == 0
    for (pname, a), b in zip(ref_model.state_dict().items(), model.state_dict().values()):
        assert torch.equal(a, b), f"{name}: {pname} differs with the profiler on"
    assert table.steps == 2 and table.layers[0].name == ROOT_NAME
    json.dumps(table.to_dict())
    # every parameter is owned exactly once, tied ones included
    assert sum(r.params for r in table.layers) == sum(p.numel() for p in model.parameters())


def test_tied_weights_and_shared_module():
    model, batch = ZOO["tied_lm"]()
    table, _ = _profile(model, batch)
    assert table.layer("embed").params == 50 * 16
    assert table.layer("decoder").params == 50  # bias only: the weight belongs to embed
    assert table.layer("block").calls_per_step == 2
    assert _ops(table, "block", "fwd", "gemm")[0].count_per_step == 2
    assert _ops(table, "embed", "fwd", "embedding") and _ops(table, "embed", "bwd", "embedding")


def test_inplace_relu_cnn():
    model, batch = ZOO["inplace_cnn"]()
    table, _ = _profile(model, batch)
    relu = table.layer("features.2")
    assert relu.module_type == "ReLU" and relu.forward_s > 0 and relu.backward_s > 0
    conv = table.layer("features.4")
    assert _ops(table, "features.4", "fwd", "conv")[0].spec.dims["groups"] == 2
    assert _ops(table, "features.4", "bwd", "conv") and conv.params == 16 * 4 * 9 + 16
    assert _ops(table, "features.1", "fwd", "norm") and _ops(table, "features.3", "bwd", "pooling")


def test_transformer_attention_attribution():
    model, batch = ZOO["transformer"]()
    table, _ = _profile(model, batch)
    assert _ops(table, "attn", "fwd", "gemm") and _ops(table, "attn", "bwd", "gemm")
    root_att = _ops(table, ROOT_NAME, "fwd", "attention") + _ops(table, ROOT_NAME, "fwd", "gemm")
    assert root_att, "F.scaled_dot_product_attention in the block's forward belongs to the block"
    causal = [o for o in table.layer(ROOT_NAME).ops if o.spec.op_class == "attention"]
    assert not causal or all(o.spec.dims["causal"] == 1 for o in causal)
    assert _ops(table, "norm1", "bwd", "norm") and _ops(table, "mlp.1", "fwd", "elementwise")


def test_recurrent_layers():
    model, batch = ZOO["recurrent"]()
    table, _ = _profile(model, batch)
    for name in ("lstm", "gru"):
        rec = table.layer(name)
        assert rec.forward_s > 0 and rec.backward_s > 0 and rec.params > 0
        assert rec.features.co_flops > 0


def test_checkpointing_attributes_recompute_to_the_block():
    model, batch = ZOO["checkpoint"]()
    table, _ = _profile(model, batch)
    for block in ("block1.0", "block2.0"):   # non-reentrant, reentrant
        bwd = _ops(table, block, "bwd", "gemm")
        # recomputed forward GEMM + the two gradient GEMMs
        assert sum(o.count_per_step for o in bwd) == 3, (block, bwd)
    assert not _ops(table, ROOT_NAME, "bwd", "gemm")


def test_custom_autograd_function():
    model, batch = ZOO["custom_function"]()
    table, _ = _profile(model, batch)
    # the Function is applied in the model's own forward: its ops (fwd and bwd) belong to the root
    assert [o for o in table.layer(ROOT_NAME).ops if o.phase == "bwd" and o.name == "aten::mul"]
    assert len(_ops(table, "fc", "bwd", "gemm")) == 1   # fc's input needs no grad


def test_gradient_accumulation_counts_per_optimizer_step():
    model, batch = ZOO["mlp"]()
    table, _ = _profile(model, batch, accumulate=2)
    assert table.steps == 2
    assert table.layer("hidden").calls_per_step == 2
    assert _ops(table, "hidden", "fwd", "gemm")[0].count_per_step == 2
    opt = table.layer(OPTIMIZER_NAME)
    assert opt.optimizer_s > 0 and all(o.phase == "opt" for o in opt.ops)
    assert all(o.spec.op_class == "optimizer" and o.spec.dims["kind"] == 1 for o in opt.ops)


def test_phase_hints_and_suspend():
    model, batch = ZOO["mlp"]()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    profiler = ModuleProfiler(model)
    profiler.start()
    for _ in range(2):
        profiler.begin_phase("forward")
        inputs, target = batch()
        loss = loss_fn(model(*inputs), target)
        profiler.begin_phase("backward")
        loss.backward()
        profiler.begin_phase("optimizer")
        opt.step()
        opt.zero_grad()
        profiler.end_step()
        profiler.suspend()
        model(*inputs)                      # e.g. validation: not captured
        profiler.resume()
    table = profiler.stop()
    assert table.layer("hidden").calls_per_step == 1
    assert table.layer(OPTIMIZER_NAME).optimizer_s > 0
    with pytest.raises(ProfilerError):
        ModuleProfiler(model).begin_phase("sideways")


def test_stop_is_idempotent_and_cleans_up_after_an_exception():
    model, batch = ZOO["mlp"]()
    before = hook_snapshot(model)
    profiler = ModuleProfiler(model)
    profiler.start()
    inputs, _ = batch()
    with pytest.raises(RuntimeError):
        model.hidden(inputs[0])     # wrong shape: raises inside a hooked module
    table = profiler.stop()
    assert profiler.stop() is table
    assert hook_snapshot(model) == before and profiler.hook_count() == 0
    assert torch._C._len_torch_dispatch_stack() == 0
    with pytest.raises(ProfilerError):
        profiler.start()
    never = ModuleProfiler(model)
    assert never.stop().layers == [] and hook_snapshot(model) == before


def test_start_failing_half_way_leaves_nothing(monkeypatch):
    model, _ = ZOO["mlp"]()
    before = hook_snapshot(model)
    profiler = ModuleProfiler(model)

    def boom() -> None:
        raise RuntimeError("no optimizer hooks today")
    monkeypatch.setattr(profiler, "_install_optimizer_hooks", boom)
    with pytest.raises(ProfilerError, match="no optimizer hooks"):
        profiler.start()
    assert hook_snapshot(model) == before and profiler.hook_count() == 0
    profiler.stop()


def test_internal_failure_is_contained(monkeypatch):
    import prenet_callbacks.measure.profiling.profiler as prof_mod
    model, batch = ZOO["mlp"]()
    ref, _ = ZOO["mlp"]()
    before = hook_snapshot(model)

    def broken(*args, **kwargs):
        raise ValueError("bad shape bookkeeping")
    monkeypatch.setattr(prof_mod, "record_call", broken)
    profiler = ModuleProfiler(model)
    profiler.start()
    train_steps(model, batch, 2, on_step=profiler.end_step)
    train_steps(ref, batch, 2)
    table = profiler.stop()
    assert any("bad shape bookkeeping" in s for s in profiler.limitations)
    assert table.limitations == profiler.limitations
    assert hook_snapshot(model) == before
    assert all(torch.equal(a, b) for a, b in zip(ref.parameters(), model.parameters()))


def test_compiled_submodule_is_opaque_and_stays_compiled():
    model, batch = ZOO["compiled_submodule"]()
    train_steps(model, batch, 1)
    profiler = ModuleProfiler(model)
    profiler.start()
    out = model.encoder(batch()[0][0])
    assert "CompiledFunction" in out.grad_fn.name()   # ran compiled, not eager under the mode
    train_steps(model, batch, 2, on_step=profiler.end_step)
    table = profiler.stop()
    enc = table.layer("encoder")
    assert enc.opaque and enc.module_type.endswith("(compiled)") and not enc.ops
    assert enc.forward_s > 0 and enc.backward_s > 0 and enc.params == 16 * 32 + 32 + 32 * 32 + 32
    assert any("'encoder'" in s for s in profiler.limitations)
    assert not [r for r in table.layers if r.name.startswith("encoder.")]


def test_whole_compiled_model():
    torch.manual_seed(0)
    model = torch.compile(MLP(), backend="aot_eager")
    x, y = torch.randn(64, 32), torch.randint(0, 10, (64,))
    before = hook_snapshot(model)
    table, profiler = _profile(model, lambda: ((x,), y))
    root = table.layer(ROOT_NAME)
    assert root.opaque and root.forward_s > 0 and root.params == sum(p.numel() for p in model.parameters())
    assert profiler.limitations and hook_snapshot(model) == before


def test_module_compile_call_is_wrapped_and_restored():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 10))
    model[0].compile(backend="aot_eager")
    inner = model[0]._compiled_call_impl
    x, y = torch.randn(4, 8), torch.randint(0, 10, (4,))
    table, profiler = _profile(model, lambda: ((x,), y))
    assert model[0]._compiled_call_impl is inner and profiler.hook_count() == 0
    assert table.layer("0").opaque and table.layer("0").forward_s > 0


def test_table_roundtrip_and_op_cap():
    model, batch = ZOO["transformer"]()
    train_steps(model, batch, 1)
    profiler = ModuleProfiler(model, max_ops_per_layer=4)
    profiler.start()
    train_steps(model, batch, 2, on_step=profiler.end_step)
    table = profiler.stop()
    attn = table.layer("attn")
    merged = [o for o in attn.ops if o.name.startswith("(merged")]
    # the 3 costliest ops kept as they are, the rest merged into one entry per (phase, op class)
    assert merged and len(attn.ops) - len(merged) == 3
    assert len({(o.phase, o.spec.op_class) for o in merged}) == len(merged)
    full = attn.features.fwd_flops
    merged_flops = sum(o.spec.flops * o.count_per_step for o in attn.ops if o.phase == "fwd")
    assert merged_flops == pytest.approx(full)
    again = LayerTable.from_dict(json.loads(json.dumps(table.to_dict())))
    assert again.to_dict() == table.to_dict()
    assert again.layer("attn").ops[0].spec == attn.ops[0].spec
    assert table.unattributed_s >= 0 and table.forward_s > 0 and table.backward_s > 0


def test_bad_arguments():
    with pytest.raises(ProfilerError):
        ModuleProfiler("not a model")  # type: ignore[arg-type]
    profiler = ModuleProfiler(nn.Linear(2, 2))
    profiler.start()
    with pytest.raises(ProfilerError):
        profiler.start()
    profiler.stop()
    assert torch._C._len_torch_dispatch_stack() == 0


class _FailingBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("backward blew up")


def test_cleanup_after_an_exception_in_backward():
    model, batch = ZOO["mlp"]()
    before = hook_snapshot(model)
    profiler = ModuleProfiler(model)
    profiler.start()
    inputs, _ = batch()
    with pytest.raises(RuntimeError, match="blew up"):
        _FailingBackward.apply(model(*inputs)).sum().backward()
    table = profiler.stop()
    assert hook_snapshot(model) == before and table.layer("hidden").forward_s > 0


def test_other_dispatch_mode_pushed_above_ours():
    from torch.utils.flop_counter import FlopCounterMode
    model, batch = ZOO["mlp"]()
    profiler = ModuleProfiler(model)
    profiler.start()
    counter = FlopCounterMode(display=False)
    counter.__enter__()
    train_steps(model, batch, 1, on_step=profiler.end_step)
    profiler.suspend()                 # ours is below FlopCounterMode's: taken out from under it
    profiler.resume()
    table = profiler.stop()
    assert torch._C._len_torch_dispatch_stack() >= 1   # FlopCounterMode is still there
    counter.__exit__(None, None, None)
    assert torch._C._len_torch_dispatch_stack() == 0
    assert table.layer("hidden").forward_s > 0 and counter.get_total_flops() > 0


def test_profiling_package_does_not_import_lightning():
    import subprocess
    import sys
    code = ("import sys, prenet_callbacks.measure.profiling, predictor_models.aten_ops, "
            "predictor_models.layer_features; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('lightning', 'pytorch_lightning', 'deepspeed', 'torch._dynamo')]; "
            "print(bad); assert not bad")
    subprocess.run([sys.executable, "-c", code], check=True)
