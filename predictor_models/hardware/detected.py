"""A catalog entry for a GPU the catalog lacks, built from what the driver reports.

`torch.cuda.get_device_properties` gives the SM count, compute capability, memory, L2 size and
(CUDA 12 and earlier) the SM clock, memory clock and bus width; NVML (``pynvml``, when importable)
gives the maximum SM and memory clocks, the bus width and the default power limit. Peaks follow
from per-SM, per-clock rates of the architecture (dense; GeForce cards run FP16 tensor math with
FP32 accumulate at half rate), bandwidth from memory clock x 2 (double data rate) x bus width.
Every figure is an estimate and the entry says so (`detected=True`, `estimated`, `notes`).
Only NVIDIA GPUs (compute capability 6.0 and newer) are described; anything else gives None.
"""
from __future__ import annotations

from typing import Any, Mapping

from predictor_models.hardware.spec import Accelerator

GIB = 1024 ** 3
DEFAULT_CLOCK_MHZ = 1500.0  # when neither the driver nor NVML gives the SM clock
# compute capability -> (architecture, FP32 FLOP per clock per SM, dense FP16 tensor FLOP per clock per SM)
ARCHITECTURES: dict[tuple[int, int], tuple[str, int, int]] = {
    (6, 0): ("Pascal", 128, 0), (6, 1): ("Pascal", 256, 0), (6, 2): ("Pascal", 256, 0),
    (7, 0): ("Volta", 128, 1024), (7, 2): ("Volta", 128, 1024), (7, 5): ("Turing", 128, 1024),
    (8, 0): ("Ampere", 128, 2048), (8, 6): ("Ampere", 256, 1024), (8, 7): ("Ampere", 256, 1024),
    (8, 9): ("Ada Lovelace", 256, 1024), (9, 0): ("Hopper", 256, 4096),
    (10, 0): ("Blackwell", 256, 8192), (10, 3): ("Blackwell", 256, 8192),
    (12, 0): ("Blackwell", 256, 1024), (12, 1): ("Blackwell", 256, 1024),
}
DETECTED_NOTE = ("detected: not in the catalog; figures estimated from the driver's properties{nvml} "
                 "(peaks = SMs x clock x per-SM rate of compute capability {cc}; bandwidth = memory clock x 2 x bus width)")


def driver_figures(props: Any) -> dict[str, float]:
    """The figures `torch.cuda.get_device_properties` reports (absent or zero ones left out)."""
    out: dict[str, float] = {}
    for key, attr, scale in (("sm_count", "multi_processor_count", 1), ("memory_bytes", "total_memory", 1),
                             ("l2_bytes", "L2_cache_size", 1), ("clock_mhz", "clock_rate", 1e-3),
                             ("memory_clock_mhz", "memory_clock_rate", 1e-3), ("bus_width_bits", "memory_bus_width", 1),
                             ("major", "major", 1), ("minor", "minor", 1)):
        value = getattr(props, attr, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (value > 0 or attr == "minor"):
            out[key] = float(value) * scale
    return out


def nvml_figures(props: Any) -> dict[str, float]:
    """Maximum SM / memory clocks (MHz), bus width (bits) and default power limit (W) from NVML,
    when ``pynvml`` is importable and knows the device; empty otherwise."""
    try:
        import pynvml
    except ImportError:  # optional: NVML refines the driver's figures where present
        return {}
    uuid = str(getattr(props, "uuid", "") or "")
    if not uuid:
        return {}
    out: dict[str, float] = {}
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver library, no permission: use the driver's figures
        return {}
    try:
        handle = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
        for key, call in (("clock_mhz", lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)),
                          ("memory_clock_mhz", lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)),
                          ("bus_width_bits", lambda: pynvml.nvmlDeviceGetMemoryBusWidth(handle)),
                          ("tdp_w", lambda: pynvml.nvmlDeviceGetPowerManagementDefaultLimit(handle) / 1000.0)):
            try:
                value = float(call())
            except Exception:  # noqa: BLE001 - a query this GPU or driver does not support
                continue
            if value > 0:
                out[key] = value
    except Exception:  # noqa: BLE001 - the device is not NVML's (e.g. MIG slice): driver figures only
        pass
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return out


def detected_accelerator(name: str, driver: Mapping[str, float], nvml: Mapping[str, float] | None = None) -> Accelerator | None:
    """An estimated catalog entry for the GPU ``name`` from `driver_figures` (and `nvml_figures`);
    None when the figures cannot bound an op (no SM count, compute capability or bandwidth)."""
    nvml = dict(nvml or {})
    figures = {**driver, **nvml}  # NVML's maximum clocks beat the driver's current/base ones
    cc = (int(figures.get("major", 0)), int(figures.get("minor", -1)))
    arch = ARCHITECTURES.get(cc)
    if arch is None:
        arch = next((ARCHITECTURES[k] for k in sorted(ARCHITECTURES, reverse=True) if k[0] == cc[0]), None)
    sms = int(figures.get("sm_count", 0))
    if arch is None or sms <= 0:
        return None
    bandwidth = None
    if figures.get("memory_clock_mhz") and figures.get("bus_width_bits"):
        bandwidth = figures["memory_clock_mhz"] * 1e6 * 2 * figures["bus_width_bits"] / 8 / 1e9
    if not bandwidth:
        return None
    family, fp32_per_clock, tensor_per_clock = arch
    clock = figures.get("clock_mhz") or DEFAULT_CLOCK_MHZ
    tera = sms * clock * 1e6 / 1e12
    fp32 = fp32_per_clock * tera
    geforce = "geforce" in name.lower()
    fp16 = tensor_per_clock * tera * (0.5 if geforce else 1.0) if tensor_per_clock else (2 * fp32 if cc == (6, 0) else None)
    ampere_plus = cc >= (8, 0)
    unsupported = [k for k, ok in (("tf32", ampere_plus), ("bf16", ampere_plus), ("fp8", cc >= (8, 9))) if not ok]
    if fp16 is None:
        unsupported.append("fp16")
    values = {
        "tf32_tflops": fp16 / 2 if ampere_plus and fp16 else None,
        "fp16_tflops": fp16,
        "bf16_tflops": fp16 if ampere_plus else None,
        "fp8_tflops": 2 * fp16 if cc >= (8, 9) and fp16 else None,
    }
    memory = figures.get("memory_bytes", 0.0) / GIB
    note = DETECTED_NOTE.format(nvml=" and NVML" if nvml else "", cc=f"{cc[0]}.{cc[1]}")
    if not figures.get("clock_mhz"):
        note += f"; SM clock unknown, {DEFAULT_CLOCK_MHZ:g} MHz assumed"
    return Accelerator(
        name=name, vendor="NVIDIA", architecture=family, memory_gb=round(memory, 1) or 1.0,
        memory_bandwidth_gbs=round(bandwidth, 1), sm_count=sms, boost_clock_mhz=round(clock, 1),
        l2_cache_mb=(figures["l2_bytes"] / 2**20) if figures.get("l2_bytes") else None,
        tdp_w=nvml.get("tdp_w"), fp32_tflops=round(fp32, 3),
        **{k: (round(v, 3) if v else None) for k, v in values.items()},
        compute_capability=f"{cc[0]}.{cc[1]}", sources=("detected from the device (torch.cuda.get_device_properties"
                                                        + (", NVML)" if nvml else ")"),),
        notes=note, unsupported=tuple(unsupported),
        estimated=tuple(k for k in ("fp32", "tf32", "fp16", "bf16", "fp8") if k not in unsupported),
        detected=True,
    )


def to_toml(entry: Accelerator) -> str:
    """The entry as a hardware override file (``PRENET_HARDWARE`` / ``--catalog``), so that another
    process (or machine) can resolve its name."""
    lines = [f"# {entry.name}: {entry.notes}", "[[accelerator]]"]
    for key in ("name", "vendor", "architecture", "memory_gb", "memory_bandwidth_gbs", "sm_count", "boost_clock_mhz",
                "l2_cache_mb", "tdp_w", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops", "fp8_tflops",
                "compute_capability", "unsupported", "estimated", "sources", "notes"):
        value = getattr(entry, key)
        if value is None or value == ():
            continue
        if isinstance(value, tuple):
            lines.append(f"{key} = [{', '.join(_quote(v) for v in value)}]")
        elif isinstance(value, str):
            lines.append(f"{key} = {_quote(value)}")
        else:
            lines.append(f"{key} = {value!r}")
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
