"""Subnormal floats in the optimizer's state: a CPU slowdown that the first steps cannot show.

An entry whose gradient is exactly zero (a dead ReLU unit, an unused embedding row) keeps a moment
buffer that only decays: Adam's first moment by ``beta1`` a step, SGD's momentum by ``momentum``. After
``log(tiny / |m|) / log(beta)`` steps it enters the subnormal range (below 1.2e-38 in fp32), and there
rounding stalls it: ``m - 0.1 m`` rounds back to ``m`` a few units above zero, so it stays subnormal for
the rest of the run. An x86 CPU computes every operation on a subnormal through a slow assist unless
flush-to-zero is on (``torch.set_flush_denormal(True)``); on a GPU it costs nothing. On this project's MLP
benchmarks (AdamW, ReLU) 20-38% of ``exp_avg`` went subnormal 600-800 steps in and every later step took
1.6x as long; no step before that shows it.

`SubnormalWatch` samples the moment buffers before a prediction and at it; the entries that decayed by
exactly ``beta`` in between are dead, and each one's crossing step follows from its magnitude. A small
probe of the same optimizer class, its state once subnormal and once not, prices one subnormal entry per
step on this host. `SubnormalForecast` turns the two into the seconds the rest of the run will add.
"""
from __future__ import annotations

import inspect
import math
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

import torch

# Each moment buffer that decays geometrically under a zero gradient, and the group key of its factor.
_DECAYING = {"exp_avg": lambda group: group["betas"][0],
             "exp_avg_sq": lambda group: group["betas"][1],
             "momentum_buffer": lambda group: group.get("momentum") or 0.0}
_SAMPLE = 1 << 16          # entries sampled per buffer (evenly strided): the counts scale up by the stride
_DECAY_TOLERANCE = 3e-7    # relative: one step of pure decay as rounded by lerp/mul (measured <= 1.1e-7)
_PROBE_ENTRIES = 1 << 16
_PROBE_ROUNDS = 7


def flushes_subnormals() -> bool:
    """Whether this CPU thread flushes subnormal results to zero (``torch.set_flush_denormal(True)``)."""
    tiny = torch.finfo(torch.float32).tiny
    return float(torch.tensor([tiny], dtype=torch.float32).mul(0.5).item()) == 0.0


@dataclass
class SubnormalForecast:
    """Dead moment entries that will turn subnormal, and what they cost a step once they have.

    ``crossings`` holds ``(optimizer step, entries, seconds per step)`` in step order: that many entries
    reach the subnormal range at that step (bucketed), and from then on add that much to every step.
    """

    at_step: int
    crossings: list[tuple[int, float, float]]
    subnormal_now: float
    dead_entries: float
    buffers: list[str]

    def _crossing(self, from_step: float, to_step: float) -> list[tuple[float, float, float]]:
        return [(max(step, from_step), entries, seconds) for step, entries, seconds in self.crossings
                if step < to_step]

    def extra_s(self, from_step: float, to_step: float) -> float:
        """Seconds the entries crossing after ``from_step`` add to the optimizer steps up to ``to_step``."""
        return sum(seconds * (to_step - start) for start, _, seconds in self._crossing(from_step, to_step))

    def describe(self, from_step: float, to_step: float) -> str:
        crossing = self._crossing(from_step, to_step)
        entries = sum(e for _, e, _ in crossing)
        per_step = sum(s for _, _, s in crossing)
        return (f"subnormal floats: {entries:,.0f} entries of the optimizer's {'/'.join(self.buffers)} get no "
                f"gradient and decay into the subnormal range from step {int(crossing[0][0]):,}, where this CPU "
                f"computes on them slowly: steps will take up to {per_step * 1e3:.1f} ms longer, "
                f"{self.extra_s(from_step, to_step):.1f} s over the run (torch.set_flush_denormal(True) "
                f"at the start of the script avoids it)")

    def to_dict(self, from_step: float, to_step: float) -> dict[str, Any]:
        crossing = self._crossing(from_step, to_step)
        return {"at_step": self.at_step, "dead_entries": round(self.dead_entries),
                "subnormal_now": round(self.subnormal_now), "buffers": self.buffers,
                "crossing_before_end": round(sum(e for _, e, _ in crossing)),
                "first_crossing_step": int(crossing[0][0]) if crossing else None,
                "extra_s": round(self.extra_s(from_step, to_step), 3)}


@dataclass
class _Buffer:
    name: str
    tensor: torch.Tensor
    factor: float
    stride: int


class SubnormalWatch:
    """Watches one optimizer's decaying moment buffers on the CPU. See the module docstring.

    Args:
        optimizer: a ``torch.optim.Optimizer`` (or one exposing ``param_groups`` and ``state`` alike).
        probe: prices one subnormal entry per step for a buffer name (default: `probe_cost` on the
            optimizer's class); injectable for tests.
    """

    def __init__(self, optimizer: Any, probe: Callable[[Any, str], float | None] | None = None) -> None:
        self.optimizer = optimizer
        self.probe = probe or probe_cost
        self._snapshot: tuple[int, list[torch.Tensor]] | None = None
        self._cost: dict[str, float | None] = {}
        # the first prediction is made twice at one step (around the projection): sample once
        self._last: tuple[int, SubnormalForecast | None] | None = None

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
        """Sample every buffer now (optimizer ``step``), to compare with at the next forecast."""
        self._snapshot = (step, [self._sample(b) for b in self._buffers()])

    def forecast(self, step: int) -> SubnormalForecast | None:
        """The dead entries since the last snapshot one step back and their crossing steps (None: nothing to say)."""
        if self._last is None or self._last[0] != step:
            self._last = (step, self._forecast(step))
        return self._last[1]

    def _forecast(self, step: int) -> SubnormalForecast | None:
        if self._snapshot is None or self._snapshot[0] != step - 1:
            return None
        buffers = self._buffers()
        before = self._snapshot[1]
        if len(before) != len(buffers):
            return None
        tiny = torch.finfo(torch.float32).tiny
        crossings: dict[str, list[torch.Tensor]] = defaultdict(list)   # by buffer: their crossing steps differ
        strides: dict[str, list[torch.Tensor]] = defaultdict(list)
        costs: dict[str, float] = {}
        subnormal_now = dead_total = 0.0
        for buffer, old in zip(buffers, before):
            new = self._sample(buffer)
            if new.shape != old.shape:
                return None
            size = new.abs()
            subnormal_now += float(((size < tiny) & (size > 0)).sum()) * buffer.stride
            # a zero gradient leaves exactly `factor x old` (as rounded); any gradient adds to it
            dead = (size >= tiny) & ((new - old * buffer.factor).abs() <= _DECAY_TOLERANCE * old.abs())
            if not bool(dead.any()):
                continue
            cost = self._cost_of(buffer.name)
            if not cost:
                continue
            steps = step + torch.ceil(torch.log(tiny / size[dead].double()) / math.log(buffer.factor))
            crossings[buffer.name].append(steps)
            strides[buffer.name].append(torch.full_like(steps, float(buffer.stride)))
            costs[buffer.name] = cost
            dead_total += float(dead.sum()) * buffer.stride
        if not crossings:
            return None
        buckets = []
        for name, steps_of in crossings.items():
            weights = torch.cat(strides[name])
            buckets += _bucketed(torch.cat(steps_of), weights, weights * costs[name])
        return SubnormalForecast(at_step=step, crossings=sorted(buckets), subnormal_now=subnormal_now,
                                 dead_entries=dead_total, buffers=sorted(crossings))

    def _cost_of(self, name: str) -> float | None:
        """One subnormal entry's extra seconds a step in buffer ``name`` (probed once a fit)."""
        if name not in self._cost:
            self._cost[name] = self.probe(self.optimizer, name)
        return self._cost[name]


def _bucketed(steps: torch.Tensor, entries: torch.Tensor, seconds: torch.Tensor,
              buckets: int = 128) -> list[tuple[int, float, float]]:
    """One buffer's crossings as at most ``buckets`` (step, entries, seconds a step) triples: quantiles of
    the crossing step, each at its mean step, so that entry-steps before the run's end add up."""
    order = torch.argsort(steps)
    steps, entries, seconds = steps[order], entries[order], seconds[order]
    edges = torch.linspace(0, len(steps), buckets + 1).long().tolist()
    return [(round(float((steps[lo:hi] * entries[lo:hi]).sum() / entries[lo:hi].sum())),
             float(entries[lo:hi].sum()), float(seconds[lo:hi].sum()))
            for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]


def probe_cost(optimizer: Any, buffer_name: str) -> float | None:
    """Seconds one subnormal entry of ``buffer_name`` adds to one step of ``optimizer``'s class here.

    A throwaway parameter of 65,536 entries, with the first param group's settings, steps under a zero
    gradient with the buffer filled once with subnormals and once with ordinary values, alternately;
    the difference of the fastest of each, over entries. None where the class cannot be built this way.
    """
    cls = type(optimizer)
    if not cls.__module__.startswith("torch.optim"):
        cls = torch.optim.SGD if buffer_name == "momentum_buffer" else torch.optim.AdamW
    try:
        # a group holds more than its class takes (AdamW's groups carry `decoupled_weight_decay`)
        accepted = inspect.signature(cls.__init__).parameters
        settings = {k: v for k, v in optimizer.param_groups[0].items() if k in accepted and k != "params"}
        rng = torch.Generator().manual_seed(0)   # the run's own random stream stays untouched
        param = torch.nn.Parameter(torch.randn(_PROBE_ENTRIES, generator=rng))
        probe = cls([param], **settings)
        param.grad = torch.randn(_PROBE_ENTRIES, generator=rng)
        probe.step()
        param.grad.zero_()
        state = probe.state[param]
        if buffer_name not in state:
            return None
    except Exception:  # noqa: BLE001 - an optimizer that cannot be rebuilt has no price; never break the run
        return None
    tiny = torch.finfo(torch.float32).tiny

    def step_time(fill: float) -> float:
        for name, value in state.items():
            if torch.is_tensor(value) and value.shape == param.shape:
                value.fill_(fill if name == buffer_name else 1e-8)
        start = time.perf_counter()
        for _ in range(3):
            probe.step()
        return (time.perf_counter() - start) / 3

    with torch.no_grad():
        rounds = [(step_time(tiny / 4), step_time(1e-3)) for _ in range(_PROBE_ROUNDS)]
    # the fastest of each: the rounds a shared machine disturbed least
    return max(0.0, min(s for s, _ in rounds) - min(n for _, n in rounds)) / _PROBE_ENTRIES
