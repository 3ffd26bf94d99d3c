"""The memory account: state sizes per device from metadata only, for plain, ZeRO 1-3 and FSDP 1/2.

One process, CPU, gloo (the process group DeepSpeed's tests use), so every sharded layout here has
one rank; where a rank's share must differ from the whole, a local shard is built by hand.
"""
from __future__ import annotations

import os

os.environ.setdefault("DS_ACCELERATOR", "cpu")

import pytest
import torch
from torch import nn

from prenet_callbacks.measure.memory_account import memory_summary, state_sizes

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]

N = 16 * 32 + 32 + 32 * 32 + 32 + 32 * 4 + 4        # parameters of `_mlp`


def _mlp(dtype: torch.dtype = torch.float32) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4)).to(dtype)


def _step(model: nn.Module, opt: torch.optim.Optimizer, dtype: torch.dtype = torch.float32) -> None:
    model(torch.randn(4, 16, dtype=dtype)).float().pow(2).mean().backward()
    opt.step()


def _no_state_dict(monkeypatch, *modules: nn.Module) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("state_dict() gathers under FSDP: the account must not call it")
    for module in modules:
        for m in module.modules():
            monkeypatch.setattr(m, "state_dict", refuse)


def test_plain_module_frozen_layer_tied_weight_and_optimizer_state(monkeypatch):
    model = _mlp()
    model[0].requires_grad_(False)                    # frozen: weights, no gradients, no state
    model[4].weight = model[4].weight                 # (a no-op tie: counted once anyway)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad])
    _step(model, opt)
    _no_state_dict(monkeypatch, model)
    sizes = state_sizes(model, [opt])
    trainable = N - (16 * 32 + 32)
    steps_bytes = sum(s["step"].numel() * s["step"].element_size() for s in opt.state.values())
    assert sizes == {"params_bytes": 4 * N, "grads_bytes": 4 * trainable,
                     "optimizer_bytes": 8 * trainable + steps_bytes, "sharding": "none", "world": 1}


def test_half_precision_and_grad_dtype():
    model = _mlp(torch.bfloat16)
    sizes = state_sizes(model)
    assert sizes["params_bytes"] == 2 * N and sizes["grads_bytes"] == 2 * N and sizes["optimizer_bytes"] == 0
    params = list(model.parameters())
    if not hasattr(params[0], "grad_dtype"):
        pytest.skip(f"torch {torch.__version__} has no Tensor.grad_dtype (fp32 gradients of bf16 weights)")
    for p in params:                 # fp32 gradient accumulation for bf16 weights
        p.grad_dtype = torch.float32
    assert state_sizes(model)["grads_bytes"] == 4 * N     # before any gradient exists
    params[0].grad = torch.zeros(params[0].shape, dtype=torch.float32)
    assert state_sizes(model)["grads_bytes"] == 4 * N
    with pytest.raises(ValueError, match="world=0"):
        state_sizes(model, world=0)


def test_memory_summary_splits_the_peak():
    sizes = {"params_bytes": 100, "grads_bytes": 100, "optimizer_bytes": 200, "sharding": "zero1", "world": 8}
    summary = memory_summary(1000, sizes, device="cuda:1")
    assert summary == {"device": "cuda:1", "peak_allocated_bytes": 1000, "params_bytes": 100, "grads_bytes": 100,
                       "optimizer_bytes": 200, "activations_bytes": 600, "sharding": "zero1", "world": 8}
    assert memory_summary(300, sizes, device="cuda:0")["activations_bytes"] == 0
    assert memory_summary(None, sizes, device="cpu")["activations_bytes"] is None


class _FakeZero2Engine:
    """The metadata a ZeRO-2 engine on 4 ranks exposes; its optimizer holds partitions."""

    dp_world_size = 4

    def __init__(self) -> None:
        self.module = _mlp()
        inner = torch.optim.Adam([torch.zeros(-(-N // 4), requires_grad=True)])   # the fp32 partition
        inner.param_groups[0]["params"][0].grad = torch.zeros(-(-N // 4))
        inner.step()

        class Wrapper:
            optimizer = inner
        self.optimizer = Wrapper()

    def zero_optimization_stage(self) -> int:
        return 2


def test_zero2_partitions_gradients_and_optimizer_state():
    sizes = state_sizes(_FakeZero2Engine())
    part = -(-N // 4)
    assert sizes["sharding"] == "zero2" and sizes["world"] == 4
    assert sizes["params_bytes"] == 4 * N                    # ZeRO-2 keeps every parameter
    grads = sum(4 * -(-p.numel() // 4) for p in _mlp().parameters())
    assert sizes["grads_bytes"] == grads
    assert sizes["optimizer_bytes"] == 4 * part * 3 + 4      # master partition, two moments, step


@pytest.fixture(scope="module")
def process_group():
    pytest.importorskip("deepspeed", reason="deepspeed is not installed")
    from integrations.deepspeed_cpu import init_single_process_cpu

    init_single_process_cpu()


def _engine(stage: int, dtype: str):
    import deepspeed

    model = _mlp()
    config = {"train_micro_batch_size_per_gpu": 4, "steps_per_print": 10**9,
              "optimizer": {"type": "Adam", "params": {"lr": 1e-3, "torch_adam": True}},
              "zero_optimization": {"stage": stage, "stage3_param_persistence_threshold": 0}}
    if dtype == "bf16":
        config["bf16"] = {"enabled": True}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    x = torch.randn(4, 16, dtype=torch.bfloat16 if dtype == "bf16" else torch.float32)
    engine.backward(engine(x).float().pow(2).mean())
    engine.step()
    return engine


@pytest.mark.parametrize("stage,dtype", [(1, "bf16"), (3, "fp32")])
def test_deepspeed_zero_from_partition_metadata(process_group, monkeypatch, stage, dtype):
    engine = _engine(stage, dtype)
    _no_state_dict(monkeypatch, engine.module)
    if stage == 3:
        # released ZeRO-3 parameters are empty outside forward: numel() would say 0
        assert all(p.numel() == 0 for p in engine.module.parameters())
    sizes = state_sizes(engine)
    width = 2 if dtype == "bf16" else 4
    assert sizes["sharding"] == f"zero{stage}" and sizes["world"] == 1
    assert sizes["params_bytes"] == width * N and sizes["grads_bytes"] == width * N
    # fp32 master partition + Adam's two moments over it (+ a step counter)
    assert 12 * N <= sizes["optimizer_bytes"] <= 12 * N + 64
    if stage == 3:    # the module alone still shows its partitions
        assert state_sizes(engine.module)["params_bytes"] == width * N
        assert state_sizes(engine.module)["sharding"] == "zero3"


def test_fsdp1_flat_parameters(process_group, monkeypatch):
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    model = FSDP(_mlp(), device_id=torch.device("cpu"))
    opt = torch.optim.Adam(model.parameters())
    _step(model, opt)
    _no_state_dict(monkeypatch, model)
    sizes = state_sizes(model, [opt])
    assert sizes["sharding"] == "fsdp"
    assert sizes["params_bytes"] == 4 * N and sizes["grads_bytes"] == 4 * N
    assert 8 * N <= sizes["optimizer_bytes"] <= 8 * N + 64


def test_fsdp2_dtensor_local_shards(process_group, monkeypatch):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor, Shard

    mesh = init_device_mesh("cpu", (1,))
    model = _mlp()
    fully_shard(model, mesh=mesh)
    opt = torch.optim.Adam(model.parameters())
    _step(model, opt)
    _no_state_dict(monkeypatch, model)
    sizes = state_sizes(model, [opt])
    assert sizes["sharding"] == "fsdp" and sizes["world"] == 1
    assert sizes["params_bytes"] == 4 * N and sizes["grads_bytes"] == 4 * N
    assert 8 * N <= sizes["optimizer_bytes"] <= 8 * N + 64

    # one rank's view of a 4-way shard: an (8, 16) weight of which this rank holds 2 rows
    holder = nn.Module()
    local = torch.zeros(2, 16)
    holder.w = nn.Parameter(DTensor.from_local(local, mesh, [Shard(0)], run_check=False,
                                               shape=torch.Size([8, 16]), stride=(16, 1)))
    assert holder.w.numel() == 128
    assert state_sizes(holder)["params_bytes"] == 2 * 16 * 4
