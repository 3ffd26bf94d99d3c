"""Issue 7: PreNeTCallback under DDP with 2 CPU processes (gloo), launched as a script.

One report (written by rank 0), one printed table, metrics logged by rank 0 only, every rank
measuring, a first prediction within 30% of the actual fit time, weights bit-identical to the
same DDP run without the callback, and nothing left behind on any rank.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.pace import total_at_pace
from tests.prediction_checks import assert_plans_what_is_left

SCRIPT = Path(__file__).with_name("ddp_script.py")
ROOT = SCRIPT.parents[1]


def launch(out: Path, *flags: str) -> tuple[list[dict], str]:
    out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCAL_RANK", "NODE_RANK", "WORLD_SIZE",
                                                                   "MASTER_", "PL_", "RANK"))}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), DS_ACCELERATOR="cpu", PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, str(SCRIPT), str(out), *flags], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    return ranks, output


@pytest.fixture(scope="module")
def ddp_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("ddp")
    # the callback's fit first (its start-up is the launch), then the same fit without it
    # (and a third, whose report cannot be written), all in one launch
    ranks, output = launch(base / "prenet", "--profile-layers", "--and-reference", "--and-failing-report")
    return dict(base=base, ranks=ranks, output=output)


def test_ddp_one_report_from_rank_zero(ddp_runs):
    ranks = ddp_runs["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1] and all(r["world_size"] == 2 for r in ranks)
    assert [r["is_rank_zero"] for r in ranks] == [True, False]
    for r in ranks:
        assert not r["disabled"] and r["prenet_warnings"] == [], r["failure"]
    reports = sorted(p.relative_to(ddp_runs["base"]) for p in ddp_runs["base"].rglob("*.json")
                     if not p.name.startswith("rank"))
    assert reports == [Path("prenet/report/prenet_report.json")]
    assert ddp_runs["output"].count("Predicted fit time") == 1  # the table is printed once
    assert ranks[0]["prenet_metrics_logged"] > 0 and ranks[1]["prenet_metrics_logged"] == 0
    report = json.loads((ddp_runs["base"] / "prenet" / "report" / "prenet_report.json").read_text())
    assert report["current"]["devices"] == 2
    assert report["predictions"] == ranks[0]["predictions"]


def test_ddp_plan_and_eta_are_per_rank_and_correct(ddp_runs):
    for r in ddp_runs["ranks"]:
        # 60 batches per epoch over 2 ranks: 30 optimizer steps per epoch on each
        assert r["plan"]["total_steps"] == 60 and r["global_step"] == 60 and r["actual"]["steps"] == 60
        assert r["layers"], "every rank profiles its layers"
        first = r["predictions"][0]
        assert first["at_step"] <= 10
        assert_plans_what_is_left(first, r["plan"]["total_batches"])     # each rank's own 60 steps
        _, pace = total_at_pace(first, r["measured"])
        if abs(pace - 1) < 0.1:   # a steady machine: the band holds the actual time as well
            assert first["low_s"] <= r["actual"]["fit_s"] * 1.1 and r["actual"]["fit_s"] <= first["high_s"] * 1.1


def test_ddp_start_up_before_the_first_hook_counts_in_the_fit_time(ddp_runs):
    rank0 = ddp_runs["ranks"][0]
    # launching rank 1 and joining the process group happen inside trainer.fit(), before any hook
    assert rank0["run"]["startup_s"] is not None and rank0["run"]["startup_s"] > 0.5
    assert rank0["actual"]["fit_s"] == pytest.approx(rank0["fit_wall_s"], rel=0.1)


def test_ddp_weights_identical_and_nothing_left_behind(ddp_runs):
    reference = {r["reference_weights_sha256"] for r in ddp_runs["ranks"]}
    assert len(reference) == 1 and None not in reference  # DDP keeps the ranks in sync
    for r in ddp_runs["ranks"]:
        assert {r["weights_sha256"]} == reference, "the callback changed what DDP computed"
        assert r["dispatch_modes"] == 0 and not r["save_checkpoint_wrapped"]


def test_ddp_report_failure_warns_on_rank_zero_only(ddp_runs):
    fits = [r["failing_report_fit"] for r in ddp_runs["ranks"]]
    assert len(fits[0]["prenet_warnings"]) == 1 and fits[0]["disabled"]
    assert fits[1]["prenet_warnings"] == [] and not fits[1]["disabled"]  # rank 1 writes nothing
    assert all(f["global_step"] == 60 for f in fits)
