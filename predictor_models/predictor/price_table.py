"""Prices remembered as arrays: a row per op key, a NumPy column per device (NaN where not priced yet).

Keys are hashed once per call (nested op keys are costly to hash), and a device's column is read and written with one
fancy index, not key by key. Used by `Predictor.remembering` (keys: op contents, devices: their figures) and by the
projection's `PriceMemo` (keys: object ids)."""
from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np


class PriceTable:
    """Seconds by (row, device column); rows and columns grow as new keys and devices come."""

    def __init__(self) -> None:
        self._row: dict = {}
        self._columns: dict = {}

    def rows(self, keys: Sequence[Hashable]) -> np.ndarray:
        """Each key's row, new keys given the next ones."""
        row = self._row
        return np.fromiter((row.setdefault(key, len(row)) for key in keys), dtype=np.int64, count=len(keys))

    def columns(self, device_keys: Sequence[Hashable]) -> list[np.ndarray]:
        """Each device's column, as long as the rows (grown with NaN); the caller writes prices into it in place."""
        size = len(self._row)
        out = []
        for key in device_keys:
            column = self._columns.get(key)
            if column is None or column.size < size:
                grown = np.full(max(size, 2 * (0 if column is None else column.size)), np.nan)
                if column is not None:
                    grown[:column.size] = column
                column = self._columns[key] = grown
            out.append(column)
        return out

    @staticmethod
    def gather(index: np.ndarray, columns: Sequence[np.ndarray]) -> np.ndarray:
        """``(len(index), len(columns))``: each column read at the rows ``index`` (NaN where not priced)."""
        out = np.empty((len(index), len(columns)))
        for j, column in enumerate(columns):
            out[:, j] = column[index]
        return out
