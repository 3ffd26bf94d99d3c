"""The layer table's GPU-side additions: CT for every layer, coverage, op samples, the clock in use."""
from __future__ import annotations

import json

import pytest
import torch

from model_zoo import ZOO, train_steps
from predictor_models.op_spec import OpSpec
from prenet_callbacks.measure.clocks import CpuClock
from prenet_callbacks.hardware import lookup_hardware
from prenet_callbacks.measure.profiling import LayerRecord, LayerTable, ModuleProfiler, OpEntry


def _profile(model, batch, **kw) -> LayerTable:
    train_steps(model, batch, 1)
    profiler = ModuleProfiler(model, **kw)
    profiler.start()
    train_steps(model, batch, 2, on_step=profiler.end_step)
    return profiler.stop()


def test_ct_for_every_layer_from_the_catalog_peak_of_each_op():
    h100 = lookup_hardware("H100")
    model, batch = ZOO["transformer"]()
    table = _profile(model, batch, clock=CpuClock(), accelerator=h100, precision="32-true")
    assert table.catalog_name == h100.name and table.precision == "32-true"
    assert all(r.features.ct_seconds is not None for r in table.layers)
    peak_gemm = h100.peak_flops("float32", tf32=False, matrix=True)
    head = table.layer("head")
    fwd_gemm = sum(o.spec.flops * o.count_per_step for o in head.ops
                   if o.phase == "fwd" and o.spec.op_class == "gemm")
    assert fwd_gemm > 0
    rest = sum(o.spec.flops * o.count_per_step / h100.peak_flops(o.spec.dtype) for o in head.ops
               if o.phase == "fwd" and o.spec.op_class != "gemm")
    assert head.features.ct_seconds == pytest.approx(fwd_gemm / peak_gemm + rest)
    # a layer that computes nothing in forward has CT 0, not "unknown"
    flopless = [r for r in table.layers if r.features.co_flops == 0]
    assert flopless and all(r.features.ct_seconds == 0.0 for r in flopless)


class OnlyBf16:
    """An accelerator whose catalog entry only has a bf16 peak."""

    name = "Only-BF16"

    def peak_flops(self, dtype, *, tf32=False, matrix=False):
        if str(dtype) != "bfloat16":
            raise LookupError(f"no {dtype} peak")
        return 1e15


def test_ct_falls_back_to_the_run_precision_when_an_op_dtype_has_no_peak():
    model, batch = ZOO["mlp"]()
    table = _profile(model, batch, accelerator=OnlyBf16(), precision="bf16-mixed")
    hidden = table.layer("hidden")
    assert hidden.features.ct_seconds == pytest.approx(hidden.features.co_flops / 1e15)


def _entry(name, op_class, flops, count, seconds, phase="fwd", dims=None) -> OpEntry:
    spec = OpSpec(op_class=op_class, dtype="bfloat16", flops=flops, bytes_read=10.0,
                  bytes_written=5.0, dims=dims or {"m": flops}, name=name)
    return OpEntry(name=name, phase=phase, count_per_step=count, seconds_per_step=seconds, spec=spec)


def _table(layers, op_timing="cupti") -> LayerTable:
    return LayerTable(layers=layers, steps=3, device="cuda:0", clock="cuda", op_timing=op_timing,
                      precision="bf16-mixed", catalog_name="H100-SXM5")


def test_op_samples_merge_layers_rank_by_time_and_stay_bounded():
    shared = _entry("aten::mm", "gemm", 2e9, 2, 4e-3)
    a = LayerRecord("a", "Linear", 1, 0.0, 0.0, 0, ops=[shared, _entry("aten::gelu", "elementwise", 1e6, 1, 1e-4),
                                                         _entry("(merged 4 ops)", "elementwise", 1e6, 1, 9.0)])
    b = LayerRecord("b", "Linear", 1, 0.0, 0.0, 0, ops=[_entry("aten::mm", "gemm", 2e9, 1, 2e-3, phase="bwd"),
                                                         _entry("aten::mm", "gemm", 4e9, 1, 0.0)])
    samples = _table([a, b]).op_samples()
    assert samples["device"] == "cuda:0" and samples["catalog_name"] == "H100-SXM5"
    rows = samples["rows"]
    assert [r["name"] for r in rows] == ["aten::mm", "aten::gelu"]   # merged and untimed left out
    assert rows[0]["calls"] == 3 and rows[0]["seconds"] == pytest.approx(2e-3)   # per call
    many = LayerRecord("c", "X", 1, 0.0, 0.0, 0,
                       ops=[_entry(f"op{i}", "elementwise", float(i + 1), 1, 1e-6 * (i + 1)) for i in range(2500)])
    rows = _table([many]).op_samples()["rows"]
    assert len(rows) == 2000 and rows[0]["name"] == "op2499"
    assert _table([a], op_timing="dispatch").op_samples() is None
    json.dumps(samples)


def test_coverage_and_new_fields_survive_the_json_roundtrip():
    model, batch = ZOO["mlp"]()
    table = _profile(model, batch)
    assert table.clock == "cpu" and table.op_timing == "dispatch" and table.catalog_name is None
    cov = table.coverage(table.modules_s * 2)
    assert cov["ratio"] == pytest.approx(0.5) and cov["modules_s"] == table.modules_s
    assert table.coverage(None)["ratio"] is None
    assert table.modules_s == pytest.approx(table.forward_s + table.backward_s + table.optimizer_s)
    again = LayerTable.from_dict(json.loads(json.dumps(table.to_dict())))
    assert again.to_dict() == table.to_dict() and again.op_timing == "dispatch"


class DropoutNet(torch.nn.Module):
    """Dropout as a layer and as a functional call inside another layer's forward."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = torch.nn.Linear(256, 256)
        self.drop = torch.nn.Dropout(0.5)
        self.head = torch.nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.drop(torch.relu(self.hidden(x)))
        return self.head(torch.nn.functional.dropout(x, 0.5, self.training))


def test_eval_forward_share_leaves_out_dropout_layers_and_masks():
    torch.manual_seed(0)
    table = _profile(DropoutNet(), lambda: ((torch.randn(256, 256),), torch.randint(0, 10, (256,))))
    share = table.eval_forward_share()
    drop_layer = table.layer("drop").forward_s
    masks = sum(o.seconds_per_step for r in table.layers if r.name != "drop" for o in r.ops
                if o.phase == "fwd" and o.name in ("aten::bernoulli_", "aten::native_dropout"))
    assert drop_layer > 0 and masks > 0
    assert share == pytest.approx(1 - (drop_layer + masks) / table.forward_s)
    assert 0 < share < 1
    # without dropout an evaluation forward runs everything the training forward ran
    model, batch = ZOO["mlp"]()
    assert _profile(model, batch).eval_forward_share() == 1.0


def test_op_samples_tell_apart_ops_that_differ_only_in_dims():
    # OpSpec's == leaves dims out; the samples key on OpSpec.key, so these are two rows
    wide = _entry("aten::mm", "gemm", 2e9, 1, 1e-3, dims={"m": 512.0, "n": 1024.0, "k": 768.0})
    tall = _entry("aten::mm", "gemm", 2e9, 1, 2e-3, dims={"m": 1024.0, "n": 512.0, "k": 768.0})
    assert wide.spec == tall.spec and wide.spec.key != tall.spec.key
    rows = _table([LayerRecord("a", "Linear", 1, 0.0, 0.0, 0, ops=[wide, tall])]).op_samples()["rows"]
    assert [r["dims"]["m"] for r in rows] == [1024.0, 512.0]


def test_calls_the_cost_model_cannot_describe_are_a_limitation(monkeypatch):
    from predictor_models.aten import costs

    def unforeseen(call):
        raise IndexError("tuple index out of range")

    monkeypatch.setitem(costs._DESCRIBERS, "gemm", unforeseen)
    model, batch = ZOO["mlp"]()
    table = _profile(model, batch)
    gemms = [o for r in table.layers for o in r.ops if o.spec.op_class == "gemm"]
    assert gemms and all(o.spec.flops == 0 and o.spec.dims == {} for o in gemms)
    notes = [n for n in table.limitations if "cost model does not describe" in n]
    assert len(notes) == 1 and "aten::addmm" in notes[0] and "IndexError" in notes[0]
    model, batch = ZOO["mlp"]()
    monkeypatch.undo()
    assert not [n for n in _profile(model, batch).limitations if "cost model" in n]
