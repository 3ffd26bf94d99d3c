"""A 2-process DDP fit on CPU (gloo) with PreNeTCallback; launched by tests/test_ddp.py.

    python tests/ddp_script.py OUT_DIR [--profile-layers] [--and-reference] [--and-failing-report]

``--and-reference``: after the fit, the same fit again without the callback in the same processes
(one launch instead of two), for the weights to compare with. ``--and-failing-report``: then once
more with a callback whose report cannot be written.

Lightning's DDP launcher starts the second rank by re-running this script. Each rank writes
``OUT_DIR/rank<N>.json`` with what its callback saw; rank 0 alone should write the report
(``OUT_DIR/report/prenet_report.json``) and print the table.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PL_DISABLE_FORK", "1")

import torch

import lightning.pytorch as pl

from prenet_callbacks import PreNeTCallback
from prenet_callbacks.session.machine import PreNeTWarning
from tests.lightning_helpers import RecordingLogger, TinyModule, loaders

STEP_SLEEP_S = 0.01


class SleepyModule(TinyModule):
    """Each step costs ~10 ms of 'compute', so timing noise on a shared CPU matters little."""

    def training_step(self, batch, batch_idx):
        time.sleep(STEP_SLEEP_S)
        return super().training_step(batch, batch_idx)


def _weights_sha256(module: torch.nn.Module) -> str:
    return hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in module.parameters())).hexdigest()


def _trainer(out: Path, callbacks: list, logger) -> pl.Trainer:
    return pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=2, callbacks=callbacks,
                      logger=logger, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, default_root_dir=str(out), num_sanity_val_steps=0,
                      limit_val_batches=2)


def _reference_weights(out: Path) -> str:
    """The same fit without the callback, in the processes the first one started."""
    pl.seed_everything(0, verbose=False)
    module = SleepyModule()
    _trainer(out / "reference", [], RecordingLogger()).fit(module, *loaders(train_batches=60, val_batches=4))
    return _weights_sha256(module)


def _failing_report_fit(out: Path) -> dict:
    """A fit whose callback cannot write its report: what each rank warned and whether it stepped aside."""
    pl.seed_everything(0, verbose=False)
    # writable when the callback is built (checked then), not by the time the report is written: the
    # folder it would go into is replaced by a file
    blocked = out / f"failing-report-folder-{os.getpid()}"   # each rank process builds its own callback
    callback = PreNeTCallback(report_path=blocked / "prenet_report.json", warmup_steps=2,
                              profile_steps=2, timing_steps=5, metrics_every_n_steps=20, print_report=False)
    out.mkdir(parents=True, exist_ok=True)
    if not blocked.exists():
        blocked.write_text("a file where the report's folder should be")
    trainer = _trainer(out / "failing", [callback], RecordingLogger())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(SleepyModule(), *loaders(train_batches=60, val_batches=4))
    return {"prenet_warnings": [str(w.message) for w in caught if issubclass(w.category, PreNeTWarning)],
            "disabled": callback.session.guard.disabled, "global_step": trainer.global_step}


def main() -> None:
    out = Path(sys.argv[1])
    profile_layers = "--profile-layers" in sys.argv
    torch.set_num_threads(1)
    pl.seed_everything(0, verbose=False)
    report_path = out / "report" / "prenet_report.json"
    callback = PreNeTCallback(report_path=report_path, warmup_steps=2, profile_steps=2, timing_steps=5,
                              metrics_every_n_steps=20, print_report=True, profile_layers=profile_layers,
                              html=False)   # the end page is waited for after the fit's own time: not timed here
    logger = RecordingLogger()
    trainer = _trainer(out, [callback], logger)
    module = SleepyModule()
    # 60 batches of 4 per epoch, split over 2 ranks: 30 optimizer steps per epoch each
    train, val = loaders(train_batches=60, val_batches=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.perf_counter()
        trainer.fit(module, train, val)
        fit_wall_s = time.perf_counter() - started
    session = callback.session
    rank = trainer.global_rank
    reference = _reference_weights(out) if "--and-reference" in sys.argv else None
    failing = _failing_report_fit(out) if "--and-failing-report" in sys.argv else None
    result = {
        "rank": rank,
        "world_size": trainer.world_size,
        "is_rank_zero": session.outputs.is_rank_zero,
        "disabled": session.guard.disabled,
        "failure": session.guard.failure,
        "prenet_warnings": [str(w.message) for w in caught if issubclass(w.category, PreNeTWarning)],
        "predictions": session.report.predictions,
        "actual": session.report.actual,
        "run": session.report.run,
        "fit_wall_s": fit_wall_s,
        "plan": session.report.plan,
        "current": session.report.current,
        "layers": bool(session.report.measured.get("layers")),
        "measured": {"batch_s": session.report.measured.get("batch_s")},
        "prenet_metrics_logged": logger.prenet_metrics,
        "global_step": trainer.global_step,
        "weights_sha256": _weights_sha256(module),
        "reference_weights_sha256": reference,
        "failing_report_fit": failing,
        "dispatch_modes": torch._C._len_torch_dispatch_stack(),
        "save_checkpoint_wrapped": "save_checkpoint" in trainer.__dict__,
    }
    (out / f"rank{rank}.json").write_text(json.dumps(result, default=str))
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    # gloo's threads can abort the interpreter's teardown after all the work ("terminate called without an active
    # exception", exit code -6, twice in a day's CI runs on this machine's torch, with and without the group
    # destroyed): once every rank's result is written, leave without that teardown
    deadline = time.monotonic() + 60
    while rank == 0 and not all((out / f"rank{r}.json").exists() for r in range(trainer.world_size)) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
