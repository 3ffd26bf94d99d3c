"""A projected row says where the evaluation sets all erred the same way for its generation and precision
(`bands.bias_note`, `band_table.json`'s ``bias``); it never changes the prediction."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from predictor_models.hardware import lookup_hardware
from prenet_callbacks import estimate
from prenet_callbacks.projection.rows.bands import bias_note, build_bias, shipped_bias


def _rows(errors_by_set: dict[str, list[float]], half: bool = True, generation: str = "hopper",
          gpu: str = "H100-SXM5") -> list[dict]:
    return [{"set": name, "gpu": gpu, "method": "absolute", "half": half, "generation": generation,
             "host_bound": False, "log_error": math.log1p(error)} for name, errors in errors_by_set.items()
            for error in errors]


def test_bias_cells_hold_each_sets_median_of_the_absolute_rows():
    rows = _rows({"a": [-0.1, -0.3, -0.2], "b": [-0.4, 0.1]}) + _rows({"a": [0.5]}, half=False)
    rows.append({"set": "c", "method": "anchored", "half": True, "generation": "hopper", "log_error": 1.0})
    rows.append({"set": "c", "method": "absolute", "half": True, "generation": "hopper", "host_bound": True,
                 "log_error": 1.0})
    cells = build_bias(rows)
    assert set(cells) == {"half/hopper", "fp32/hopper"}
    assert cells["half/hopper"]["n"] == 5 and cells["half/hopper"]["median_error"] == pytest.approx(-0.2)
    assert cells["half/hopper"]["sets"] == {"a": pytest.approx(-0.2), "b": pytest.approx(-0.15)}
    assert cells["half/hopper"]["gpus"] == {"H100-SXM5": pytest.approx(-0.2)}


def test_a_generation_whose_gpus_err_both_ways_is_not_told():
    """Every set's median can lean one way while the generation's GPUs split (the Ada cards: L4 and RTX 4090 too slow,
    RTX 6000 Ada too fast): no direction to tell."""
    rows = (_rows({"a": [0.3] * 3, "b": [0.3] * 2, "c": [0.3] * 2}, generation="ada lovelace", gpu="L4")
            + _rows({"a": [-0.1], "b": [-0.1], "c": [-0.1]}, generation="ada lovelace", gpu="RTX 6000 Ada"))
    table = build_bias(rows)
    assert all(m > 0 for m in table["half/ada lovelace"]["sets"].values())
    assert bias_note(True, lookup_hardware("L4"), table=table) is None
    rows = [r for r in rows if r["gpu"] == "L4"] + _rows({"a": [0.2]}, generation="ada lovelace", gpu="RTX 4090")
    assert "Ada Lovelace GPUs took" in bias_note(True, lookup_hardware("L4"), table=build_bias(rows))


@pytest.mark.parametrize("errors, says", [
    ({"a": [-0.2] * 4, "b": [-0.2] * 3, "c": [-0.3]}, True),           # three sets, all too fast
    ({"a": [-0.2] * 4, "b": [-0.2] * 3, "c": [0.1]}, False),            # one set the other way
    ({"a": [-0.2] * 5, "b": [-0.2] * 4}, False),                        # two sets only
    ({"a": [-0.05] * 4, "b": [-0.05] * 3, "c": [-0.06]}, False),        # under 10%
    ({"a": [-0.2] * 2, "b": [-0.2] * 2, "c": [-0.2] * 2}, False),       # six steps only
])
def test_a_row_is_told_only_where_enough_sets_agree(errors, says):
    table = build_bias(_rows(errors))
    h100 = lookup_hardware("H100-SXM5")
    note = bias_note(True, h100, table=table)
    assert (note is not None) is says
    if says:
        assert "Hopper GPUs took 25% longer than predicted" in note and "upper half of the band" in note
        assert "on 1 GPU in 3 sets" in note
        assert bias_note(False, h100, table=table) is None                  # another precision's cell
        assert bias_note(True, lookup_hardware("A100-SXM4-80GB"), table=table) is None
        # anchored on a measured GPU of the same generation, the error is on both sides of the ratio
        assert bias_note(True, lookup_hardware("H200-SXM"), lookup_hardware("H100-SXM5"), table=table) is None
        assert bias_note(True, h100, lookup_hardware("A100-SXM4-80GB"), table=table) == note
        assert bias_note(True, h100, host_bound=True, table=table) is None       # the host model's time


def test_a_faster_generation_reads_the_lower_half():
    table = build_bias(_rows({"a": [0.25] * 4, "b": [0.25] * 3, "c": [0.25]}, generation="ada lovelace"))
    note = bias_note(True, lookup_hardware("RTX 4090"), table=table)
    assert note and "took 20% less time than predicted" in note and "lower half" in note


def test_a_device_bound_bf16_projection_onto_hopper_carries_the_shipped_note(monkeypatch):
    cell = shipped_bias().get("half/hopper")
    if not cell or min(cell["sets"].values()) * max(cell["sets"].values()) <= 0:
        pytest.skip(f"the committed band table's half/hopper cell no longer has every set erring one way: {cell}")
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(4096, 16384), nn.GELU(), nn.Linear(16384, 4096))
    x = torch.empty(16384, 4096, device="meta")
    bf16 = estimate(model, x, targets=["H100", "A100"], precision="bf16-mixed")
    fp32 = estimate(model, x, targets=["H100"], precision="32-true")
    assert not bf16.row("H100")["host_bound"], "a device-bound step is what the note speaks of"
    hopper = [n for n in bf16.row("H100")["notes"] if "Hopper GPUs took" in n]
    assert len(hopper) == 1 and "upper half of the band" in hopper[0]
    assert not any("GPUs took" in n for n in bf16.row("A100")["notes"])
    assert not any("GPUs took" in n for n in fp32.row("H100")["notes"])
    assert "Hopper GPUs took" in bf16.table()       # the table's notes name the row it applies to
    # a disclosure only: without it the row's figures are the same
    monkeypatch.setattr("prenet_callbacks.projection.rows.row_parts.bias_note", lambda *args, **kwargs: None)
    plain = estimate(model, x, targets=["H100", "A100"], precision="bf16-mixed").row("H100")
    told = bf16.row("H100")
    assert not any("GPUs took" in n for n in plain["notes"])
    assert {k: told[k] for k in ("step_s", "step_low_s", "step_high_s")} == \
        {k: plain[k] for k in ("step_s", "step_low_s", "step_high_s")}
