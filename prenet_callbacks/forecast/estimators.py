"""Bounded-memory estimators of repeated durations (step times, validation runs, saves)."""
from __future__ import annotations

import math
import statistics
from collections import deque
from typing import Any


class RobustDuration:
    """Mean of recent samples with outliers clipped at ``clip`` times the median.

    A total is a sum, so the estimate must be a mean (a median under-counts the slow steps that do
    recur: data stalls, garbage collection); clipping keeps one freak sample (a checkpoint flush,
    the OS) from dominating. Memory is bounded: only the last ``window`` samples are kept, plus
    running totals of everything seen.
    """

    def __init__(self, window: int = 256, clip: float = 3.0) -> None:
        self.window = window
        self.clip = clip
        self._recent: deque[float] = deque(maxlen=window)
        self.count = 0
        self.total = 0.0

    def add(self, seconds: float) -> None:
        if not math.isfinite(seconds) or seconds < 0:
            return
        self._recent.append(seconds)
        self.count += 1
        self.total += seconds

    def __len__(self) -> int:
        return self.count

    def clear(self) -> None:
        """Forget every sample (they stood in for a better measurement that has now arrived)."""
        self._recent.clear()
        self.count = 0
        self.total = 0.0

    @property
    def recent(self) -> tuple[float, ...]:
        """The samples kept (the latest ``window``)."""
        return tuple(self._recent)

    def quantile(self, q: float) -> float | None:
        """The ``q`` quantile of the recent samples (nearest rank; None before any sample)."""
        if not self._recent:
            return None
        ordered = sorted(self._recent)
        return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]

    @property
    def median(self) -> float | None:
        return statistics.median(self._recent) if self._recent else None

    @property
    def mean(self) -> float | None:
        """Clipped mean of the recent window (``None`` before any sample)."""
        if not self._recent:
            return None
        cap = self.clip * statistics.median(self._recent)
        return sum(min(x, cap) for x in self._recent) / len(self._recent)

    @property
    def relative_stderr(self) -> float:
        """Standard error of the mean, relative to it (1.0 when unknown)."""
        n = len(self._recent)
        mean = self.mean
        if n < 2 or not mean:
            return 1.0
        average = sum(self._recent) / n   # plain floats: statistics.stdev's exact fractions cost ~0.4 ms here
        spread = math.sqrt(sum((x - average) ** 2 for x in self._recent) / (n - 1))
        return spread / mean / math.sqrt(n)

    def state_dict(self) -> dict[str, Any]:
        return {"recent": list(self._recent), "count": self.count, "total": self.total}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._recent = deque((float(x) for x in state.get("recent", [])), maxlen=self.window)
        self.count = int(state.get("count", len(self._recent)))
        self.total = float(state.get("total", sum(self._recent)))
