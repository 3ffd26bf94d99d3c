"""Forgiving hardware-name resolution.

A name is split into a *family* ("h100", "a100", "4090", "mi300x"), a memory size ("80GB") and
form-factor tags ("sxm5", "pcie", "nvl", "hbm3", "gcd"). Vendor words ("NVIDIA", "Tesla", "GeForce",
"AMD Instinct") and case, spaces, hyphens and underscores do not matter. A name resolves to the entry
of that family whose memory and tags match; when several match, the family's documented default
wins, then SXM/OAM before PCIe. Entries that only the memory size tells apart ("A100 PCIe": 40 GB or
80 GB) are ambiguous: `Catalog.lookup` raises an error listing them (`resolve`, for drivers' names
with a memory hint, takes the larger).
"""
from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from predictor_models.hardware.spec import Accelerator

# Words that name a vendor or product line but never distinguish two catalog entries.
_NOISE = {
    "nvidia", "amd", "google", "tesla", "geforce", "quadro", "instinct", "radeon", "cloud", "graphics",
    "gpu", "gpus", "accelerator", "card", "generation", "gen", "tensor", "core", "per", "chip", "die",
    "package", "superchip", "the", "module", "board", "datacenter",
}
# Form-factor / memory-technology tokens: they select a variant inside a family.
_TAGS = {
    "sxm", "sxm2", "sxm3", "sxm4", "sxm5", "sxm6", "pcie", "nvl", "oam", "gcd", "hbm2", "hbm2e", "hbm3", "hbm3e",
}
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)(gb|gib|g)$")
_FORM_RANK = {"sxm": 0, "oam": 0, "superchip": 1, "pcie": 2}


@dataclass(frozen=True)
class ParsedName:
    family: str
    memory_gb: float | None
    tags: frozenset[str]


def tokens(text: str) -> list[str]:
    """Lower-case word tokens; 'PCI-E'/'PCI Express' become 'pcie', '80 GB' becomes '80gb'."""
    text = text.lower()
    text = re.sub(r"pci[\s_-]*e(xpress)?\b", "pcie", text)
    text = re.sub(r"(\d)\s+(gb|gib)\b", r"\1\2", text)
    text = re.sub(r"\b(rtx|gtx)(?=\d|a\d)", r"\1 ", text)  # "RTX4090" as clouds write it
    return [t for t in re.split(r"[^a-z0-9.]+", text) if t and t != "."]


@functools.lru_cache(maxsize=4096)   # a catalog is indexed twice as it is built (prices attached), names repeat
def parse_name(text: str) -> ParsedName:
    """Split a hardware name into family, memory size and form-factor tags (immutable, so shared)."""
    family: list[str] = []
    memory: float | None = None
    tags: set[str] = set()
    for token in tokens(text):
        if token in _NOISE:
            continue
        match = _MEMORY.match(token)
        if match and family:  # a leading "80gb" is not a memory size of anything yet
            memory = float(match.group(1))
        elif token in _TAGS:
            tags.add(token)
        else:
            family.append(token)
    # "RTX 4090", "GTX 1080 Ti", "RTX A6000": the series prefix is optional, "TITAN RTX" keeps it.
    if len(family) > 1 and family[0] in ("rtx", "gtx"):
        family = family[1:]
    return ParsedName("".join(family), memory, frozenset(tags))


def normal_key(text: str) -> str:
    """Whole-name key: case, spaces, hyphens and vendor words removed ("NVIDIA A100-SXM4-80GB" -> "a100sxm480gb")."""
    parsed = parse_name(text)
    memory = "" if parsed.memory_gb is None else f"{parsed.memory_gb:g}gb"
    return parsed.family + "".join(sorted(parsed.tags)) + memory


def _entry_tags(entry: Accelerator) -> set[str]:
    tags = set(parse_name(entry.name).tags)
    for text in (entry.form_factor or "", entry.memory_type or ""):
        tags |= {t for t in tokens(text) if t in _TAGS}
    form = (entry.form_factor or "").lower()
    if form.startswith("pcie"):
        tags.add("pcie")
    if any(t.startswith("sxm") for t in tags):
        tags.add("sxm")
    return tags


def _form_rank(entry: Accelerator) -> int:
    form = (entry.form_factor or "").lower()
    for prefix, rank in _FORM_RANK.items():
        if form.startswith(prefix):
            return rank
    return 3


class NameIndex:
    """Resolves user-typed names to catalog entries (built once per catalog)."""

    def __init__(self, entries: Sequence[Accelerator], defaults: dict[str, str] | None = None) -> None:
        self._entries = list(entries)
        self._by_key: dict[str, Accelerator] = {}
        self._families: dict[str, list[Accelerator]] = {}
        self._tags = {e.name: _entry_tags(e) for e in entries}
        for entry in entries:
            for text in (entry.name, *entry.aliases):
                self._by_key.setdefault(normal_key(text), entry)
                self._by_key.setdefault(text.lower().strip(), entry)
            self._families.setdefault(parse_name(entry.name).family, []).append(entry)
            for alias in entry.aliases:
                family = parse_name(alias).family
                if entry not in self._families.setdefault(family, []):
                    self._families[family].append(entry)
        self._defaults = {parse_name(k).family: v for k, v in (defaults or {}).items()}

    def resolve(self, name: str, *, memory_hint_gb: float | None = None) -> Accelerator | None:
        """Best entry for `name`, or None. `memory_hint_gb` (e.g. from the driver) breaks ties; where
        several entries fit equally (see `matches`) the larger memory wins."""
        found = self.matches(name, memory_hint_gb=memory_hint_gb)
        return found[0] if found else None

    def matches(self, name: str, *, memory_hint_gb: float | None = None) -> list[Accelerator]:
        """The entries `name` fits best: one, or several that only the memory size would tell apart
        ("A100 PCIe": 40 GB and 80 GB), larger memory first; empty when nothing fits.

        Order of preference: an exact name or alias; the family's entries whose memory (5%) and
        tags match, the family default first, then fewest unrequested tags, then SXM/OAM before
        PCIe. A vendor's or cloud's product string whose memory or SXM generation the catalog words
        differently ("B200 192GB SXM5" for the 180 GB "sxm" B200) fits when exactly one entry of the
        family is within 12% of its memory and has its form factor."""
        text = name.strip()
        exact = self._by_key.get(text.lower()) or self._by_key.get(normal_key(text))
        # A driver name can match a whole package exactly ("AMD Instinct MI250X") while the device
        # is one GCD of it: the reported memory then decides between the family's variants.
        if exact is not None and (memory_hint_gb is None or _close(exact.memory_gb, memory_hint_gb, 0.12)):
            return [exact]
        parsed = parse_name(text)
        family = list(self._families.get(parsed.family, ()))
        candidates = [e for e in family if self._fits(e, parsed, 0.05)]
        if memory_hint_gb is not None and parsed.memory_gb is None:
            near = [e for e in candidates if _close(e.memory_gb, memory_hint_gb, 0.12)]
            candidates = near or candidates
        if not candidates:
            loose = [e for e in family if self._fits(e, parsed, 0.12, loose_tags=True)]
            if len(loose) == 1 or (loose and exact is None):
                return sorted(loose, key=lambda e: -e.memory_gb)
            return [exact] if exact is not None else []
        if exact is not None and exact in candidates:
            return [exact]
        default = self._defaults.get(parsed.family)
        # Fewer unrequested tags first: "H100 PCIe" prefers H100-PCIe over the PCIe-card H100-NVL.
        rank = {e.name: (e.name != default, len(parse_name(e.name).tags - parsed.tags), _form_rank(e))
                for e in candidates}
        best = min(rank.values())
        return sorted((e for e in candidates if rank[e.name] == best), key=lambda e: (-e.memory_gb, e.name))

    def _fits(self, entry: Accelerator, parsed: ParsedName, tolerance: float, *, loose_tags: bool = False) -> bool:
        """Memory within ``tolerance`` (when the name gives one) and every tag of the name on the entry
        (``loose_tags``: an SXM generation also fits an entry that names no generation)."""
        if parsed.memory_gb is not None and not _close(entry.memory_gb, parsed.memory_gb, tolerance):
            return False
        tags = self._tags[entry.name]
        if loose_tags and "sxm" in tags and not any(t[3:].isdigit() for t in tags if t.startswith("sxm")):
            tags = tags | {t for t in parsed.tags if t.startswith("sxm")}
        return parsed.tags <= tags

    def closest(self, name: str, n: int = 3) -> list[str]:
        """Up to `n` catalog names that look most like `name` (for error messages)."""
        parsed = parse_name(name)
        query = normal_key(name)
        scored: dict[str, float] = {}
        for entry in self._entries:
            keys = [normal_key(t) for t in (entry.name, *entry.aliases)]
            score = max(difflib.SequenceMatcher(None, query, k).ratio() for k in keys)
            family = parse_name(entry.name).family
            if parsed.family and family == parsed.family:
                score += 1.0  # same family, wrong memory/form factor: list its variants first
            elif parsed.family and (family.startswith(parsed.family) or parsed.family.startswith(family)):
                score += 0.3
            scored[entry.name] = score
        return sorted(scored, key=lambda k: (-scored[k], k))[:n]

    def families(self) -> Iterable[str]:
        return self._families.keys()


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance * max(a, b)
