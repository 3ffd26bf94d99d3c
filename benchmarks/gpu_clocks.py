"""The GPU's SM clock, board power and what holds the clock back, sampled while a timed step runs.

Issue 38's open question on Hopper: its half-precision steps run 13-30% slower than the predictor prices them
(the H200's bf16 `estimate()` steps, Lambda's H100/H200 AMP rows), its fp32 steps do not, and the per-op rows
the predictor learnt from time one kernel at a time on an idle GPU. A board whose power cannot feed its tensor
cores at the boost clock (700 W for 989 dense BF16 TFLOPS on an H100 SXM, against 400 W for 312 on an A100 SXM)
lowers its clock under a sustained step, which an isolated kernel never sees. `ClockSampler` runs ``nvidia-smi``
beside the step (every 100 ms) and `summary` says whether that happened: the median SM clock against the maximum,
the board power against its limit, and the share of samples with a power or thermal cap among the active clock
event reasons. No sampler (no ``nvidia-smi``, or a query it refuses) gives ``None``, never an error.
"""
from __future__ import annotations

import shutil
import statistics
import subprocess
from typing import Any

QUERY = ("clocks.sm", "clocks.max.sm", "power.draw", "power.limit", "temperature.gpu")
# the clock event reasons' field is named clocks_event_reasons from driver 535 on, clocks_throttle_reasons before
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
# bits of that mask that mean a cap (nvml's nvmlClocksEventReason*): software power cap, hardware slowdown,
# software thermal, hardware thermal, hardware power brake
POWER_CAP, HW_SLOWDOWN, SW_THERMAL, HW_THERMAL, POWER_BRAKE = 0x4, 0x8, 0x20, 0x40, 0x80
CAPS = POWER_CAP | HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | POWER_BRAKE
INTERVAL_MS = 100


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:       # "[N/A]", "[Not Supported]"
        return None


def parse(lines: list[str], with_reasons: bool) -> list[dict[str, Any]]:
    """Samples from ``nvidia-smi --format=csv,noheader,nounits`` lines of `QUERY` (and the reasons mask)."""
    samples = []
    for line in lines:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(QUERY) + with_reasons:
            continue
        sample = {key: _number(value) for key, value in zip(QUERY, parts)}
        if with_reasons:
            try:
                sample["reasons"] = int(parts[-1], 16)
            except ValueError:
                sample["reasons"] = None
        samples.append(sample)
    return samples


def summary(samples: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Median and extremes of the samples, and the share with a power or thermal cap active; None without samples."""
    if not samples:
        return None

    def values(key: str) -> list[float]:
        return [s[key] for s in samples if s.get(key) is not None]

    out: dict[str, Any] = {"samples": len(samples)}
    clock, top, power, limit, temp = (values(k) for k in QUERY)
    if clock:
        out.update(sm_clock_mhz_median=statistics.median(clock), sm_clock_mhz_min=min(clock))
    if top:
        out["sm_clock_mhz_max"] = max(top)
        if clock:
            out["clock_share_of_max"] = round(statistics.median(clock) / max(top), 3)
    if power:
        out.update(power_w_median=round(statistics.median(power), 1), power_w_max=round(max(power), 1))
    if limit:
        out["power_limit_w"] = max(limit)
    if temp:
        out["temperature_c_max"] = max(temp)
    reasons = [s["reasons"] for s in samples if s.get("reasons") is not None]
    if reasons:
        out["capped_share"] = round(sum(bool(r & CAPS) for r in reasons) / len(reasons), 3)
        out["power_capped_share"] = round(sum(bool(r & (POWER_CAP | POWER_BRAKE)) for r in reasons) / len(reasons), 3)
    return out


class ClockSampler:
    """``with ClockSampler(index) as clocks: ...`` then ``clocks.result`` (a `summary`, or None)."""

    def __init__(self, index: int = 0, binary: str = "nvidia-smi") -> None:
        self.index = index
        self.binary = binary
        self.result: dict[str, Any] | None = None
        self._proc: subprocess.Popen | None = None
        self._reasons = False

    def _reason_field(self, path: str) -> str | None:
        try:
            help_text = subprocess.run([path, "--help-query-gpu"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        return next((field for field in REASON_FIELDS if field in help_text), None)

    def __enter__(self) -> "ClockSampler":
        path = shutil.which(self.binary)
        if path is None:
            return self
        reason = self._reason_field(path)
        self._reasons = reason is not None
        fields = ",".join(QUERY + ((reason,) if reason else ()))
        try:
            self._proc = subprocess.Popen([path, f"--query-gpu={fields}", "--format=csv,noheader,nounits",
                                           f"--loop-ms={INTERVAL_MS}", f"--id={self.index}"],
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self._proc = None
        return self

    def __exit__(self, *exc) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            out, _ = self._proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            out, _ = self._proc.communicate()
        self.result = summary(parse(out.splitlines(), self._reasons))
