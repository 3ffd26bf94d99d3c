"""Notes a user can use: one line per fact with the rows it applies to, advice only where it applies."""
from __future__ import annotations

import torch
from torch import nn

from prenet_callbacks import estimate
from prenet_callbacks.outputs.render import targets_table
from prenet_callbacks.report import Report


def _small_step(precision: str = "32-true", targets=("T4", "L4", "A10G", "A100", "H100", "8x H100", "TPU v5p")):
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    return estimate(model, torch.empty(32, 64, device="meta"), targets=list(targets), precision=precision, steps=100)


def _caption(est) -> list[str]:
    table = targets_table(Report(targets=est.rows))
    return str(table.caption or "").splitlines()


def test_one_host_bound_line_for_all_the_rows_it_applies_to():
    est = _small_step()
    bound = [r["label"] for r in est.rows if r["host_bound"]]
    assert len(bound) >= 3
    lines = [line for line in _caption(est) if "host-bound" in line]
    gpu_rows = [label for label in bound if "TPU" not in label]
    assert len([line for line in lines if "CUDA graphs" in line]) == 1
    assert all(label in lines[0] for label in gpu_rows[:3])


def test_no_cuda_graph_advice_and_an_fp32_caveat_on_a_tpu():
    est = _small_step(targets=("TPU v5p",))
    notes = est.rows[0]["notes"]
    assert not any("CUDA" in note for note in notes)
    assert any("publishes no FP32 rate" in note for note in notes)
    assert not any("publishes no FP32 rate" in note for note in _small_step("bf16-mixed", ("TPU v5p",)).rows[0]["notes"])


def test_batch_advice_names_no_batch_the_data_or_memory_do_not_bound():
    """The host-bound advice used to say "(up to 18,522,637 fits)": memory alone, beyond any dataset."""
    for row in _small_step().rows:
        assert not any("fits)" in note for note in row["notes"])
