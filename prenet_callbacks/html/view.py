"""What the page and its charts show, read from a ``prenet-report/2`` dict (no plotting, no HTML here).

Every function takes the plain dict of `Report.to_dict()` and returns plain data; fields a report
lacks come back as ``None`` or empty lists, so older and partial reports render what they have. The
report's parts and the facts the panel words alike (fit/run, the breakdown) come from `report_view`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prenet_callbacks.outputs import report_view
from prenet_callbacks.report_parts import Prediction, TargetRow
from prenet_callbacks.outputs.report_view import BREAKDOWN_PARTS, OF_WHICH_PARTS, number, run_word

__all__ = ["BREAKDOWN_PARTS", "OF_WHICH_PARTS", "HardwarePoint", "Layer", "Roof", "band", "breakdown",
           "hardware_points", "has_totals", "history", "latest_prediction", "layers", "no_layers_reason",
           "number", "pareto_front", "roof", "run_word", "step_phases", "target_label"]

STEP_PHASES = (
    ("data_s", "data loading"),
    ("forward_s", "forward"),
    ("backward_s", "backward"),
    ("optimizer_s", "optimizer"),
    ("other_s", "other"),
)
ROLES = (("fastest", "fastest"), ("cheapest", "cheapest"), ("best_value", "best value"))


def band(value: float, low: Any, high: Any) -> tuple[float, float]:
    """``(low, high)`` around `value`, widened to hold it: rounding in a report (or a band floored
    at the time already spent) can put a bound on the wrong side of the value it bounds."""
    low, high = number(low), number(high)
    return (value if low is None else min(low, value)), (value if high is None else max(high, value))


def latest_prediction(data: dict[str, Any]) -> dict[str, Any] | None:
    predictions = data.get("predictions") or []
    return predictions[-1] if predictions else None


def history(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Predictions that have an optimizer step, in order of fit then step."""
    rows = [p for p in data.get("predictions") or [] if number(p.get("at_step")) is not None]
    return sorted(rows, key=lambda p: (p.get("fit") or 1, p["at_step"]))


def has_totals(data: dict[str, Any]) -> bool:
    """True when at least one prediction gives a whole-fit time (False: the run length is unknown)."""
    return any(number(p.predicted_total_s) is not None for p in report_view.predictions(data))


def breakdown(prediction: dict[str, Any] | None) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """``(parts, of_which)``: labelled seconds of the whole fit, and the labelled parts of training."""
    if not prediction:
        return [], []
    found = report_view.prediction_breakdown(Prediction.from_dict(prediction))
    labels = dict(BREAKDOWN_PARTS + OF_WHICH_PARTS)
    return ([(labels[key], s) for key, s in found.parts],
            [(labels[key], s) for key, s in found.of_which if s > 0])


def step_phases(data: dict[str, Any]) -> list[tuple[str, float]]:
    """Labelled seconds of one measured optimizer step (data loading, forward, backward, ...)."""
    phases = report_view.measured(data).step_phases or {}
    rows = [(label, number(phases.get(key))) for key, label in STEP_PHASES]
    return [(label, s) for label, s in rows if s is not None and s > 0]


@dataclass
class Layer:
    """One profiled layer: measured times per optimizer step and its static features."""

    name: str
    module_type: str
    forward_s: float
    backward_s: float
    flops: float | None          # forward + backward + optimizer FLOPs per step
    forward_flops: float | None  # CO
    intensity: float | None      # FLOP per byte moved
    params: float | None

    @property
    def seconds(self) -> float:
        return self.forward_s + self.backward_s

    @property
    def achieved_flops_s(self) -> float | None:
        return self.flops / self.seconds if self.flops and self.seconds > 0 else None


def layers(data: dict[str, Any]) -> list[Layer]:
    """Layers with measured forward or backward time, slowest first."""
    table = (data.get("measured") or {}).get("layers") or {}
    out = []
    for row in table.get("layers") or []:
        forward, backward = number(row.get("forward_s")) or 0.0, number(row.get("backward_s")) or 0.0
        if forward + backward <= 0:
            continue
        features = row.get("features") or {}
        parts = [number(features.get(k)) for k in ("fwd_flops", "bwd_flops", "opt_flops")]
        flops = sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None
        out.append(Layer(str(row.get("name", "?")), str(row.get("module_type", "")), forward, backward, flops,
                         number(features.get("co_flops")), number(features.get("arithmetic_intensity")),
                         number(row.get("params"))))
    out.sort(key=lambda layer: -layer.seconds)
    return out


def no_layers_reason(data: dict[str, Any]) -> str:
    """Why a report has no per-layer table, in words, from the limitations it carries."""
    table = (data.get("measured") or {}).get("layers") or {}
    reasons = list(table.get("limitations") or []) or [
        text for text in data.get("limitations") or [] if "profil" in str(text).lower() or "layer" in str(text).lower()]
    return "; ".join(map(str, reasons)) or "the run has no per-layer profile (profiling was off or failed)"


@dataclass
class Roof:
    """The current device's roofline: compute peak and memory bandwidth for the run's precision."""

    device: str
    peak_flops_s: float
    bandwidth_bytes_s: float
    precision: str


def roof(data: dict[str, Any]) -> tuple[Roof | None, str]:
    """The current device's roof from the hardware catalog, or ``(None, why there is none)``."""
    from predictor_models.hardware import UnknownHardwareError, UnsupportedPrecisionError, lookup_hardware
    from prenet_callbacks.projection.ops.precision import recorded_precision

    current = data.get("current") or {}
    name = current.get("catalog_name")
    device = current.get("name") or current.get("device") or "this device"
    if not name:
        return None, f"no roof: {device} is not in the hardware catalog"
    try:
        accelerator = lookup_hardware(name)
        precision = recorded_precision(current)
        peak = accelerator.peak_flops(precision.compute_dtype, tf32=precision.matmul_tf32, matrix=True)
    except (UnknownHardwareError, UnsupportedPrecisionError, ValueError) as error:
        return None, f"no roof for {name}: {error}"
    return Roof(accelerator.name, peak, accelerator.memory_bandwidth_gbs * 1e9, precision.label()), ""


def target_label(target: dict[str, Any]) -> str:
    """``8x H100-SXM5`` (the /2 ``label``, else built from devices and name)."""
    return str(TargetRow.from_dict(target).display_label)


@dataclass
class HardwarePoint:
    """One target on the time-against-cost chart; ``cost`` is None where the target has no price."""

    label: str
    time: float
    low: float
    high: float
    cost: float | None
    fits: bool | None
    current: bool
    roles: list[str] = field(default_factory=list)
    front: bool = False

    @property
    def cost_low(self) -> float | None:
        return None if self.cost is None else self.cost * (self.low / self.time)

    @property
    def cost_high(self) -> float | None:
        return None if self.cost is None else self.cost * (self.high / self.time)


def hardware_points(data: dict[str, Any]) -> tuple[list[HardwarePoint], bool]:
    """``(points, whole_run)``: whole-run time and cost per target, or, when no target has a total
    (unknown run length), time per optimizer step and cost per 1,000 steps (``whole_run`` False)."""
    targets = report_view.targets(data)
    whole_run = any(number(t.total_s) is not None for t in targets)
    roles: dict[str, list[str]] = {}
    recommendation = data.get("recommendation")
    if isinstance(recommendation, dict):
        for key, word in ROLES:
            if recommendation.get(key):
                roles.setdefault(str(recommendation[key]), []).append(word)
    points = []
    for target in targets:
        if whole_run:
            time, low, high = target.total_s, target.total_low_s, target.total_high_s
            cost = number(target.total_usd)
        else:
            time, low, high = target.step_s, target.step_low_s, target.step_high_s
            per_hour, time = number(target.usd_per_hour), number(time)
            cost = None if per_hour is None or time is None else per_hour * time * 1000 / 3600
        time = number(time)
        if time is None or time <= 0:
            continue
        low, high = band(time, low, high)
        label = str(target.display_label)
        fits = target.fits_memory
        points.append(HardwarePoint(label, time, low, high, cost, fits if isinstance(fits, bool) else None,
                                    bool(target.current), roles.get(label, [])))
    front = pareto_front(points)
    for point in points:
        point.front = point.label in front
    return points, whole_run


def pareto_front(points: list[HardwarePoint]) -> set[str]:
    """Labels of the priced targets that fit in memory and that no other such target beats on both
    time and cost (equal on one and better on the other counts as beating)."""
    candidates = [p for p in points if p.cost is not None and p.fits is not False]
    front = set()
    for p in candidates:
        beaten = any(q.time <= p.time and q.cost <= p.cost and (q.time < p.time or q.cost < p.cost)
                     for q in candidates)
        if not beaten:
            front.add(p.label)
    return front
