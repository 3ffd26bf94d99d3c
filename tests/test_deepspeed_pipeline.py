"""`attach` on a DeepSpeed `PipelineEngine`: its ``train_batch`` is measured as whole optimizer steps, its
``eval_batch`` as evaluations, and a run split over stages is labelled with its layout and not carried to other
hardware (each rank holds one stage's layers).

One process for a single stage (the process group `tests/test_deepspeed.py` uses), two spawned processes on a
gloo group for two stages.
"""
from __future__ import annotations

import os
import warnings

os.environ.setdefault("DS_ACCELERATOR", "cpu")

import pytest
import torch
import torch.multiprocessing as mp
from torch import nn

deepspeed = pytest.importorskip("deepspeed")

pytestmark = [
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("error::prenet_callbacks.session.machine.PreNeTWarning"),
]
_FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, print_report=False, html=False)
_MICRO, _MICRO_BATCHES = 4, 4


def pipeline_engine(stages: int):
    """A five-layer MLP as a `PipelineModule` of ``stages`` stages, Adam, 4 micro-batches of 4 a step."""
    from deepspeed.pipe import PipelineModule

    torch.manual_seed(0)
    layers = [nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4)]
    module = PipelineModule(layers=layers, num_stages=stages, loss_fn=nn.MSELoss())
    config = {"train_micro_batch_size_per_gpu": _MICRO, "gradient_accumulation_steps": _MICRO_BATCHES,
              "optimizer": {"type": "Adam", "params": {"lr": 1e-3, "torch_adam": True}},
              "steps_per_print": 10**9, "wall_clock_breakdown": False}
    engine, *_ = deepspeed.initialize(model=module, model_parameters=list(module.parameters()), config=config)
    return engine


def batches():
    generator = torch.Generator().manual_seed(1)
    while True:
        yield torch.randn(_MICRO, 16, generator=generator), torch.randn(_MICRO, 4, generator=generator)


def test_a_single_stage_pipeline_is_measured_step_by_step(tmp_path):
    from integrations.deepspeed_cpu import init_single_process_cpu

    init_single_process_cpu()
    from integrations.deepspeed import attach

    engine = pipeline_engine(stages=1)
    data = batches()
    handle = attach(engine, total_steps=24, eval_every=8, eval_batches=2, report_path=tmp_path / "r.json", **_FAST)
    assert "train_batch" in engine.__dict__ and "eval_batch" in engine.__dict__
    assert "forward" not in engine.__dict__   # a pipeline engine refuses forward/backward/step: never wrapped
    for step in range(24):
        engine.train_batch(data)
        if (step + 1) % 8 == 0:
            for _ in range(2):
                engine.eval_batch(data)
    report = handle.finish()
    assert report.first_prediction is not None and report.first_prediction["predicted_total_s"] > 0
    assert report.actual["steps"] == 24 and report.actual["batches"] == 24   # a train_batch is one batch, one step
    assert report.plan["accumulate"] == 1
    # the eval_batch calls, timed apart: the evaluations after steps 8 and 16 (each counted at the next batch's end;
    # the one after the last step ends the run at finish())
    assert report.measured["validation"]["runs"] == 2
    assert report.current["deepspeed"]["gradient_accumulation_steps"] == _MICRO_BATCHES
    assert "model_parallel" not in report.current                          # one stage: the model is whole
    assert "forward_s" not in report.measured["step_phases"]               # never marked: absent, not zero
    assert report.projection["notes"] == [n for n in report.projection["notes"] if "PipelineEngine" in n]
    assert "train_batch" not in engine.__dict__ and "_prenet_handle" not in engine.__dict__
    engine.train_batch(data)   # the engine trains on, untouched
    assert engine.global_steps == 25


def _two_stages(rank: int, world: int, rendezvous: str, out: str, queue) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world))
    warnings.simplefilter("ignore")
    import torch.distributed as dist

    # a file rendezvous: no port picked here that another test's process group could take meanwhile
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=world)
    import deepspeed.ops

    deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False   # no JIT build (`integrations.deepspeed_cpu`)
    deepspeed.init_distributed(dist_backend="gloo", verbose=False)
    from integrations.deepspeed import attach

    engine = pipeline_engine(stages=2)
    data = batches()
    handle = attach(engine, total_steps=20, report_path=f"{out}/report.json", targets=["H100", "8x A100"], **_FAST)
    for _ in range(20):
        engine.train_batch(data)
    report = handle.report
    queue.put((rank, handle.attached, report.actual["steps"], report.current.get("model_parallel"),
               report.targets[0], report.projection["notes"], report.first_prediction is not None))
    dist.barrier()
    # the result is in the queue: leave without the interpreter's teardown, which gloo's threads can abort
    os._exit(0)


def test_a_two_stage_pipeline_is_labelled_with_its_layout_and_not_projected(tmp_path):
    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    mp.start_processes(_two_stages, args=(2, str(tmp_path / "rendezvous"), str(tmp_path), queue), nprocs=2,
                       join=True, start_method="spawn")
    results = sorted(queue.get() for _ in range(2))
    for rank, attached, steps, own, row, notes, predicted in results:
        assert not attached and steps == 20 and predicted       # the run ended at its last step, on both ranks
        assert own == {"tp": 1, "pp": 2, "micro_batches": _MICRO_BATCHES,
                       "source": "a DeepSpeed PipelineEngine of 2 stages, 4 micro-batches a step"}
        assert row["current"] and row["label"].endswith(" pp=2 microbatches=4")
        assert row["layout"]["pp"] == 2 and row["layout"]["dp"] == 1 and row["layout"]["source"] == "run"
        assert row["global_batch"] == _MICRO * _MICRO_BATCHES        # one replica: 4 micro-batches of 4
        assert set(row["phases_s"].values()) == {None}                 # not marked inside DeepSpeed's schedule
        assert len(notes) == 1 and "the run splits its model itself (pp=2 microbatches=4" in notes[0]
    assert os.path.exists(tmp_path / "report.json")                   # rank 0 wrote it
