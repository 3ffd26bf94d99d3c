"""What a mixed-precision step runs, as `estimate` prices it: GradScaler's kernels, cuDNN's layout
transforms around NCHW half convolutions, and the casts' host cost."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from prenet_callbacks import estimate
from prenet_callbacks.projection.ops.layout import LAYOUT_NAME, runs_layout_transforms
from predictor_models.hardware import lookup_hardware


def _cnn() -> nn.Module:
    with torch.device("meta"):
        return nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                             nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(64, 10))


def _op_names(est) -> dict[str, float]:
    names: dict[str, float] = {}
    for unit in est.workload.units:
        for spec, count in unit.ops:
            names[spec.name] = names.get(spec.name, 0.0) + count
    return names


def test_16_mixed_adds_the_grad_scaler_and_bf16_does_not() -> None:
    x = torch.empty(8, 3, 32, 32, device="meta")
    fp16 = _op_names(estimate(_cnn(), x, targets=[], precision="16-mixed"))
    bf16 = _op_names(estimate(_cnn(), x, targets=[], precision="bf16-mixed"))
    assert fp16.get("aten::_amp_foreach_non_finite_check_and_unscale_", 0) >= 1
    assert "aten::_amp_foreach_non_finite_check_and_unscale_" not in bf16


def test_nchw_half_convolutions_pay_layout_transforms_and_channels_last_does_not() -> None:
    x = torch.empty(64, 3, 256, 256, device="meta")   # large enough to be GPU-bound
    nchw = estimate(_cnn(), x, targets=["H100"], precision="16-mixed")
    # 2 convolutions: input and output forward (2 each), dy twice, x and dx backward (4 each) = 12
    assert _op_names(nchw)[LAYOUT_NAME] == 12
    model = _cnn().to(memory_format=torch.channels_last)
    last = estimate(model, x.to(memory_format=torch.channels_last), targets=["H100"], precision="16-mixed")
    assert LAYOUT_NAME not in _op_names(last)
    forced = estimate(_cnn(), x, targets=["H100"], precision="16-mixed", channels_last=True)
    assert LAYOUT_NAME not in _op_names(forced)
    assert last.step_seconds("H100") < nchw.step_seconds("H100")
    fp32 = estimate(_cnn(), x, targets=["H100"], precision="32-true")
    assert LAYOUT_NAME not in _op_names(fp32)
    with pytest.raises(ValueError, match="channels_last"):
        estimate(_cnn(), x, targets=["H100"], channels_last="yes")


def test_a_channels_last_model_s_1x1_convolutions_after_a_norm_pay_no_transform() -> None:
    """On meta a norm's output is NCHW whatever its input, and a 1x1 weight's strides read the same in both
    formats: the capture keeps a channels-last model's convolutions channels-last, as a GPU's kernels do."""
    def bottleneck() -> nn.Module:
        with torch.device("meta"):
            return nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                                 nn.Conv2d(64, 256, 1), nn.BatchNorm2d(256), nn.ReLU(), nn.Conv2d(256, 64, 1),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))

    x = torch.empty(16, 3, 64, 64, device="meta")
    nchw = estimate(bottleneck(), x, targets=["H100"], precision="bf16-mixed")
    assert _op_names(nchw)[LAYOUT_NAME] == 18   # 3 convolutions x (2 forward + 4 backward)
    model = bottleneck().to(memory_format=torch.channels_last)
    last = estimate(model, x.to(memory_format=torch.channels_last), targets=["H100"], precision="bf16-mixed")
    assert LAYOUT_NAME not in _op_names(last)


def test_depthwise_convolutions_run_without_layout_transforms() -> None:
    """PyTorch runs a half-precision NCHW depthwise convolution with an NCHW kernel (its own, or cuDNN's FP16
    depthwise one); a grouped convolution of several channels a group goes to cuDNN's tensor cores, transposed."""
    def net(groups: int) -> nn.Module:
        with torch.device("meta"):
            return nn.Sequential(nn.Conv2d(64, 64, 3, padding=1, groups=groups), nn.AdaptiveAvgPool2d(1),
                                 nn.Flatten(), nn.Linear(64, 10))

    x = torch.empty(16, 64, 32, 32, device="meta")
    for precision in ("bf16-mixed", "16-mixed"):
        assert LAYOUT_NAME not in _op_names(estimate(net(64), x, targets=["H100"], precision=precision))
        # input and output forward, the output gradient twice, the input and its gradient backward
        assert _op_names(estimate(net(16), x, targets=["H100"], precision=precision))[LAYOUT_NAME] == 6


def test_layout_transforms_only_where_cudnn_uses_tensor_cores() -> None:
    x = torch.empty(64, 3, 256, 256, device="meta")
    assert runs_layout_transforms(lookup_hardware("V100"), "float16")
    assert not runs_layout_transforms(lookup_hardware("P100"), "float16")      # no tensor cores
    assert not runs_layout_transforms(lookup_hardware("V100"), "bfloat16")     # no BF16 tensor cores
    assert runs_layout_transforms(lookup_hardware("A100"), "bfloat16")
    nchw = estimate(_cnn(), x, targets=["P100", "V100"], precision="16-mixed")
    last = estimate(_cnn(), x, targets=["P100", "V100"], precision="16-mixed", channels_last=True)
    assert nchw.step_seconds("P100") == pytest.approx(last.step_seconds("P100"), rel=1e-9)
    assert nchw.step_seconds("V100") > last.step_seconds("V100")


def test_autocast_casts_and_layout_transforms_are_not_host_issued_ops() -> None:
    """They are launched from C++ inside another op's call: the host model counts the op, not them."""
    x = torch.empty(16, 3, 64, 64, device="meta")
    est = estimate(_cnn(), x, targets=["H100"], precision="16-mixed")
    flat = est.workload.flat()
    inside = sum(c for s, c in flat.distinct_counts()
                 if s.name in (LAYOUT_NAME, "autocast::_to_copy") and (s.bytes_moved or s.flops))
    working = sum(c for s, c in flat.distinct_counts() if s.bytes_moved or s.flops)
    assert inside >= 12
    assert est.workload.kernels == pytest.approx(working - inside)


def test_inputs_the_model_cannot_take_are_refused():
    """GPT-2 has 1,024 positions: an 8x4096 input used to be priced (863 ms, "fits: yes") (issue 26)."""
    transformers = pytest.importorskip("transformers", reason="the transformers extra builds GPT-2 from a config")
    config = transformers.GPT2Config(n_layer=1, n_embd=64, n_head=2, vocab_size=100)
    with torch.device("meta"):
        model = transformers.GPT2LMHeadModel(config)
    long_ids = torch.zeros(2, 4096, dtype=torch.long, device="meta")
    with pytest.raises(ValueError, match=r"config.(max_position_embeddings|n_positions) is 1024"):
        estimate(model, {"input_ids": long_ids, "labels": long_ids}, targets=["A100"])
    estimate(model, {"input_ids": long_ids[:, :1024], "labels": long_ids[:, :1024]}, targets=["A100"])
    real = transformers.GPT2LMHeadModel(config)
    ids = torch.full((1, 8), 100, dtype=torch.long)
    with pytest.raises(ValueError, match="vocab_size is 100"):
        estimate(real, {"input_ids": ids, "labels": ids}, targets=["A100"])


def test_estimate_twice_on_one_meta_model_captures_the_same_step():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8))
    x = torch.empty(16, 64, device="meta")
    first = _op_names(estimate(model, x, targets=[]))
    assert _op_names(estimate(model, x, targets=[])) == first and "aten::add_" not in first


def test_accumulation_repeats_forward_and_backward_and_steps_the_optimizer_once():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
    x = torch.empty(512, 1024, device="meta")
    one = estimate(model, x, targets=["A100"], steps=100)
    four = estimate(model, x, targets=["A100"], steps=100, accumulate=4)
    p1, p4 = one.row("A100")["phases_s"], four.row("A100")["phases_s"]
    assert p4["forward"] == pytest.approx(4 * p1["forward"], rel=1e-3)
    assert p4["backward"] > 4 * p1["backward"]   # and the gradient accumulation adds
    names = [spec.name for unit in four.workload.units if unit.name == "gradient accumulation" for spec, _ in unit.ops]
    assert names and set(names) == {"aten::add_"}
    assert p4["optimizer"] == pytest.approx(p1["optimizer"], rel=1e-3)
    assert four.total_seconds("A100") > 3 * one.total_seconds("A100") * 0.9
    assert four.to_dict()["accumulate"] == 4 and four.row("A100")["fits_memory"] == one.row("A100")["fits_memory"]
    with pytest.raises(ValueError, match="accumulate"):
        estimate(model, x, targets=["A100"], accumulate=0)


def test_a_recurrent_layer_on_meta_is_the_fused_op_a_gpu_runs() -> None:
    """On meta `aten::lstm` decomposes into a GEMM and the gates' pointwise ops per time step (about 1,000 host-issued
    ops for this model); a GPU runs cuDNN's fused layer op, as the CPU's mkldnn does: the meta capture records one op
    per layer and phase and prices the step as a real CPU capture of the same model does."""
    def lstm() -> nn.Module:
        class Model(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.emb, self.rnn, self.head = nn.Embedding(100, 32), nn.LSTM(32, 64, num_layers=2, batch_first=True), \
                    nn.Linear(64, 10)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.head(self.rnn(self.emb(x))[0][:, -1])
        return Model()

    with torch.device("meta"):
        on_meta = lstm()
    meta = estimate(on_meta, torch.zeros(4, 16, dtype=torch.long, device="meta"), targets=["A100"])
    real = estimate(lstm(), torch.zeros(4, 16, dtype=torch.long), targets=["A100"])
    ops = _op_names(meta)
    assert ops["aten::_cudnn_rnn"] == 2 and ops["aten::_cudnn_rnn_backward"] == 2
    assert "aten::addmm" not in ops or ops["aten::addmm"] <= 1          # the head's, no per-step GEMM
    assert sum(ops.values()) < 40
    if "aten::mkldnn_rnn_layer" in _op_names(real):                      # a CPU build that fuses the layer
        assert meta.rows[0]["step_s"] == pytest.approx(real.rows[0]["step_s"], rel=0.02)


def test_an_lstm_with_projections_on_meta_is_left_to_decompose() -> None:
    """Its layers hold a fifth weight (the projection), which the fused op's description does not read."""
    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn, self.head = nn.LSTM(32, 48, num_layers=2, proj_size=16), nn.Linear(16, 5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.rnn(x)[0][-1])

    with torch.device("meta"):
        model = Model()
    est = estimate(model, torch.empty(12, 4, 32, device="meta"), targets=["A100"])
    assert "aten::_cudnn_rnn" not in _op_names(est) and est.rows[0]["step_s"] > 0
