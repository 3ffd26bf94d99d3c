"""PreNeTTrainerCallback under `torchrun` with 2 CPU processes (DDP, gloo), as a user launches it.

Each rank trains without, then with the callback. One report (written by the main process), one printed table, metrics handed to the reporting
callbacks by the main process only, every rank measuring the same plan, and weights
bit-identical to the same DDP run without the callback.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.prediction_checks import assert_plans_what_is_left

pytest.importorskip("transformers", reason="the transformers extra is not installed")

SCRIPT = Path(__file__).with_name("transformers_ddp_script.py")
ROOT = SCRIPT.parents[1]


def launch(out: Path) -> tuple[list[dict], str]:
    out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCAL_RANK", "NODE_RANK", "WORLD_SIZE", "MASTER_",
                                                                   "RANK", "ACCELERATE_", "TORCHELASTIC_"))}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), DS_ACCELERATOR="cpu", PYTHONWARNINGS="ignore",
               TOKENIZERS_PARALLELISM="false")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               str(SCRIPT), str(out)]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)], output


@pytest.fixture(scope="module")
def ddp_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("hf_ddp")
    ranks, output = launch(base / "prenet")  # each rank trains without the callback, then with it
    return dict(base=base, ranks=ranks, output=output)


def test_one_report_from_the_main_process(ddp_runs):
    ranks = ddp_runs["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1] and all(r["world_size"] == 2 for r in ranks)
    assert [r["is_rank_zero"] for r in ranks] == [True, False]
    for r in ranks:
        assert not r["disabled"] and r["prenet_warnings"] == [], r["failure"]
    reports = sorted(p.relative_to(ddp_runs["base"]) for p in ddp_runs["base"].rglob("prenet_report.json"))
    assert reports == [Path("prenet/prenet_report.json")]
    assert ddp_runs["output"].count("Predicted run time") == 1
    assert ranks[0]["prenet_logs"] > 0 and ranks[1]["prenet_logs"] == 0
    report = json.loads((ddp_runs["base"] / "prenet" / "prenet_report.json").read_text())
    assert report["current"]["devices"] == 2 and report["run"]["framework"] == "transformers"
    assert report["run"]["ended"]["reason"] == "completed" and report["run"]["startup_s"] is not None
    assert report["predictions"] == ranks[0]["predictions"]


def test_every_rank_plans_and_measures_the_same_run(ddp_runs):
    for r in ddp_runs["ranks"]:
        assert r["plan"]["total_steps"] == r["global_step"] == r["actual"]["steps"] == 30
        assert r["plan"]["validation_runs"] == r["evaluations"] == 4  # steps 8, 16, 24 and the last
        assert r["layers"], "every rank profiles its layers"
        first = r["predictions"][0]
        assert first["at_step"] <= 10
        assert_plans_what_is_left(first, r["plan"]["total_batches"])     # two batches to a step


def test_weights_identical_and_nothing_left_behind(ddp_runs):
    reference = {r["reference_sha256"] for r in ddp_runs["ranks"]}
    assert len(reference) == 1  # DDP keeps the ranks in sync
    for r in ddp_runs["ranks"]:
        assert {r["weights_sha256"]} == reference, "the callback changed what DDP computed"
        assert r["forward_hooks"] == 0 and r["dispatch_modes"] == 0
