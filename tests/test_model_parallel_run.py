"""A run that splits its model itself (DTensor tensor parallelism): read from its parameters, labelled in its
row, and not carried to other hardware (its recorded ops are one rank's shards)."""
from __future__ import annotations

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from prenet_callbacks.session.model_parallel_run import run_layout
from prenet_callbacks.outputs.render import render_text
from prenet_callbacks.projection import project_report
from prenet_callbacks.report import Report
from tests.projection_fixtures import ScaledBound, make_report


def _worker(rank: int, world: int, rendezvous: str, queue) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    # a file rendezvous: no port picked here that another test's process group could take meanwhile
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        # Lightning's ModelParallelStrategy mesh: (data_parallel, tensor_parallel)
        mesh = init_device_mesh("cpu", (1, world), mesh_dim_names=("data_parallel", "tensor_parallel"))
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
        parallelize_module(model, mesh["tensor_parallel"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
        tensor_parallel = run_layout(model)
        # FSDP2-style: parameters sharded over the data-parallel dimension only
        dp_mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("data_parallel",))
        plain = nn.Linear(8, 16)
        for name, param in list(plain.named_parameters()):
            setattr(plain, name, nn.Parameter(distribute_tensor(param.detach(), dp_mesh, [Shard(0)])))
        queue.put((rank, tensor_parallel, run_layout(plain), run_layout(nn.Linear(8, 8))))
    finally:
        dist.destroy_process_group()
    # the result is in the queue (a SimpleQueue writes it at once): leave without the interpreter's teardown, which
    # gloo's threads can abort ("terminate called without an active exception", SIGABRT, in a day's CI runs)
    os._exit(0)


def test_dtensor_tensor_parallelism_is_read_from_the_parameters(tmp_path):
    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    mp.start_processes(_worker, args=(2, str(tmp_path / "rendezvous"), queue), nprocs=2, join=True,
                       start_method="spawn")
    results = sorted(queue.get() for _ in range(2))
    for _, tensor_parallel, fsdp_only, plain in results:
        assert tensor_parallel["tp"] == 2 and tensor_parallel["pp"] == 1
        whole = 8 * 16 + 16 + 16 * 8 + 8
        assert tensor_parallel["unsharded_params"] == whole
        assert tensor_parallel["sharded_params"] == (8 * 16 + 16 + 16 * 8) // 2 + 8   # the row bias is whole
        assert fsdp_only is None and plain is None


def test_a_tensor_parallel_run_is_labelled_and_not_projected_elsewhere():
    report = make_report(devices=4)
    report.current["model_parallel"] = {"tp": 2, "pp": 1, "source": "DTensor parameters sharded over a "
                                                                     "tensor-parallel mesh dimension"}
    rows = project_report(report, ["8x H100", "8x H100 tp=8"], predictor=ScaledBound())
    assert len(rows) == 1 and rows[0]["current"]
    assert rows[0]["label"] == "4x A100-SXM4-80GB tp=2 dp=2"
    assert rows[0]["layout"] == {"tp": 2, "pp": 1, "dp": 2, "sp": False, "microbatches": None, "global_batch": None,
                                 "schedule": "1f1b", "virtual_stages": 1, "applied": True, "source": "run"}
    # without other rows, only why: nothing of pricing them (host time, anchoring) stays in the notes
    assert len(report.projection["notes"]) == 1
    assert "the run splits its model itself (tp=2 dp=2" in report.projection["notes"][0]
    assert "not projected" in report.projection["notes"][0]
    assert rows[0]["global_batch"] == rows[0]["batch_per_device"] * 2   # two replicas of the model, not four
    # and the panel under the measured row says why it stands alone
    text = " ".join(render_text(Report.from_dict(report.to_dict()), width=100).split())
    assert "the run splits its model itself (tp=2 dp=2" in text.replace("│", "").replace("  ", " ")


@pytest.mark.parametrize("own", [None, {}, {"tp": 1, "pp": 1}])
def test_runs_that_do_not_split_their_model_project_as_before(own):
    report = make_report()
    if own is not None:
        report.current["model_parallel"] = own
    rows = project_report(report, ["8x H100"], predictor=ScaledBound())
    assert [row["label"] for row in rows] == ["A100-SXM4-80GB", "8x H100-SXM5"] and "layout" not in rows[0]
