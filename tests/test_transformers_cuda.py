"""The Trainer callback and the Tracker on a CUDA GPU: device clock, device-timed steps, memory account.

Skipped with the reason where there is no GPU; the same code paths run on CPU in
test_transformers_callback.py and test_loop_tracker.py.
"""
from __future__ import annotations

import pytest
import torch

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"),
    pytest.mark.filterwarnings("error::prenet_callbacks.session.machine.PreNeTWarning"),
]

FAST = dict(warmup_steps=2, profile_steps=2, timing_steps=5, metrics_every_n_steps=5, targets=["A100"], print_report=False)


def test_tracker_on_a_gpu_model(tmp_path):
    from integrations.loop import Tracker

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).cuda()
    optimizer = torch.optim.AdamW(model.parameters())
    with Tracker(total_steps=40, model=model, optimizer=optimizer, eval_every=20, checkpoint_every=20,
                 report_path=tmp_path / "r.json", **FAST) as tracker:
        for step in range(1, 41):
            model(torch.randn(64, 256, device="cuda")).square().mean().backward()
            optimizer.step()
            optimizer.zero_grad()
            tracker.step()
            if step % 20 == 0:
                with tracker.validation(), torch.no_grad():
                    model(torch.randn(64, 256, device="cuda"))
                with tracker.checkpoint():
                    torch.save(model.state_dict(), tmp_path / "ckpt.pt")
    report = tracker.report
    assert report.current["device"] == "cuda" and report.run["ended"]["reason"] == "completed"
    assert report.measured["timing"]["clock"] == "cuda"
    assert report.measured["memory"]["params_bytes"] > 0 and report.targets


def test_trainer_callback_on_a_gpu(tmp_path):
    pytest.importorskip("transformers", reason="the transformers extra is not installed")
    from prenet_callbacks import PreNeTTrainerCallback
    from tests.hf_helpers import Samples, trainer

    callback = PreNeTTrainerCallback(**FAST)
    t = trainer(tmp_path, [callback], use_cpu=False, eval_dataset=Samples(16), num_train_epochs=3,
                eval_strategy="steps", eval_steps=10, bf16=torch.cuda.is_bf16_supported())
    t.train()
    report = callback.report
    assert report.current["device"] == "cuda" and report.run["ended"]["reason"] == "completed"
    assert report.measured["timing"]["clock"] == "cuda"
    assert report.plan["validation_runs"] == 4 and report.targets
