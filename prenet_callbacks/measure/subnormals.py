"""Subnormal floats in the optimizer's state: a CPU slowdown that the first steps cannot show, named in a note.

An entry whose gradient is exactly zero (a dead ReLU unit, an unused embedding row) keeps a moment
buffer that only decays: Adam's first moment by ``beta1`` a step, SGD's momentum by ``momentum``. After
``log(tiny / |m|) / log(beta)`` steps it enters the subnormal range (below 1.2e-38 in fp32), and there
rounding stalls it: ``m - 0.1 m`` rounds back to ``m`` a few units above zero, so it stays subnormal for
the rest of the run. An x86 CPU computes every operation on a subnormal through a slow assist unless
flush-to-zero is on (``torch.set_flush_denormal(True)``); on a GPU it costs nothing. On this project's MLP
benchmarks (AdamW, ReLU) 20-38% of ``exp_avg`` went subnormal 600-800 steps in and every later step took
1.6x as long; no step before that shows it.

`SubnormalWatch` samples the moment buffers (a few thousand entries each) one step before the first
prediction and at it; the entries that decayed by exactly ``beta`` in between are dead, and each one's
crossing step follows from its magnitude. What that will cost cannot be checked on the run when the
prediction is made, so it is a note (`SubnormalNote`), not a forecast: the prediction follows the
measured steps, and its refinements see the slowdown when it comes. The watch reads the optimizer's
state and changes nothing (no probe steps, no flush setting); it samples once a fit, off the hot path.
"""
from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import torch

# Each moment buffer that decays geometrically under a zero gradient, and the group key of its factor.
_DECAYING = {"exp_avg": lambda group: group["betas"][0],
             "exp_avg_sq": lambda group: group["betas"][1],
             "momentum_buffer": lambda group: group.get("momentum") or 0.0}
_SAMPLE = 1 << 12          # entries sampled per buffer (evenly strided): the counts scale up by the stride
_DECAY_TOLERANCE = 3e-7    # relative: one step of pure decay as rounded by lerp/mul (measured <= 1.1e-7)
# A note is worth its words from this share of the sampled entries dying before the run ends.
_NOTE_SHARE = 0.01


def flushes_subnormals() -> bool:
    """Whether this CPU thread flushes subnormal results to zero (``torch.set_flush_denormal(True)``)."""
    tiny = torch.finfo(torch.float32).tiny
    return float(torch.tensor([tiny], dtype=torch.float32).mul(0.5).item()) == 0.0


@dataclass
class SubnormalNote:
    """Dead moment entries that will turn subnormal: how many, of how many, and from which optimizer step."""

    at_step: int
    dead_entries: float
    entries: float
    crossing_steps: list[float]   # of the sampled dead entries, ascending
    stride_weight: list[float]    # entries each sampled one stands for
    buffers: list[str]
    _cumulative: list[float] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # every prediction asks for one end step: a bisection, not a pass over thousands of samples
        self._cumulative = list(itertools.accumulate(self.stride_weight))

    def crossing_before(self, to_step: float) -> float:
        """Entries that reach the subnormal range before optimizer step ``to_step``."""
        index = bisect.bisect_left(self.crossing_steps, to_step)
        return self._cumulative[index - 1] if index else 0.0

    def describe(self, from_step: float, to_step: float) -> str | None:
        """The note for a run that ends at ``to_step`` (None when too few entries cross before it)."""
        crossing = self.crossing_before(to_step)
        if not crossing or crossing < _NOTE_SHARE * self.entries:
            return None
        first = max(from_step, self.crossing_steps[0])
        return (f"subnormal floats: {crossing / self.entries:.0%} of the optimizer's {'/'.join(self.buffers)} get no "
                f"gradient and shrink into the subnormal range from step {int(first):,}; a CPU computes on such "
                f"numbers slowly (1.6x slower steps were seen), which the measured steps cannot show yet and "
                f"this prediction does not include; torch.set_flush_denormal(True) at the start of the script "
                f"avoids it")

    def to_dict(self, from_step: float, to_step: float) -> dict[str, Any]:
        return {"at_step": self.at_step, "dead_entries": round(self.dead_entries), "entries": round(self.entries),
                "buffers": self.buffers, "crossing_before_end": round(self.crossing_before(to_step)),
                "first_crossing_step": int(self.crossing_steps[0]) if self.crossing_steps else None}


@dataclass
class _Buffer:
    name: str
    tensor: torch.Tensor
    factor: float
    stride: int


class SubnormalWatch:
    """Watches one optimizer's decaying moment buffers on the CPU, once a fit. See the module docstring.

    Args:
        optimizer: a ``torch.optim.Optimizer`` (or one exposing ``param_groups`` and ``state`` alike).
    """

    def __init__(self, optimizer: Any) -> None:
        self.optimizer = optimizer
        self._snapshot: tuple[int, list[torch.Tensor]] | None = None
        # made once, at the first prediction (which is computed twice at one step, around the projection)
        self.done = False
        self._note: SubnormalNote | None = None

    def _buffers(self) -> list[_Buffer]:
        out = []
        states = getattr(self.optimizer, "state", {})
        for group in getattr(self.optimizer, "param_groups", []):
            for param in group.get("params", []):
                state = states.get(param) or {}
                for name, factor_of in _DECAYING.items():
                    buffer = state.get(name)
                    if (not torch.is_tensor(buffer) or buffer.device.type != "cpu"
                            or buffer.dtype != torch.float32 or buffer.numel() == 0):
                        continue
                    factor = float(factor_of(group))
                    if 0.0 < factor < 1.0:
                        out.append(_Buffer(name, buffer, factor, max(1, math.ceil(buffer.numel() / _SAMPLE))))
        return out

    @staticmethod
    def _sample(buffer: _Buffer) -> torch.Tensor:
        return buffer.tensor.detach().reshape(-1)[::buffer.stride].clone()

    def snapshot(self, step: int) -> None:
        """Sample every buffer now (optimizer ``step``), to compare with at the first prediction."""
        if not self.done:
            self._snapshot = (step, [self._sample(b) for b in self._buffers()])

    def note(self, step: int) -> SubnormalNote | None:
        """The dead entries since the snapshot one step back and their crossing steps (None: nothing to say).
        Made once, at the first prediction; later calls return it unchanged."""
        if not self.done:
            if self._snapshot is None or self._snapshot[0] != step - 1:
                return None
            self._note, self.done = self._dead_entries(step), True
            # neither the samples nor the optimizer are needed again: its state is the user's, freed when they let go
            self._snapshot = self.optimizer = None
        return self._note

    def _dead_entries(self, step: int) -> SubnormalNote | None:
        buffers = self._buffers()
        before = self._snapshot[1] if self._snapshot else []
        if len(before) != len(buffers):
            return None
        tiny = torch.finfo(torch.float32).tiny
        steps_of: list[torch.Tensor] = []
        weights: list[torch.Tensor] = []
        names: set[str] = set()
        dead_total = entries = 0.0
        for buffer, old in zip(buffers, before):
            new = self._sample(buffer)
            if new.shape != old.shape:
                return None
            entries += float(buffer.tensor.numel())
            size = new.abs()
            # a zero gradient leaves exactly `factor x old` (as rounded); any gradient adds to it
            dead = (size >= tiny) & ((new - old * buffer.factor).abs() <= _DECAY_TOLERANCE * old.abs())
            if not bool(dead.any()):
                continue
            steps_of.append(step + torch.ceil(torch.log(tiny / size[dead].double()) / math.log(buffer.factor)))
            weights.append(torch.full_like(steps_of[-1], float(buffer.stride)))
            names.add(buffer.name)
            dead_total += float(dead.sum()) * buffer.stride
        if not steps_of:
            return None
        steps, order = torch.sort(torch.cat(steps_of))
        return SubnormalNote(at_step=step, dead_entries=dead_total, entries=entries, crossing_steps=steps.tolist(),
                             stride_weight=torch.cat(weights)[order].tolist(), buffers=sorted(names))
