"""The errors a catalog lookup or a catalog file raises (the messages are the user-facing text)."""
from __future__ import annotations

from pathlib import Path


class UnknownHardwareError(ValueError):
    """A name that resolves to no catalog entry; the message lists the closest known names."""

    def __init__(self, name: str, closest: list[str], hint: str = "") -> None:
        self.name = name
        self.closest = closest
        listed = f"; closest: {', '.join(closest)}" if closest else ""
        super().__init__(f"unknown hardware {name!r}{listed}{hint}")


class AmbiguousHardwareError(UnknownHardwareError):
    """A name that fits several catalog entries equally; the message lists them."""

    def __init__(self, name: str, fits: list[str]) -> None:
        ValueError.__init__(self, f"hardware {name!r} fits {len(fits)} catalog entries: {', '.join(fits)}; "
                                  "name one of them")
        self.name, self.closest = name, fits


class HardwareCatalogError(ValueError):
    """A catalog or override file is malformed. The message names the file, the entry and the field."""

    def __init__(self, path: str | Path, message: str, *, entry: str | None = None, field: str | None = None):
        self.path, self.entry, self.field = str(path), entry, field
        where = [str(path)]
        if entry:
            where.append(entry)
        if field:
            where.append(f"field {field!r}")
        super().__init__(": ".join(where) + ": " + message)
