"""Target names: nodes x GPUs, flat counts larger than a node, networks, and the bad forms."""
from __future__ import annotations

import pytest

from predictor_models.hardware import UnknownHardwareError
from prenet_callbacks.projection.targets import parse_projection_target, resolve_targets


@pytest.mark.parametrize("text,nodes,per_node,label", [
    ("H100", 1, 1, "H100-SXM5"),
    ("8x H100", 1, 8, "8x H100-SXM5"),
    ("4x8 H100", 4, 8, "4x8 H100-SXM5"),
    ("4 x 8 x H100-SXM5", 4, 8, "4x8 H100-SXM5"),
    ("16x H100", 2, 8, "2x8 H100-SXM5"),
    ("12x H100", 2, 6, "2x6 H100-SXM5"),
    ("1000x H100", 125, 8, "125x8 H100-SXM5"),
    ("72x GB200", 1, 72, "72x GB200"),
])
def test_node_forms(text, nodes, per_node, label):
    target = parse_projection_target(text)
    assert (target.nodes, target.gpus_per_node, target.label) == (nodes, per_node, label)
    assert target.count == nodes * per_node


def test_flat_count_beyond_a_node_says_how_it_was_read():
    target = parse_projection_target("16x H100")
    assert target.note and "2 nodes of 8" in target.note and target.network_gbps == 400


def test_networks_by_figure_and_by_name():
    assert parse_projection_target("2x8 H100 @ 200G").network_gbps == 200
    assert parse_projection_target("2x8 H100 @ ib-hdr").network_gbps == 200
    assert parse_projection_target("2x8 H100 @ 200G").label == "2x8 H100-SXM5 @ 200G"
    assert parse_projection_target("2x8 RTX 4090 @ 100G").network_gbps == 100


@pytest.mark.parametrize("text,needles", [
    ("0x8 H100", ["0 x 8", "2x8 H100-SXM5"]),
    ("2x0 H100", ["2 x 0"]),
    ("2x16 H100", ["at most 8", "4x8 H100-SXM5"]),
    ("13x H100", ["13", "2x8 H100-SXM5"]),
    ("2x8 RTX 4090", ["no scale-out network", "@ 100G"]),
    ("16x RTX 4090", ["no scale-out network", "RTX 4090"]),
    ("9x H100", ["do not split", "2x8 H100-SXM5"]),
    ("2x8 H100 @ carrier-pigeon", ["unknown interconnect", "carrier-pigeon", "ib-ndr"]),
    ("H100 @ 200G", ["only applies across nodes"]),
    ("8x H100 @ 200G", ["only applies across nodes"]),
    ("0x H100", ["device count"]),
])
def test_bad_forms_name_the_value_and_the_fix(text, needles):
    with pytest.raises(ValueError) as info:
        parse_projection_target(text)
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))


def test_unknown_gpu_in_node_form_lists_closest_names():
    with pytest.raises(UnknownHardwareError, match="closest"):
        parse_projection_target("2x8 H1000")


def test_resolve_drops_duplicates_of_the_same_layout():
    targets = resolve_targets(["16x H100", "2x8 H100", "8x H100", "H100"])
    assert [t.label for t in targets] == ["2x8 H100-SXM5", "8x H100-SXM5", "H100-SXM5"]
