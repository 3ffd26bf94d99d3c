"""Static op features: classification, FLOPs (against FlopCounterMode), bytes, dims."""
from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from predictor_models.aten import taxonomy
from predictor_models.aten.call import OpCall
from predictor_models.aten.costs import describe_aten_op, op_spec_from_call
from predictor_models.aten.record import record_call
from predictor_models.aten.taxonomy import classify, is_free_op
from predictor_models.aten.unmodelled import UnmodelledCalls
from predictor_models.layer_features import layer_features
from predictor_models.op_spec import OP_CLASSES, OpSpec


class _Collect(TorchDispatchMode):
    """Describe every aten call (what the profiler does, minus timing and attribution)."""

    def __init__(self) -> None:
        super().__init__()
        self.specs: list[OpSpec] = []
        self.calls: list[OpCall] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.calls.append(record_call(func, args, kwargs, out))
        self.specs.append(describe_aten_op(func, args, kwargs, out, tf32=False))
        return out


def _run(fn) -> _Collect:
    with _Collect() as c:
        fn()
    return c


def _one(specs: list[OpSpec], name: str) -> OpSpec:
    found = [s for s in specs if s.name == name]
    assert found, f"{name} not in {[s.name for s in specs]}"
    return found[0]


def test_mm_dims_flops_bytes():
    a, b = torch.randn(64, 512), torch.randn(512, 256)
    spec = _one(_run(lambda: torch.mm(a, b)).specs, "aten::mm")
    assert spec.op_class == "gemm"
    assert spec.dims == {"b": 1, "m": 64, "n": 256, "k": 512}
    assert spec.flops == 2 * 64 * 256 * 512
    assert spec.bytes_read == (64 * 512 + 512 * 256) * 4
    assert spec.bytes_written == 64 * 256 * 4
    assert spec.dtype == "float32" and spec.arithmetic_intensity > 0


def test_linear_addmm_and_bmm():
    lin = nn.Linear(512, 512)
    x = torch.randn(64, 512)
    spec = _one(_run(lambda: lin(x)).specs, "aten::addmm")
    assert spec.dims == {"b": 1, "m": 64, "n": 512, "k": 512}
    assert spec.flops == 2 * 64 * 512 * 512
    p, q = torch.randn(3, 4, 5), torch.randn(3, 5, 6)
    spec = _one(_run(lambda: torch.bmm(p, q)).specs, "aten::bmm")
    assert spec.dims == {"b": 3, "m": 4, "n": 6, "k": 5} and spec.flops == 2 * 3 * 4 * 5 * 6
    spec = _one(_run(lambda: torch.baddbmm(torch.randn(3, 4, 6), p, q)).specs, "aten::baddbmm")
    assert spec.dims["b"] == 3 and spec.flops == 2 * 3 * 4 * 5 * 6


@pytest.mark.parametrize("build, shape", [
    (lambda: nn.Conv2d(3, 8, 3, stride=2, padding=1), (2, 3, 16, 16)),
    (lambda: nn.Conv2d(8, 8, 3, groups=4), (2, 8, 10, 10)),
    (lambda: nn.Conv1d(4, 6, 5), (2, 4, 20)),
    (lambda: nn.Conv3d(2, 4, 3), (1, 2, 6, 6, 6)),
    (lambda: nn.ConvTranspose2d(4, 6, 3, stride=2), (2, 4, 5, 5)),
])
def test_conv_flops_match_flop_counter(build, shape):
    conv = build()
    x = torch.randn(*shape, requires_grad=True)

    def step():
        conv(x).sum().backward()
    counter = FlopCounterMode(display=False)
    with counter:
        step()
    c = _run(step)
    assert sum(s.flops for s in c.specs if s.op_class == "conv") == counter.get_total_flops()
    fwd = _one(c.specs, "aten::convolution")
    bwd = _one(c.specs, "aten::convolution_backward")
    assert fwd.dims["backward"] == 0 and bwd.dims["backward"] == 1
    assert fwd.dims["spatial_dims"] == len(shape) - 2
    assert fwd.dims["transposed"] == int(isinstance(conv, nn.ConvTranspose2d))
    assert fwd.dims["groups"] == conv.groups and fwd.dims["stride"] == conv.stride[0]
    assert fwd.dims["c_in"] == conv.in_channels and fwd.dims["c_out"] == conv.out_channels
    assert bwd.flops > fwd.flops


def test_sdpa_attention_dims_and_flops():
    q = torch.randn(2, 4, 16, 8, requires_grad=True)

    def step():
        F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
    c = _run(step)
    att = [s for s in c.specs if s.op_class == "attention"]
    assert len(att) == 2
    fwd = next(s for s in att if not s.dims["backward"])
    bwd = next(s for s in att if s.dims["backward"])
    assert fwd.dims == {"b": 2, "heads": 4, "s_q": 16, "s_kv": 16, "d": 8, "causal": 1,
                        "backward": 0}
    assert fwd.flops == 4 * 2 * 4 * 16 * 16 * 8
    assert bwd.flops == 2.5 * fwd.flops


def test_classes_of_common_ops():
    model = nn.Sequential(nn.Embedding(10, 8), nn.LayerNorm(8), nn.Dropout(0.1), nn.GELU())
    idx = torch.tensor([[1, 2, 3]])
    pool = nn.MaxPool2d(2)
    img = torch.randn(1, 2, 4, 4, requires_grad=True)
    p = [torch.randn(3), torch.randn(4)]

    def step():
        model(idx).sum().backward()
        pool(img).sum().backward()
        torch._foreach_add_(p, [torch.ones(3), torch.ones(4)])
        torch.cat([torch.randn(2), torch.randn(3)])
        torch.softmax(torch.randn(4, 5), dim=-1)
    c = _run(step)
    by_name = {s.name: s.op_class for s in c.specs}
    assert by_name["aten::embedding"] == "embedding"
    assert by_name["aten::embedding_dense_backward"] == "embedding"
    assert by_name["aten::native_layer_norm"] == "norm"
    assert by_name["aten::native_layer_norm_backward"] == "norm"
    dropout = [n for n in by_name if "dropout" in n or "bernoulli" in n]
    assert dropout and all(by_name[n] == "elementwise" for n in dropout)
    assert by_name["aten::gelu"] == "elementwise"
    assert by_name["aten::max_pool2d_with_indices"] == "pooling"
    assert by_name["aten::max_pool2d_with_indices_backward"] == "pooling"
    assert by_name["aten::_foreach_add_"] == "optimizer"
    assert by_name["aten::cat"] == "data_movement"
    assert by_name["aten::_softmax"] == "norm"
    assert set(by_name.values()) <= set(OP_CLASSES)
    emb = _one(c.specs, "aten::embedding")
    assert emb.dims == {"indices": 3, "dim": 8, "vocab": 10, "backward": 0}
    ln = _one(c.specs, "aten::native_layer_norm")
    assert ln.dims == {"rows": 3, "cols": 8, "backward": 0}
    fe = _one(c.specs, "aten::_foreach_add_")
    assert fe.dims["numel"] == 7 and fe.dims["tensors"] == 2
    assert fe.bytes_written == 7 * 4


def test_views_are_free():
    x = torch.randn(4, 6)
    c = _run(lambda: x.view(6, 4).t().transpose(0, 1).expand(2, 6, 4).detach())
    assert c.specs and all(s.flops == 0 and s.bytes_moved == 0 for s in c.specs)
    assert all(is_free_op(s.name) for s in c.specs)
    assert is_free_op("aten::view") and not is_free_op("aten::clone")


def test_recurrent_and_batchnorm():
    lstm = nn.LSTM(8, 16, batch_first=True)
    bn = nn.BatchNorm2d(3)
    x = torch.randn(4, 5, 8)
    img = torch.randn(2, 3, 4, 4)

    def step():
        lstm(x)[0].sum().backward()
        bn(img).sum().backward()
    c = _run(step)
    rec = [s for s in c.specs if s.op_class == "recurrent"]
    if rec:  # CPU builds with mkldnn use one layer op; others decompose into GEMMs + pointwise
        fwd = next(s for s in rec if not s.dims["backward"])
        assert fwd.dims["gates"] == 4 and fwd.dims["hidden"] == 16 and fwd.dims["input"] == 8
        assert fwd.dims["seq"] * fwd.dims["batch"] == 20 and fwd.flops > 0
    bnf = _one(c.specs, "aten::native_batch_norm")
    assert bnf.op_class == "norm" and bnf.dims == {"rows": 3, "cols": 32, "backward": 0}


def test_opcall_roundtrip_and_context():
    a, b = torch.randn(2, 3), torch.randn(3, 4)
    c = _run(lambda: torch.mm(a, b))
    call = next(x for x in c.calls if x.name == "aten::mm")
    again = OpCall.from_dict(json.loads(json.dumps(call.to_dict())))
    assert again == call and hash(again) == hash(call)
    assert op_spec_from_call(again) == op_spec_from_call(call)
    sel = OpCall("aten::index_select", ((10, 4), (3,)), ("float32", "int64"), ((3, 4),),
                 ("float32",))
    assert classify(sel) == "data_movement"
    assert classify(OpCall(**{**sel.__dict__, "context": "embedding"})) == "embedding"
    mul = OpCall("aten::mul_", ((5,), ()), ("float32", "float32"), ((5,),), ("float32",),
                 context="optimizer")
    assert classify(mul) == "optimizer"
    comm = OpCall("c10d::allreduce_", ((1024,),), ("float32",), scalars=(("ranks", 8),))
    spec = op_spec_from_call(comm)
    assert spec.op_class == "communication" and spec.dims == {"bytes": 4096, "ranks": 8}


def test_tf32_only_for_fp32_matmuls():
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    with _Collect() as c:
        out = torch.mm(a, b)
    call = c.calls[-1]
    assert op_spec_from_call(call, tf32=True).tf32
    assert not op_spec_from_call(call, tf32=False).tf32
    relu = record_call(torch.ops.aten.relu.default, (a,), {}, out)
    assert not op_spec_from_call(relu, tf32=True).tf32


def test_odd_shapes_do_not_raise_and_are_counted_as_unmodelled():
    weird = OpCall("aten::convolution", ((1,),), ("float32",), ((1,),), ("float32",))
    spec = op_spec_from_call(weird)
    assert spec.op_class == "conv" and spec.flops == 0 and spec.dims == {}
    unmodelled = UnmodelledCalls()
    assert op_spec_from_call(weird, unmodelled=unmodelled) == spec   # counting changes no figure
    op_spec_from_call(OpCall("aten::mm", ((3,),), ("float32",)), unmodelled=unmodelled)
    assert len(unmodelled) == 2 and unmodelled.counts["aten::convolution"] == 1
    note = unmodelled.note()
    assert "aten::convolution x1 (ValueError" in note and "aten::mm x1 (IndexError" in note
    assert "unmodelled" in note and UnmodelledCalls().note() is None
    good = OpCall("aten::relu", ((4,),), ("float32",), ((4,),), ("float32",))
    op_spec_from_call(good, unmodelled=unmodelled)
    assert len(unmodelled) == 2                                      # a described call is not counted


def test_no_op_name_is_in_two_classes():
    listed = [(name, op_class) for op_class, names in taxonomy.CLASS_NAMES.items() for name in names]
    twice = sorted({name for name, _ in listed if sum(n == name for n, _ in listed) > 1})
    assert not twice, f"in two classes of taxonomy.CLASS_NAMES: {twice}"
    assert len(taxonomy.NAME_CLASS) == len(listed)
    assert not taxonomy.FREE_OPS & set(taxonomy.NAME_CLASS), "a free op is also in the class table"
    # a context only re-classes ops the table already lists (index ops: data movement elsewhere)
    assert {taxonomy.NAME_CLASS[name] for _, name in taxonomy.CONTEXT_CLASS} == {"data_movement"}


def test_the_table_wins_over_the_name_rules():
    # ``masked_select`` would match the elementwise ``masked`` prefix; the table says data movement
    assert taxonomy.class_by_rule("masked_select") == "elementwise"
    assert classify(OpCall("aten::masked_select")) == "data_movement"
    assert classify(OpCall("aten::gather")) == "data_movement"
    assert classify(OpCall("aten::gather", context="embedding")) == "embedding"
    assert classify(OpCall("aten::gather", context="optimizer")) == "optimizer"


def test_aten_ops_re_exports_the_public_names():
    from predictor_models import aten_ops

    assert aten_ops.op_spec_from_call is op_spec_from_call and aten_ops.OpCall is OpCall
    assert all(hasattr(aten_ops, name) for name in aten_ops.__all__)


class _FakeAccelerator:
    def peak_flops(self, dtype: str, tf32: bool = False) -> float:
        return {"float32": 1e12, "bfloat16": 1e14}[dtype]


def test_layer_features():
    mm = OpSpec("gemm", "float32", 1e9, 1e6, 5e5, {}, False, "aten::mm")
    relu = OpSpec("elementwise", "float32", 1e3, 4e3, 4e3, {}, False, "aten::relu")
    ops = [(mm, 2, "fwd"), (relu, 1, "fwd"), (mm, 4, "bwd"), (relu, 3, "opt")]
    f = layer_features(ops, weight_bytes=100, input_bytes=10, output_bytes=20)
    assert f.co_flops == 2e9 + 1e3 and f.bwd_flops == 4e9 and f.opt_flops == 3e3
    assert f.cm_weight_bytes == 100 and f.cm_input_bytes == 10 and f.cm_output_bytes == 20
    assert f.ct_seconds is None and f.dtype == "float32"
    assert f.bytes_moved == 6 * 1.5e6 + 4 * 8e3
    assert f.arithmetic_intensity == pytest.approx((6e9 + 4e3) / f.bytes_moved)
    g = layer_features(ops, accelerator=_FakeAccelerator())
    assert g.ct_seconds == pytest.approx(f.co_flops / 1e12)
    assert layer_features([], accelerator=_FakeAccelerator()).ct_seconds == 0.0
    half = OpSpec("gemm", "float16", 1e9, 1, 1)
    assert layer_features([(half, 1, "fwd")], accelerator=_FakeAccelerator()).ct_seconds is None
    assert type(f).from_dict(json.loads(json.dumps(f.to_dict()))) == f


def test_a_mkldnn_layer_op_is_one_layer_of_the_stack():
    """mkldnn runs an LSTM one layer per call but passes the whole stack's num_layers: each call is one layer
    (counted as the stack, a 2-layer LSTM's CPU capture held twice its work)."""
    lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
    x = torch.randn(4, 5, 8)
    c = _run(lambda: lstm(x)[0].sum().backward())
    rec = [s for s in c.specs if s.op_class == "recurrent"]
    if not rec:
        pytest.skip(f"this torch build ({torch.__version__}) runs a CPU LSTM decomposed, not as mkldnn layer ops")
    assert {s.dims["layers"] for s in rec} == {1}
    assert sorted(s.dims["input"] for s in rec if not s.dims["backward"]) == [8, 16]   # each layer its own input
