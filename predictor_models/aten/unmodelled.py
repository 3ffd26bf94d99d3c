"""The account of calls the cost model could not describe, so that a 0-FLOP guess is never silent."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class UnmodelledCalls:
    """Calls whose shapes their class's cost formula did not foresee, counted per op name.

    `costs.op_spec_from_call` adds to it; whoever reports on the run turns it into one sentence
    (`note`). ``reasons`` keeps the first error seen per op name, to show what did not fit.
    """

    counts: Counter = field(default_factory=Counter)
    reasons: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, reason: str) -> None:
        self.counts[name] += 1
        self.reasons.setdefault(name, reason)

    def __len__(self) -> int:
        return sum(self.counts.values())

    def note(self, what: str = "distinct calls") -> str | None:
        """One sentence for a report's limitations (None when every call was described)."""
        if not self.counts:
            return None
        ops = "; ".join(f"{name} x{count} ({self.reasons[name]})"
                        for name, count in sorted(self.counts.items()))
        return (f"{len(self)} {what} had shapes the cost model does not describe: {ops}; they are "
                "unmodelled: their FLOPs and shape features count as 0, so the predictor prices "
                "them from the bytes they move alone")
