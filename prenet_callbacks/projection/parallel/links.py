"""How the GPUs of one node talk: NVLink (with a switch or a bridge pair), AMD xGMI meshes, PCIe.

A `Link` gives the *bus bandwidth* a ring collective reaches over `n` ranks of one node (NCCL's
``busbw``: a ring all-reduce of S bytes takes ``alpha + 2 (n-1)/n x S / busbw``) and, on NVSwitch
systems with NVLink SHARP, the all-reduce *algorithm* bandwidth of the in-switch reduction (S / t),
which does not fall with `n`. NCCL uses whichever is faster.

Constants, from Vidur's NCCL all-reduce measurements (``../shared/data/vidur/data/profiling/network/
{a100,h100}_{dgx,pairwise_nvlink}/all_reduce.csv``, 1-64 MiB, least squares on
``t = alpha + 2(n-1)/n x S / busbw``), as shares of the one-way NVLink bandwidth:

- NVLink4 + NVSwitch (H100 SXM), n = 2 / 4 / 8: busbw 299 / 345 / 370 GB/s = 0.66 / 0.77 / 0.82 of
  450 GB/s; alpha 22-37 us.
- NVLink3 + NVSwitch (A100 SXM), n = 2 / 4 / 8: 171 / 186 / 186 GB/s = 0.57 / 0.62 / 0.62 of 300 GB/s;
  alpha 45-81 us.
- PCIe cards with pairwise NVLink bridges, n = 4 (rings cross PCIe): A100 24 GB/s (Gen4: 0.74 of
  32 GB/s one-way), H100 50 GB/s (Gen5: 0.78 of 64 GB/s).
- NVLink SHARP all-reduce (NVLink4/5 switches, NCCL >= 2.17 on NVSwitch systems): algorithm bandwidth
  0.53 of one-way NVLink, the GB200 NVL72 large-message plateau of the OpenXLA collective table (476 GB/s
  over 64 GPUs = 0.53 x 900); H100 8-GPU plateaus are 0.51 (OpenXLA, 230 GB/s) and 0.61 (NVIDIA/nccl-tests
  issue #309, 482 GB/s bus bandwidth). Vidur's runs did not use NVLS.
- AMD xGMI (MI300X/MI325X): a full mesh, 7 links x 64 GB/s each way per GPU of which ~48 GB/s are
  usable (AMD ROCm blog "Understanding RCCL Bandwidth and xGMI Performance on MI300X", 2025): a ring
  over n GPUs of the mesh uses n-1 links per GPU, busbw ~ (n-1) x 48 GB/s.
"""
from __future__ import annotations

from dataclasses import dataclass

_PCIE_EFFICIENCY = 0.75
_PCIE_ONE_WAY_GBS = {3: 15.75, 4: 31.5, 5: 63.0, 6: 126.0}
_NVLINK_TOTAL_GBS = {1: 160.0, 2: 300.0, 3: 600.0, 4: 900.0, 5: 1800.0}  # bidirectional per GPU
# Share of the one-way NVLink bandwidth NCCL's ring reaches as bus bandwidth, by ranks (see docstring).
_NVLINK_RING_EFFICIENCY = {3: ((2, 0.57), (4, 0.62)), 4: ((2, 0.66), (4, 0.77), (8, 0.82))}
_DEFAULT_NVLINK_EFFICIENCY = 0.7
NVLS_EFFICIENCY = 0.53           # NVLink SHARP all-reduce: algorithm bandwidth / one-way NVLink
XGMI_USABLE_SHARE = 0.75         # 48 of 64 GB/s per xGMI link
ALPHA_NVSWITCH_S = 30e-6         # per collective call (H100 fit 22-37 us)
ALPHA_OTHER_S = 60e-6            # A100 NVSwitch 45-81 us, PCIe rings similar


@dataclass(frozen=True)
class Link:
    """Ring bus bandwidth (B/s) of the ranks of one node, latency per call, and NVLS all-reduce bandwidth."""

    bus_bytes_per_s: float
    alpha_s: float
    kind: str                      # "nvlink" | "fabric" | "pcie"
    nvls_bytes_per_s: float = 0.0  # all-reduce algorithm bandwidth of NVLink SHARP; 0: none

    def all_reduce_algbw(self, ranks: int) -> float:
        """Bytes per second of an all-reduce over `ranks` (S / t, large messages): ring or NVLS."""
        if ranks <= 1:
            return float("inf")
        ring = self.bus_bytes_per_s / (2.0 * (ranks - 1) / ranks)
        return max(ring, self.nvls_bytes_per_s)

    def describe(self) -> str:
        text = f"{self.kind} ring ~{self.bus_bytes_per_s / 1e9:.0f} GB/s"
        return text + (" (NVLS all-reduce)" if self.nvls_bytes_per_s else "")


def pcie_gen(accelerator) -> int:
    gen = getattr(accelerator, "pcie_gen", None)
    if gen:
        return int(gen)
    text = (getattr(accelerator, "interconnect", "") or "").lower().replace(" ", "")
    for g in (6, 5, 4, 3):
        if f"gen{g}" in text:
            return g
    return 3


def _nvlink_gen(text: str) -> int | None:
    text = text.lower().replace(" ", "")
    for g in (5, 4, 3, 2, 1):
        if f"nvlink{g}" in text:
            return g
    return None


def _ring_efficiency(gen: int, ranks: int) -> float:
    table = _NVLINK_RING_EFFICIENCY.get(min(gen, 4)) if gen >= 3 else None
    if not table:
        return _DEFAULT_NVLINK_EFFICIENCY
    value = table[0][1]
    for at_least, efficiency in table:
        if ranks >= at_least:
            value = efficiency
    return value


def node_link(accelerator, count: int) -> Link:
    """The link `count` such GPUs of one node use (NVLink with a switch, a bridge pair, xGMI, or PCIe)."""
    text = accelerator.interconnect or ""
    lower = text.lower()
    bridge_pairs_only = "bridge" in lower and ("2 gpus" in lower or "pcie" in lower)
    if "optional" in lower:  # an optional bridge may not be there: assume PCIe
        lower = lower.replace("nvlink", "")
    gen = _nvlink_gen(text)
    total = accelerator.interconnect_bandwidth_gbs
    if gen is not None and total is None:
        total = _NVLINK_TOTAL_GBS.get(gen)
    nvlink = ("nvlink" in lower and "no nvlink" not in lower and "c2c" not in lower and total
              and (not bridge_pairs_only or count <= 2))
    if nvlink:
        one_way = total / 2 * 1e9
        switched = not bridge_pairs_only and (gen or 0) >= 4
        alpha = ALPHA_NVSWITCH_S if (gen or 0) >= 4 else ALPHA_OTHER_S
        return Link(one_way * _ring_efficiency(gen or 0, count), alpha, "nvlink",
                    one_way * NVLS_EFFICIENCY if switched and count > 2 else 0.0)
    if "infinity fabric" in lower or "xgmi" in lower or "ici" in lower:
        return _fabric_link(accelerator, count, total)
    one_way = _PCIE_ONE_WAY_GBS.get(pcie_gen(accelerator), 15.75)
    return Link(one_way * _PCIE_EFFICIENCY * 1e9, ALPHA_OTHER_S, "pcie")


def _fabric_link(accelerator, count: int, total_gbs: float | None) -> Link:
    """AMD xGMI: a full mesh of `peers` links per GPU (MI300X: 7); a ring over n GPUs uses n-1 of them."""
    peers = max((getattr(accelerator, "max_gpus_per_node", None) or 8) - 1, 1)
    if total_gbs:
        per_link = total_gbs / 2 / peers * XGMI_USABLE_SHARE
        links = min(max(count - 1, 1), peers)
        return Link(per_link * links * 1e9, ALPHA_OTHER_S, "xgmi mesh")
    # a fabric without a published per-GPU figure: PCIe-class rings, conservatively
    return Link(_PCIE_ONE_WAY_GBS[4] * _PCIE_EFFICIENCY * 1e9, ALPHA_OTHER_S, "fabric")


def host_link_bytes_per_s(accelerator) -> float:
    """Host-device copy bandwidth (one way) of the GPU's PCIe link."""
    return _PCIE_ONE_WAY_GBS.get(pcie_gen(accelerator), 15.75) * _PCIE_EFFICIENCY * 1e9
