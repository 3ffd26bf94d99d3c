"""Unit tests of the projection's parts: precision, communication, memory, cost, targets, advice."""
from __future__ import annotations

import dataclasses

import pytest

from predictor_models.hardware import UnknownHardwareError, lookup_hardware
from predictor_models.op_spec import OpSpec
from prenet_callbacks.projection.rows.advice import recommend
from prenet_callbacks.projection.rows.cost import run_cost
from prenet_callbacks.projection.rows.memory import fit_memory, model_state_bytes
from prenet_callbacks.projection.parallel.fabric import Fabric, target_fabric
from prenet_callbacks.projection.parallel.links import node_link
from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig, ddp_exposed_seconds, zero_comm_seconds
from prenet_callbacks.projection.ops.precision import convert, parse_precision, precision_note, retune
from prenet_callbacks.projection.targets import DEFAULT_TARGETS, resolve_targets


# ---- precision -------------------------------------------------------------------------------
@pytest.mark.parametrize("text,half,mixed", [("32-true", None, False), ("16-mixed", "float16", True),
                                             ("bf16-mixed", "bfloat16", True), ("16-true", "float16", False),
                                             ("bf16-true", "bfloat16", False), ("bf16", "bfloat16", True)])
def test_precision_strings(text, half, mixed):
    p = parse_precision(text, "highest", conv_tf32=False)
    assert p.half == half and p.mixed == mixed


def test_precision_tf32_follows_matmul_precision_and_cudnn_flag():
    assert parse_precision("32-true", "high", conv_tf32=False).matmul_tf32
    assert not parse_precision("32-true", "highest", conv_tf32=False).matmul_tf32
    assert parse_precision("32-true", "highest", conv_tf32=True).conv_tf32
    assert not parse_precision("bf16-mixed", "high", conv_tf32=True).matmul_tf32  # TF32 only matters in fp32


def test_bad_precision_names_the_choices():
    with pytest.raises(ValueError, match="bf16-mixed"):
        parse_precision("bf17")
    with pytest.raises(ValueError, match="highest"):
        parse_precision("32-true", "ultra")


def test_bf16_on_v100_is_explained_not_ignored():
    p = parse_precision("bf16-mixed", "highest", conv_tf32=False)
    note = precision_note(p, lookup_hardware("V100-SXM2-16GB"))
    assert note and "BF16" in note and "16-mixed" in note
    assert precision_note(p, lookup_hardware("H100-SXM5")) is None


def test_convert_mixed_halves_gemm_keeps_optimizer():
    p = parse_precision("16-mixed", "highest", conv_tf32=False)
    g = OpSpec("gemm", "float32", 1e9, 4e6, 2e6, {"m": 1}, False, "mm")
    assert convert(g, p, "fwd").dtype == "float16" and convert(g, p, "fwd").bytes_read == 2e6
    o = OpSpec("optimizer", "float32", 1e6, 4e6, 2e6, {}, False, "adam")
    assert convert(o, p, "opt") == o
    p32 = parse_precision("32-true", "high", conv_tf32=False)
    assert retune(g, p32).tf32 and not retune(OpSpec("conv", "float32", 1, 1, 1), p32).tf32


# ---- communication ---------------------------------------------------------------------------
def test_ring_all_reduce_matches_vidur_h100_fit():
    link = node_link(lookup_hardware("H100-SXM5"), 8)
    assert 330e9 < link.bus_bytes_per_s < 380e9       # Vidur h100_dgx N=8: 349-370 GB/s
    fabric = Fabric(link, 1, 8)
    assert fabric.seconds(32 * 2**20) == pytest.approx(0.196e-3, rel=0.25)   # measured 0.196 ms for 32 MiB
    assert Fabric(link, 1, 1).seconds(1e9) == 0.0


def test_pcie_cards_ring_over_pcie_beyond_a_bridge_pair():
    h100_pcie = lookup_hardware("H100-PCIe")
    assert node_link(h100_pcie, 2).kind == "nvlink"
    assert node_link(h100_pcie, 4).kind == "pcie"
    assert node_link(lookup_hardware("L4"), 4).bus_bytes_per_s < 30e9


def test_ddp_overlap_hides_comm_behind_long_backward():
    fabric = target_fabric(lookup_hardware("A100-SXM4-80GB"), 1, 8)
    total, exposed = ddp_exposed_seconds(400e6, fabric, backward_s=1.0)
    assert total > 0 and exposed < total * 0.1          # long backward: only the last bucket shows
    total2, exposed2 = ddp_exposed_seconds(400e6, fabric, backward_s=0.0)
    assert exposed2 == pytest.approx(total2)             # nothing to hide behind


def test_zero3_moves_more_than_zero2_and_offload_costs_host_time():
    fabric = target_fabric(lookup_hardware("H100-SXM5"), 1, 8)
    z2 = zero_comm_seconds(ZeroConfig(2), 1e9, 2, 2, fabric, 0.1, 0.2, 25e9)
    z3 = zero_comm_seconds(ZeroConfig(3), 1e9, 2, 2, fabric, 0.1, 0.2, 25e9)
    off = zero_comm_seconds(ZeroConfig(2, offload_optimizer=True), 1e9, 2, 2, fabric, 0.1, 0.2, 25e9)
    assert z3[0] > z2[0] and off[1] > z2[1] + 0.5 and "CPU" in off[2]


# ---- memory ----------------------------------------------------------------------------------
def test_memory_state_bytes_and_zero_sharding():
    p32 = parse_precision("32-true", "highest", conv_tf32=False)
    pm = parse_precision("bf16-mixed", "highest", conv_tf32=False)
    assert sum(model_state_bytes(1e9, p32, "adamw", ZeroConfig(), 1)) == pytest.approx(16e9)
    assert sum(model_state_bytes(1e9, pm, "adamw", ZeroConfig(2), 1)) == pytest.approx(16e9)  # 2+2+12
    assert sum(model_state_bytes(1e9, pm, "adamw", ZeroConfig(3), 8)) == pytest.approx(2e9)
    assert model_state_bytes(1e9, pm, "adamw", ZeroConfig(2, offload_optimizer=True), 8)[2] == 0.0


def test_does_not_fit_reports_largest_batch():
    p = parse_precision("32-true", "highest", conv_tf32=False)
    fit = fit_memory(1e9, p, "adamw", ZeroConfig(), 1, activation_bytes=64 * 2**30, batch=64, capacity_gb=40)
    assert not fit.fits and fit.max_batch is not None and 0 < fit.max_batch < 64
    again = fit_memory(1e9, p, "adamw", ZeroConfig(), 1, activation_bytes=fit.max_batch * 2**30,
                       batch=fit.max_batch, capacity_gb=40)
    assert again.fits


# ---- cost, targets, advice -------------------------------------------------------------------
def test_cost_is_price_times_gpus_times_hours():
    h100 = lookup_hardware("H100-SXM5")
    cost = run_cost(h100, 8, 3600.0)
    listing = h100.price_for(8).price          # the 8-GPU listing the rule picks (fixture tests: test_prices_*)
    assert cost.total_usd == pytest.approx(8 * listing.usd_per_gpu_hour) and cost.price_date == listing.price_date
    assert cost.provider == listing.provider and cost.instance_gpus == listing.gpus_per_instance
    unlisted = dataclasses.replace(lookup_hardware("TPU v5p"), price_list=())   # a fixture: no listing
    assert run_cost(unlisted, 1, 3600).total_usd is None  # unlisted: no made-up price


def test_default_targets_resolve_and_unknown_names_list_closest():
    assert len(resolve_targets(None)) == len(DEFAULT_TARGETS)
    assert [t.count for t in resolve_targets(["8x H100 SXM5", "a100"])] == [8, 1]
    with pytest.raises(UnknownHardwareError, match="closest: .*H100"):
        resolve_targets(["H1000"])


def _row(name, total, usd, current=False, fits=True, error=0.2):
    return {"name": name, "label": name, "devices": 1, "total_s": total, "total_usd": usd, "current": current,
            "fits_memory": fits, "relative_error": error}


def test_recommendation_stay_fastest_cheapest():
    stay = recommend([_row("A", 100, 1.0, True), _row("B", 95, 1.2)])
    assert stay["text"].startswith("stay on A") and stay["stay"] and stay["fastest"] is None
    pick = recommend([_row("A", 100, 1.0, True), _row("B", 20, 3.0), _row("C", 50, 0.5), _row("D", 5, 9, fits=False)])
    assert "fastest B" in pick["text"] and "cheapest C" in pick["text"] and "D" not in pick["text"]
    assert (pick["fastest"], pick["cheapest"], pick["stay"]) == ("B", "C", False)


def test_memory_is_judged_in_gib_against_what_the_target_really_holds():
    """A "16 GB" T4 holds 16e9 bytes = 14.9 GiB; a job that needs 15.2 GiB (under 16 "GB") does not fit it (issue 26)."""
    from prenet_callbacks.projection.rows.memory import GIB, RESERVED_BYTES, capacity_bytes, usable_gib
    from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig as Zero

    assert capacity_bytes(16) / GIB == pytest.approx(14.90, abs=0.01)
    assert usable_gib(16) == pytest.approx(14.90 - RESERVED_BYTES / GIB, abs=0.01)
    p = parse_precision("32-true")
    need = 15.2 * GIB
    fit = fit_memory(0.0, p, "sgd", Zero(), 1, activation_bytes=(need - RESERVED_BYTES) / 1.10, batch=8,
                     capacity_gb=16)
    assert fit.total_bytes == pytest.approx(need - RESERVED_BYTES) and not fit.fits   # memory_gib vs usable_gib
    assert fit_memory(0.0, p, "sgd", Zero(), 1, activation_bytes=(need - RESERVED_BYTES) / 1.10, batch=8,
                      capacity_gb=24).fits
