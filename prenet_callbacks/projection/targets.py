"""Which hardware to project onto: the documented default set, or the user's names.

A target is one GPU (``"H100"``), one node of several (``"8x H100"``) or several nodes
(``"4x8 H100"``: 4 nodes of 8 GPUs, talking over each node's scale-out network). A flat ``"16x H100"``
larger than the biggest node of that GPU (`Accelerator.max_gpus_per_node`) is read as whole nodes
(``2x8``) and the row says so. ``"2x8 H100 @ 200G"`` names the network per GPU (Gb/s each way, or an
InfiniBand generation such as ``ib-hdr``) where the node differs from the catalog's reference node.
A layout may follow the hardware (``"4x8 H100 tp=8 pp=4"``, ``"8x H100 tp=8 sp"``): tensor, pipeline and data
parallel degrees, micro-batches and the schedule (`model_layout.py`).

The default set is a handful of popular cloud GPUs and nodes, cheap to top end, each with a
listed on-demand price in the catalog; the current device is always added as the first row.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Sequence

from predictor_models.hardware import Target, UnknownHardwareError, lookup_hardware

from prenet_callbacks.projection.parallel.model_layout import ModelLayout, parse_layout, split_layout

DEFAULT_TARGETS: tuple[str, ...] = (
    "T4",                  # cheapest common cloud GPU (16 GB)
    "L4",                  # current low-end inference/training GPU (24 GB)
    "A10G",                # AWS g5 (24 GB)
    "A100-SXM4-80GB",      # the workhorse
    "H100-SXM5",           # current top end
    "8x A100-SXM4-80GB",   # a full A100 node (NVLink3 + NVSwitch)
    "8x H100-SXM5",        # a full H100 node (NVLink4 + NVSwitch)
)
# Nodes of a GPU the catalog gives no node size for: the common 8-GPU server.
DEFAULT_NODE_GPUS = 8
# Per-GPU scale-out network by name, Gb/s each way (InfiniBand data rates of a 4x port).
NETWORKS_GBPS = {"ib-edr": 100.0, "ib-hdr": 200.0, "ib-ndr": 400.0, "ib-xdr": 800.0}

_NODES = re.compile(r"^\s*(\d+)\s*[x×*]\s*(\d+)\s*(?:[x×*]\s*|\s+)(\S.*)$", re.IGNORECASE)
_FLAT = re.compile(r"^\s*([-+]?\d+)\s*[x×*]\s*(\S.*)$", re.IGNORECASE)
_NETWORK = re.compile(r"^(\d+(?:\.\d+)?)\s*g(?:b(?:ps|/s|it/s)?)?$", re.IGNORECASE)


@dataclass(frozen=True)
class ProjectionTarget:
    """`nodes` nodes of `gpus_per_node` accelerators, data-parallel unless `layout` splits the model;
    `network_gbps` per GPU between nodes."""

    accelerator: object
    nodes: int = 1
    gpus_per_node: int = 1
    network_gbps: float | None = None
    note: str | None = None          # how a flat count was read, e.g. "16x read as 2 nodes of 8"
    layout: ModelLayout | None = None   # tensor / pipeline parallel layout (None: every GPU a replica)

    @property
    def count(self) -> int:
        """All GPUs of the target (the data-parallel world size unless `layout` splits the model)."""
        return self.nodes * self.gpus_per_node

    @property
    def label(self) -> str:
        name = self.accelerator.name
        if self.nodes > 1:
            text = f"{self.nodes}x{self.gpus_per_node} {name}"
        else:
            text = f"{self.gpus_per_node}x {name}" if self.gpus_per_node > 1 else name
        explicit = self.network_gbps is not None and self.network_gbps != self.accelerator.network_gbps_per_gpu
        text += f" @ {self.network_gbps:g}G" if explicit and self.nodes > 1 else ""
        return f"{text} {self.layout.text()}" if self.layout is not None else text

    def __str__(self) -> str:
        return self.label


def max_node_gpus(accelerator) -> int:
    """GPUs in the largest common node of this accelerator (catalog figure, else 8)."""
    return int(getattr(accelerator, "max_gpus_per_node", None) or DEFAULT_NODE_GPUS)


def parse_projection_target(text: str) -> ProjectionTarget:
    """'H100', '8x H100', '4x8 H100', '16x H100' (= 2x8), '2x8 H100 @ 200G', '4x8 H100 tp=8 pp=4' ->
    `ProjectionTarget`.

    Raises `UnknownHardwareError` for unknown names and ValueError for counts, networks or layouts that make
    no sense, each naming the value and the form to use.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"targets must be hardware names such as 'H100', '8x H100' or '4x8 H100', got {text!r}")
    hardware, tokens = split_layout(text)
    target = _hardware_target(hardware, text)
    layout = parse_layout(tokens, target.count, text)
    if layout is None:
        return target
    if not layout.model_parallel:
        if layout.microbatches or layout.global_batch:
            raise ValueError(f"{text!r}: microbatches= and global_batch= go with tp= or pp=; for data parallelism "
                             "alone use accumulation (estimate(accumulate=N), --accumulate N)")
        return target   # dp alone: every GPU a replica, as without a layout
    return replace(target, layout=layout)


def _hardware_target(hardware: str, text: str) -> ProjectionTarget:
    """The hardware part of a target name (no layout words) -> `ProjectionTarget`."""
    if not hardware.strip():
        raise ValueError(f"{text!r} names no hardware; write e.g. '8x H100 tp=8'")
    body, _, network_text = hardware.partition("@")
    network = _parse_network(network_text, text) if network_text.strip() else None
    match = _NODES.match(body)
    if match:
        nodes, per_node, name = int(match.group(1)), int(match.group(2)), match.group(3).strip()
        acc = lookup_hardware(name)
        return _node_target(acc, nodes, per_node, network, text)
    match = _FLAT.match(body)
    if match:
        count, name = int(match.group(1)), match.group(2).strip()
        acc = lookup_hardware(name)
        if count < 1:
            raise ValueError(f"device count must be >= 1 in {text!r}; write e.g. '8x {acc.name}'")
        return _flat_target(acc, count, network, text)
    acc = lookup_hardware(body.strip())
    if network is not None:
        raise ValueError(f"a network ('@ ...') only applies across nodes, got {text!r}; write e.g. "
                         f"'2x{max_node_gpus(acc)} {acc.name} @ {network:g}G'")
    return ProjectionTarget(acc, 1, 1)


def _parse_network(raw: str, text: str) -> float:
    key = raw.strip().lower()
    if key in NETWORKS_GBPS:
        return NETWORKS_GBPS[key]
    match = _NETWORK.match(key)
    if match and float(match.group(1)) > 0:
        return float(match.group(1))
    known = ", ".join(NETWORKS_GBPS)
    raise ValueError(f"unknown interconnect {raw.strip()!r} in {text!r}; give the network per GPU in Gb/s "
                     f"(e.g. '@ 200G') or one of {known}")


def _node_target(acc, nodes: int, per_node: int, network: float | None, text: str) -> ProjectionTarget:
    largest = max_node_gpus(acc)
    if nodes < 1 or per_node < 1:
        raise ValueError(f"{text!r}: nodes and GPUs per node must be >= 1 (got {nodes} x {per_node}); write "
                         f"e.g. '2x{largest} {acc.name}' for 2 nodes of {largest}")
    if per_node > largest:
        nodes_needed = -(-nodes * per_node // largest)
        raise ValueError(f"{text!r}: {acc.name} nodes hold at most {largest} GPUs, not {per_node}; write e.g. "
                         f"'{nodes_needed}x{largest} {acc.name}'")
    return _checked_network(ProjectionTarget(acc, nodes, per_node, network), text)


def _flat_target(acc, count: int, network: float | None, text: str) -> ProjectionTarget:
    largest = max_node_gpus(acc)
    if count <= largest:
        if network is not None:
            raise ValueError(f"a network ('@ ...') only applies across nodes, got {text!r} ({count} GPUs fit one "
                             f"{acc.name} node); write e.g. '2x{largest} {acc.name} @ {network:g}G'")
        return ProjectionTarget(acc, 1, count)
    # whole nodes, each at least half full: 16 -> 2x8, 12 -> 2x6; 13 (13 nodes of 1) is refused
    nodes = next((n for n in range(2, count + 1) if count % n == 0 and count // n <= largest), None)
    if nodes is None or 2 * (count // nodes) < largest:
        raise ValueError(f"{text!r}: {count} {acc.name} do not split into equal nodes of at most {largest}; "
                         f"write the node form, e.g. '{-(-count // largest)}x{largest} {acc.name}'")
    per_node = count // nodes
    note = f"{count}x read as {nodes} nodes of {per_node} (the largest {acc.name} node holds {largest})"
    return _checked_network(ProjectionTarget(acc, nodes, per_node, network, note), text)


def _checked_network(target: ProjectionTarget, text: str) -> ProjectionTarget:
    """Multi-node targets need a network figure: the catalog's, or one given with '@'."""
    acc = target.accelerator
    if target.nodes == 1:
        return target
    gbps = target.network_gbps or getattr(acc, "network_gbps_per_gpu", None)
    if not gbps:
        raise ValueError(f"{text!r}: the catalog knows no scale-out network for {acc.name} nodes; name one per GPU, "
                         f"e.g. '{target.nodes}x{target.gpus_per_node} {acc.name} @ 100G', or add "
                         "network_gbps_per_gpu to a PRENET_HARDWARE override file")
    return ProjectionTarget(acc, target.nodes, target.gpus_per_node, float(gbps), target.note)


def target_names(value: Any, name: str = "targets") -> list[str] | None:
    """What a user typed as targets, checked: None, one string, or a list of strings; a string may hold
    several names separated by commas ("A100, 4x H100"); "default" stands for `DEFAULT_TARGETS` and "none"
    alone for no targets. Every name is parsed now (`parse_projection_target`),
    so an unknown GPU, a count that splits into no nodes or a network that makes no sense fails here, at
    construction or before any work, with the closest names or the form to write. The one parser of every
    entry point: the callbacks, `Tracker`, `estimate()` and the CLI."""
    parsed = _parsed_names(value, name)
    return None if parsed is None else [text for text, _ in parsed]


def _parsed_names(value: Any, name: str) -> list[tuple[str, ProjectionTarget]] | None:
    """`target_names`' names, each with its parsed target (parsed once: a projection resolves its targets anew)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list of hardware names such as ['A100', '8x H100'], got "
                         f"{type(value).__name__}")
    names: list[str] = []
    for item in value:
        parts = item.split(",") if isinstance(item, str) else [item]
        for part in parts:
            if not isinstance(part, str) or not part.strip():
                raise ValueError(f"{name} entries must be non-empty strings such as 'H100', '8x H100' or "
                                 f"'4x8 H100', got {part!r}")
            names.extend(DEFAULT_TARGETS if part.strip().lower() == "default" else [part.strip()])
    if [n.lower() for n in names] == ["none"]:
        return []
    parsed = []
    for text in names:
        try:
            parsed.append((text, parse_projection_target(text)))
        except UnknownHardwareError as error:   # keep the type (callers catch it), name the argument
            error.args = (f"{name}: {error.args[0]}",)
            raise
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
    return parsed


def resolve_targets(names: Sequence[str] | None) -> list[ProjectionTarget]:
    """Targets for `names` (None: `DEFAULT_TARGETS`), checked by `target_names`. Unknown names raise
    `UnknownHardwareError` (a ValueError) whose message lists the closest catalog names; bad counts and
    networks raise ValueError; duplicates are dropped."""
    parsed = _parsed_names(DEFAULT_TARGETS if names is None else names, "targets")
    out: list[ProjectionTarget] = []
    seen: set[tuple] = set()
    for _, target in parsed or ():
        key = (target.nodes, target.gpus_per_node, target.accelerator.name, target.network_gbps, target.layout)
        if key not in seen:
            seen.add(key)
            out.append(target)
    return out


def as_projection_target(target) -> ProjectionTarget:
    """A `ProjectionTarget` from one, from a catalog `Target` (one node of `count`) or from a name."""
    if isinstance(target, ProjectionTarget):
        return target
    if isinstance(target, Target):
        return _flat_target(target.accelerator, target.count, None, target.label)
    return parse_projection_target(str(target))


__all__ = ["DEFAULT_TARGETS", "NETWORKS_GBPS", "ProjectionTarget", "Target", "UnknownHardwareError",
           "as_projection_target", "max_node_gpus", "parse_projection_target", "resolve_targets"]
