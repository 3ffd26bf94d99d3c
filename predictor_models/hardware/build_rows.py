"""Turn one curated CSV row into catalog values: numbers, lacking precisions, sources, notes, power caps."""
from __future__ import annotations

import re

from predictor_models.hardware.build_overlay import ESTIMATES, NOTES, POWER_CAP, POWER_CAP_POINTS

_CAP_FIELDS = ("boost_clock_mhz", "fp64_tflops", "fp32_tflops", "tf32_tensor_tflops_dense", "fp16_tensor_tflops_dense",
               "bf16_tensor_tflops_dense", "fp8_tensor_tflops_dense")


def power_cap_ratio(tdp_w: float) -> float:
    """Sustained-compute factor of a GH100 SXM at power limit `tdp_w` (see POWER_CAP)."""
    full, low, ratio = POWER_CAP_POINTS["full_w"], POWER_CAP_POINTS["low_w"], POWER_CAP_POINTS["low_ratio"]
    tdp_w = min(max(tdp_w, low), full)
    return ratio + (tdp_w - low) / (full - low) * (1.0 - ratio)


def apply_power_caps(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Fill the compute fields of each POWER_CAP row from its base row scaled by `power_cap_ratio`."""
    by_name = {r["name"]: r for r in rows}
    for name, cap in POWER_CAP.items():
        row, base = by_name.get(name), by_name.get(cap["base"])
        if row is None or base is None:
            continue
        k = power_cap_ratio(cap["tdp_w"])
        for column in _CAP_FIELDS:
            value = _num(base[column])
            if value is not None:
                row[column] = str(round(value * k) if column == "boost_clock_mhz" else round(value * k, 2))
    return rows


def _power_cap_note(name: str) -> str:
    cap = POWER_CAP[name]
    k = power_cap_ratio(cap["tdp_w"])
    return (f"ESTIMATED compute: {cap['base']} peaks x {k:.3f}, the sustained clock at a {cap['tdp_w']:.0f} W limit "
            f"interpolated between H100 SXM5 (700 W, 1.0) and H100 NVL (400 W, {POWER_CAP_POINTS['low_ratio']:.3f}); "
            "memory bandwidth is the part's own.")


def _num(text: str) -> float | int | None:
    text = text.strip()
    if not text:
        return None
    value = float(text)
    return int(value) if value.is_integer() else value


def _unsupported(row: dict[str, str], name: str) -> list[str]:
    """Precisions the hardware has no path for (so asking for them is an error, not a missing figure)."""
    vendor, arch = row["vendor"], row["architecture"]
    if vendor == "Google":
        return ["fp64", "tf32", "fp16", "fp8"]
    if vendor == "AMD":
        if "CDNA3" in arch:
            return []
        return ["tf32", "fp8"]
    cc = float(row["compute_capability"])
    lacking = []
    if cc < 8.0:
        lacking += ["tf32", "bf16"]
    if cc < 8.9:
        lacking.append("fp8")
    return lacking


def _sources(row: dict[str, str]) -> list[str]:
    urls = [u.strip() for u in row["source_urls"].split(";") if u.strip()]
    keep = urls[:2]
    if len(urls) > 2 and urls[-1] not in keep:
        keep.append(urls[-1])  # TechPowerUp (secondary) comes last in the curated table
    return keep


def _short_note(row: dict[str, str], name: str) -> str:
    if name in NOTES:
        note = NOTES[name]
    else:
        first = re.split(r"(?<=\.)\s", row["notes"].strip(), maxsplit=1)[0]
        note = first if len(first) <= 220 else first[:217].rstrip() + "..."
    flags = [f for f in ("UNCERTAIN", "DERIVED", "ASSUMED") if f in row["notes"] and f not in note]
    if name in ESTIMATES:
        note, flags = ESTIMATES[name]["note"], []
    if name in POWER_CAP:
        note, flags = note.split(" ESTIMATED")[0] + " " + _power_cap_note(name), []
    if flags:
        note += " [" + ", ".join(flags) + "; see shared/data/hardware notes]"
    return note

