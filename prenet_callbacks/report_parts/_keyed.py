"""What every typed report part shares: JSON keys are the dataclass's field names, in field order.

A part read from a report remembers which of its keys the report left out (older ``/2`` files, hand-made
reports) and which keys it does not know (a newer writer's), so that writing it back gives the same
object: ``to_dict(from_dict(d)) == d``. Parts built by the writers have no absent and no extra keys.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, TypeVar

P = TypeVar("P", bound="KeyedPart")
# bookkeeping fields of every part: never JSON keys
_BOOKKEEPING = ("absent", "extra")


class KeyedPart:
    """Mixin for a frozen dataclass whose data fields are exactly its JSON keys.

    Subclasses declare ``absent: frozenset[str]`` and ``extra: dict`` as their last fields and may
    override `_out` / `_in` for the fields whose JSON form differs (tuples written as lists...).
    """

    absent: frozenset[str]
    extra: dict[str, Any]

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The JSON keys, in the order the report writes them."""
        return _keys_of(cls)

    def to_dict(self) -> dict[str, Any]:
        """The part as the report writes it (fresh containers: editing the dict leaves the part alone)."""
        data = {key: self._out(key, getattr(self, key)) for key in self.keys() if key not in self.absent}
        data.update({k: v for k, v in self.extra.items() if k not in data})
        return data

    @classmethod
    def from_dict(cls: type[P], data: dict[str, Any]) -> P:
        """The part from a report's dict; missing keys take their defaults and are left out again by `to_dict`."""
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}.from_dict needs a JSON object, got {type(data).__name__}")
        keys, known = cls.keys(), _key_set(cls)
        values = {key: cls._in(key, data[key]) for key in keys if key in data}
        return cls(**values, absent=frozenset(k for k in keys if k not in data),  # type: ignore[call-arg]
                   extra={k: v for k, v in data.items() if k not in known})

    @classmethod
    def partial(cls: type[P], **values: Any) -> P:
        """A part that holds only ``values`` (the keys a writer updates now); a misspelt key is a TypeError."""
        return cls(**values, absent=frozenset(k for k in cls.keys() if k not in values))  # type: ignore[call-arg]

    # -- per-field JSON forms (identity unless a part says otherwise) --------------------------------
    @classmethod
    def _in(cls, key: str, value: Any) -> Any:
        return value

    def _out(self, key: str, value: Any) -> Any:
        if isinstance(value, tuple):
            return list(value)
        if isinstance(value, dict):
            return dict(value)
        return value


# A part's keys, read once per class (`dataclasses.fields` walks every field; a projection reads forty rows back)
@functools.cache
def _keys_of(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in _BOOKKEEPING)


@functools.cache
def _key_set(cls: type) -> frozenset[str]:
    return frozenset(_keys_of(cls))
