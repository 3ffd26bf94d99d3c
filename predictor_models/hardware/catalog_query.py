"""The catalog object: an immutable set of accelerators with forgiving name lookup, listing and targets."""
from __future__ import annotations

import re
from typing import Any, Iterator

from predictor_models.hardware.catalog_errors import AmbiguousHardwareError, UnknownHardwareError
from predictor_models.hardware.names import NameIndex
from predictor_models.hardware.spec import Accelerator, Target


class Catalog:
    """An immutable set of accelerators with forgiving name lookup."""

    def __init__(self, entries: list[Accelerator], defaults: dict[str, str], table_date: str | None,
                 files: tuple[str, ...]) -> None:
        self.entries: tuple[Accelerator, ...] = tuple(entries)
        self.defaults = dict(defaults)
        self.table_date = table_date
        self.files = files
        self._index = NameIndex(self.entries, self.defaults)

    def __iter__(self) -> Iterator[Accelerator]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def vendors(self) -> list[str]:
        return sorted({e.vendor for e in self.entries})

    def resolve(self, name: str, *, memory_hint_gb: float | None = None) -> Accelerator | None:
        """Forgiving lookup that returns None instead of raising."""
        return self._index.resolve(name, memory_hint_gb=memory_hint_gb)

    def lookup(self, name: str) -> Accelerator:
        """Forgiving lookup; raises `UnknownHardwareError` listing the closest names."""
        _check_name(name)
        if not name.strip():
            raise UnknownHardwareError(str(name), [], " (empty name; `prenet hardware` lists the catalog)")
        found = self._index.matches(name)
        if not found:
            if _TARGET.match(name):
                raise UnknownHardwareError(name, [], " (a node target such as '8x H100' is read by parse_target)")
            spelled = self._count_spelling(name)
            if spelled is not None:   # "H100x8", "H100 8x", "x8 H100": a GPU count written elsewhere than first
                count, target = spelled
                error = UnknownHardwareError(name, [], f"; for {count} GPUs write '{target}' (the count comes first)")
                error.closest = [target]
                raise error
            raise UnknownHardwareError(name, self._index.closest(name))
        if len(found) > 1:
            raise AmbiguousHardwareError(name, [e.name for e in found])
        return found[0]

    def _count_spelling(self, name: str) -> tuple[int, str] | None:
        """The count and multi-GPU spelling of a name that puts its count after the GPU or without the 'x'
        ('H100x8', 'H100 x 8', 'H100-8x', 'x8 H100', '8 H100', '8H100' -> 8, '8x H100-SXM5'), when the rest
        names one catalog entry."""
        for pattern in _MISPLACED_COUNTS:
            match = pattern.match(name)
            if match and int(match.group("n")) >= 1:
                found = self._index.matches(match.group("gpu").strip())
                if len(found) == 1:
                    return int(match.group("n")), f"{int(match.group('n'))}x {found[0].name}"
        return None

    def list(self, vendor: str | None = None, min_memory_gb: float | None = None,
             contains: str | None = None) -> list[Accelerator]:
        """Entries in catalog order, filtered by vendor, minimum memory and a name substring."""
        entries = list(self.entries)
        if vendor is not None:
            if not isinstance(vendor, str):
                raise ValueError(f"vendor must be a string such as {self.vendors[0]!r} or None, got {vendor!r} "
                                 f"({type(vendor).__name__}); known vendors: {', '.join(self.vendors)}")
            wanted = vendor.strip().lower()
            if wanted not in {v.lower() for v in self.vendors}:
                raise ValueError(f"unknown vendor {vendor!r}; known: {', '.join(self.vendors)}")
            entries = [e for e in entries if e.vendor.lower() == wanted]
        if min_memory_gb is not None:
            if isinstance(min_memory_gb, bool) or not isinstance(min_memory_gb, (int, float)):
                raise ValueError(f"min_memory_gb must be a number of GB such as 40, or None, got {min_memory_gb!r} "
                                 f"({type(min_memory_gb).__name__})")
            if not min_memory_gb >= 0:
                raise ValueError(f"min_memory_gb must be >= 0, got {min_memory_gb!r}")
            entries = [e for e in entries if e.memory_gb >= min_memory_gb]
        if contains is not None and not isinstance(contains, str):
            raise ValueError(f"contains must be a string such as 'h100', or None, got {contains!r} "
                             f"({type(contains).__name__})")
        if contains:
            needle = _squash(contains)
            entries = [e for e in entries if any(needle in _squash(t) for t in (e.name, *e.aliases))]
        return entries

    def parse_target(self, text: str) -> Target:
        """'8x H100', '8 x H100 SXM5', '8xH100' or 'H100' (count 1) -> Target."""
        _check_name(text, "hardware target")
        match = _TARGET.match(text)
        if match:
            count = int(match.group(1))
            if count < 1:
                raise ValueError(f"device count must be >= 1 in {text!r}")
            return Target(count, self.lookup(match.group(2)))
        return Target(1, self.lookup(text))


def _check_name(name: Any, what: str = "hardware name") -> None:
    """A name that is not a string is an unknown name (an `UnknownHardwareError`, so a ValueError)."""
    if not isinstance(name, str):
        raise UnknownHardwareError(str(name), [], f" (a {what} must be a string such as 'H100' or '8x A100', "
                                                  f"got {type(name).__name__}; `prenet hardware` lists the catalog)")


_TARGET = re.compile(r"^\s*([-+]?\d+)\s*[x×*]\s*(\S.*)$", re.IGNORECASE)
# counts in the wrong place: after the name ("H100x8", "H100 * 8", "H100-8x", "H100 8x"), or "x8 H100", "8 H100",
# "8H100"
_MISPLACED_COUNTS = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"^\s*(?P<gpu>\S.*?)\s*[-_ ]?\s*[x×*]\s*(?P<n>\d+)\s*$",
    r"^\s*(?P<gpu>\S.*?)\s*[-_ ]\s*(?P<n>\d+)\s*[x×*]\s*$",
    r"^\s*[x×*]\s*(?P<n>\d+)\s+(?P<gpu>\S.*)$",
    r"^\s*(?P<n>\d+)\s*(?P<gpu>[^\d\s].*)$",
))


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())

