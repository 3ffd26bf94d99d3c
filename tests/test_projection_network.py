"""Collectives inside a node and across nodes: NVLS, xGMI meshes, hierarchical all-reduce, ZeRO over nodes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from predictor_models.hardware import lookup_hardware
from prenet_callbacks.projection.parallel.fabric import target_fabric
from prenet_callbacks.projection.parallel.links import node_link
from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig, ddp_exposed_seconds, zero_comm_seconds
from prenet_callbacks.projection import project_report
from tests.projection_fixtures import ScaledBound, make_report

H100 = lookup_hardware("H100-SXM5")


def test_one_node_uses_nvls_where_the_switch_has_it():
    link = node_link(H100, 8)
    assert link.nvls_bytes_per_s > 0 and link.all_reduce_algbw(8) == pytest.approx(link.nvls_bytes_per_s)
    assert node_link(lookup_hardware("A100-SXM4-80GB"), 8).nvls_bytes_per_s == 0   # NVLink3: no NVLS


def test_mi300x_has_its_infinity_fabric_figure():
    link = node_link(lookup_hardware("MI300X"), 8)
    assert link.kind == "xgmi mesh" and 300e9 < link.bus_bytes_per_s < 350e9   # 7 links x ~48 GB/s usable
    assert node_link(lookup_hardware("MI300X"), 2).bus_bytes_per_s < link.bus_bytes_per_s


def test_nodes_are_slower_than_nvlink_and_the_network_figure_matters():
    one = target_fabric(H100, 1, 8)
    many = target_fabric(H100, 4, 8, 400)
    slow = target_fabric(H100, 4, 8, 100)
    size = 1e9
    assert one.seconds(size) < many.seconds(size) < slow.seconds(size)
    # ring across nodes: bus bandwidth ~ GPUs per node x per-GPU network x efficiency (8 x 50 GB/s x 0.92)
    assert many.bus_bandwidth() == pytest.approx(8 * 50e9 * 0.92, rel=0.01)
    assert "4 nodes" in many.describe()


def test_the_fit_point_is_reproduced_and_other_public_points_are_close():
    points = json.loads((Path(__file__).resolve().parents[1] / "benchmarks/data/nccl_tests_public.json").read_text())
    for p in points["points"]:
        fabric = target_fabric(lookup_hardware(p["gpu"]), p["nodes"], p["gpus_per_node"], p["network_gbps"])
        error = abs(fabric.bus_bandwidth() / 1e9 / p["busbw_gbs"] - 1)
        assert error < (0.01 if p.get("fit") else 0.2), p


def test_a_thousand_gpus_are_not_one_nvlink_node():
    report = make_report()
    rows = project_report(report, ["8x H100", "1000x H100"], predictor=ScaledBound())
    node, cluster = rows[1], rows[2]
    assert cluster["nodes"] == 125 and cluster["label"] == "125x8 H100-SXM5"
    assert cluster["comm_s"] > node["comm_s"] and "125 nodes" in cluster["communication"]
    assert any("read as 125 nodes of 8" in n for n in cluster["notes"])
    assert cluster["assumed"]["network_gbps_per_gpu"] == 400


def test_zero3_across_nodes_moves_more_time_than_within_one():
    zero = ZeroConfig(3)
    inside = zero_comm_seconds(zero, 8e9, 2, 2, target_fabric(H100, 1, 8), 1.0, 2.0, 25e9)
    across = zero_comm_seconds(zero, 8e9, 2, 2, target_fabric(H100, 4, 8, 400), 1.0, 2.0, 25e9)
    assert across[0] > inside[0] and "ZeRO-3" in across[2]
    fsdp = zero_comm_seconds(ZeroConfig.from_sharding("fsdp"), 8e9, 2, 2, target_fabric(H100, 4, 8, 400), 1.0, 2.0,
                             25e9)
    assert "FSDP" in fsdp[2]


def test_ddp_buckets_over_nodes_expose_more_than_inside_a_node():
    inside = ddp_exposed_seconds(4e9, target_fabric(H100, 1, 8), backward_s=0.2)
    across = ddp_exposed_seconds(4e9, target_fabric(H100, 8, 8, 100), backward_s=0.2)
    assert across[1] > inside[1] >= 0


def test_unknown_sharding_names_the_choices():
    with pytest.raises(ValueError, match="zero3"):
        ZeroConfig.from_sharding("zero4")
