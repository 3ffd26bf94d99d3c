"""A 2-process DDP `Trainer` run on CPU (gloo) with PreNeTTrainerCallback; launched by tests/test_transformers_ddp.py.

    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/transformers_ddp_script.py OUT_DIR

Each rank trains twice in the same process group: without the callback (the reference weights),
then with it, and writes ``OUT_DIR/rank<N>.json`` with what its callback saw; the main process
alone should write the report (``OUT_DIR/prenet_report.json``), print the table and log metrics.
"""
from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from prenet_callbacks import PreNeTTrainerCallback
from prenet_callbacks.session.machine import PreNeTWarning
from tests.hf_helpers import EventCounter, Samples, TinyRegressor, trainer, weights_digest
from transformers.integrations import TensorBoardCallback

STEP_SLEEP_S = 0.01


class SleepyRegressor(TinyRegressor):
    """Each training forward costs ~10 ms of 'compute', so timing noise on a shared CPU matters little."""

    def forward(self, x, labels=None):
        if self.training:
            time.sleep(STEP_SLEEP_S)
        return super().forward(x, labels)


class CountingReporter(TensorBoardCallback):
    """A reporting callback that counts the prenet/* logs it is handed (tensorboard itself is not needed)."""

    def __init__(self) -> None:  # noqa: D107
        self.prenet_logs = 0

    def on_train_begin(self, args, state, control, **kwargs):
        pass

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.prenet_logs += any(key.startswith("prenet/") for key in logs or {})

    def on_train_end(self, args, state, control, **kwargs):
        pass


def train(out: Path, callback: PreNeTTrainerCallback | None) -> tuple[object, CountingReporter, EventCounter]:
    reporter, counter = CountingReporter(), EventCounter()
    callbacks = [reporter, counter] + ([callback] if callback is not None else [])
    # 160 samples in batches of 4 over 2 ranks: 20 batches per rank per epoch, accumulation 2: 10 steps per epoch
    t = trainer(out, callbacks, train=Samples(160), eval_dataset=Samples(24), model=SleepyRegressor(seed=0),
                num_train_epochs=3, gradient_accumulation_steps=2, eval_strategy="steps", eval_steps=8,
                save_strategy="no", ddp_backend="gloo", ddp_find_unused_parameters=False)
    t.train()
    return t, reporter, counter


def main() -> None:
    out = Path(sys.argv[1])
    torch.set_num_threads(1)
    reference, _, _ = train(out / "reference", None)
    callback = PreNeTTrainerCallback(report_path=out / "prenet_report.json", warmup_steps=2, profile_steps=2,
                                     timing_steps=4, metrics_every_n_steps=10, targets=[], print_report=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t, reporter, counter = train(out / "trainer", callback)
    session = callback.session
    rank = int(os.environ.get("RANK", "0"))
    result = {
        "rank": rank,
        "world_size": t.args.world_size,
        "is_rank_zero": session.outputs.is_rank_zero,
        "disabled": session.guard.disabled,
        "failure": session.guard.failure,
        "prenet_warnings": [str(w.message) for w in caught if issubclass(w.category, PreNeTWarning)],
        "plan": session.report.plan,
        "predictions": session.report.predictions,
        "actual": session.report.actual,
        "current": session.report.current,
        "layers": bool(session.report.measured.get("layers")),
        "prenet_logs": reporter.prenet_logs,
        "evaluations": counter.evaluations,
        "global_step": t.state.global_step,
        "weights_sha256": weights_digest(t.model),
        "reference_sha256": weights_digest(reference.model),
        "forward_hooks": len(t.model._forward_hooks),
        "dispatch_modes": torch._C._len_torch_dispatch_stack(),
    }
    (out / f"rank{rank}.json").write_text(json.dumps(result, default=str))
    # the Trainer leaves the gloo group up; torn down by the interpreter's exit instead, its threads can
    # abort a rank ("terminate called without an active exception", seen once under a loaded suite)
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    # with the group destroyed the teardown can still abort (tests/test_model_parallel_run.py, 2026-12-05): every
    # rank has written its result, so leave without it
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
