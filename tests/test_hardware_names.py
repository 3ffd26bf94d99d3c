"""Name resolution: forgiving lookups, family defaults, closest-name errors, node targets."""
from __future__ import annotations

import pytest

from predictor_models.hardware import UnknownHardwareError, builtin_catalog, lookup_hardware, parse_target


@pytest.fixture(autouse=True)
def _no_user_override(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own $PRENET_HARDWARE must not change what these tests see."""
    monkeypatch.delenv("PRENET_HARDWARE", raising=False)


RESOLVE = [
    ("h100", "H100-SXM5"),
    ("H100", "H100-SXM5"),
    ("H100 80GB SXM5", "H100-SXM5"),
    ("NVIDIA H100 80GB HBM3", "H100-SXM5"),  # torch.cuda.get_device_name on an SXM5 H100
    ("NVIDIA H100 PCIe", "H100-PCIe"),
    ("H100 PCIe", "H100-PCIe"),
    ("NVIDIA H100 NVL", "H100-NVL"),
    ("H100 94GB", "H100-NVL"),
    ("NVIDIA H200", "H200-SXM"),
    ("a100", "A100-SXM4-80GB"),
    ("A100 80GB SXM4", "A100-SXM4-80GB"),
    ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
    ("A100 40GB", "A100-SXM4-40GB"),
    ("a100-pcie-40gb", "A100-PCIe-40GB"),
    ("Tesla V100-SXM2-16GB", "V100-SXM2-16GB"),
    ("V100 16GB", "V100-SXM2-16GB"),
    ("v100", "V100-SXM2-16GB"),
    ("Tesla V100-PCIE-32GB", "V100-PCIe-32GB"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("rtx4090", "RTX 4090"),
    ("4090", "RTX 4090"),
    ("NVIDIA GeForce RTX 2080 Ti", "RTX 2080 Ti"),
    ("GeForce GTX 1080 Ti", "GTX 1080 Ti"),
    ("NVIDIA TITAN Xp", "TITAN Xp"),
    ("NVIDIA RTX A6000", "RTX A6000"),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    ("Quadro RTX 6000", "Quadro RTX 6000"),
    ("AMD Instinct MI300X", "MI300X"),
    ("mi325x", "MI325X"),
    ("AMD Instinct MI250X/MI250", "MI250X-GCD"),
    ("MI250X", "MI250X"),
    ("l40s", "L40S"),
    ("a10g", "A10G"),
    ("NVIDIA A10", "A10"),
    ("Tesla T4", "T4"),
    ("Tesla K80", "K80"),
    ("Tesla P100-PCIE-16GB", "P100-PCIe-16GB"),
    ("gh200", "GH200-96GB"),
    ("NVIDIA GH200 480GB", "GH200-96GB"),
    ("b200", "B200"),
    ("B200 192GB SXM5", "B200"),             # a cloud's name for the catalog's 180 GB "sxm" B200: one entry fits
    ("NVIDIA B200 SXM6", "B200"),
    ("NVIDIA A10G", "A10G"),
    ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),   # the driver name of the PCIe 80 GB part
    ("TPU v5e", "TPU v5e"),
    ("tpu-v4", "TPU v4"),
]


@pytest.mark.parametrize("text, expected", RESOLVE)
def test_forgiving_names_resolve(text: str, expected: str) -> None:
    assert lookup_hardware(text).name == expected


def test_every_canonical_name_and_alias_resolves_to_itself() -> None:
    for entry in builtin_catalog():
        for text in (entry.name, *entry.aliases):
            assert lookup_hardware(text).name == entry.name, text


def test_defaults_name_existing_entries() -> None:
    names = {e.name for e in builtin_catalog()}
    assert set(builtin_catalog().defaults.values()) <= names


@pytest.mark.parametrize("text, first", [("h900", "H800"), ("A100 SXM5", "A100"), ("MI301X", "MI300X")])
def test_unknown_name_lists_closest(text: str, first: str) -> None:
    with pytest.raises(UnknownHardwareError) as info:
        lookup_hardware(text)
    message = str(info.value)
    assert message.startswith(f"unknown hardware {text!r}; closest: ")
    assert len(info.value.closest) == 3
    assert info.value.closest[0].startswith(first)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("text, spelled", [("H100x8", "8x H100-SXM5"), ("H100 x 8", "8x H100-SXM5"),
                                           ("h100*8", "8x H100-SXM5"), ("H100-8x", "8x H100-SXM5"),
                                           ("x8 H100", "8x H100-SXM5"), ("8 H100", "8x H100-SXM5"),
                                           ("8H100", "8x H100-SXM5"), ("A100 4x", "4x A100-SXM4-80GB"),
                                           ("MI300Xx8", "8x MI300X"), ("L4x2", "2x L4")])
def test_a_count_in_the_wrong_place_suggests_the_multi_gpu_spelling(text: str, spelled: str) -> None:
    """Issue 40: "H100x8" suggested only single GPUs; now the spelling that works, which the targets accept."""
    from prenet_callbacks.projection.targets import target_names

    with pytest.raises(UnknownHardwareError) as info:
        target_names([text])
    count = spelled.split("x")[0]
    assert str(info.value) == (f"targets: unknown hardware {text!r}; for {count} GPUs write {spelled!r} "
                               "(the count comes first)")
    assert info.value.closest == [spelled]
    assert target_names([spelled]) == [spelled]


def test_a_count_beside_an_unknown_name_still_lists_the_closest() -> None:
    with pytest.raises(UnknownHardwareError) as info:
        lookup_hardware("H1000x8")
    assert "closest: " in str(info.value) and len(info.value.closest) == 3


@pytest.mark.parametrize("text, fits", [("A100 PCIe", ["A100-PCIe-80GB", "A100-PCIe-40GB"]),
                                        ("Tesla V100-PCIE", ["V100-PCIe-32GB", "V100-PCIe-16GB"])])
def test_a_name_fitting_two_entries_is_an_error_listing_both(text: str, fits: list[str]) -> None:
    from predictor_models.hardware.catalog import AmbiguousHardwareError

    with pytest.raises(AmbiguousHardwareError) as info:
        lookup_hardware(text)
    assert str(info.value) == f"hardware {text!r} fits 2 catalog entries: {', '.join(fits)}; name one of them"
    assert info.value.closest == fits and isinstance(info.value, UnknownHardwareError)
    assert builtin_catalog().resolve(text).name == fits[0]     # a driver name with a memory hint still resolves


def test_empty_name_is_rejected() -> None:
    with pytest.raises(UnknownHardwareError, match="empty"):
        lookup_hardware("  ")


@pytest.mark.parametrize(
    "text, count, name",
    [("8x H100", 8, "H100-SXM5"), ("8 x H100 SXM5", 8, "H100-SXM5"), ("8xH100", 8, "H100-SXM5"),
     ("H100", 1, "H100-SXM5"), ("4× A100 40GB", 4, "A100-SXM4-40GB"), ("2x rtx4090", 2, "RTX 4090"),
     ("8x MI300X", 8, "MI300X")],
)
def test_parse_target(text: str, count: int, name: str) -> None:
    target = parse_target(text)
    assert (target.count, target.accelerator.name) == (count, name)


@pytest.mark.parametrize("text", ["0x H100", "-2x H100"])
def test_parse_target_rejects_count_below_one(text: str) -> None:
    with pytest.raises(ValueError, match="count must be >= 1"):
        parse_target(text)


def test_lookup_of_node_target_points_to_parse_target() -> None:
    with pytest.raises(UnknownHardwareError, match="parse_target"):
        lookup_hardware("8x H100")
