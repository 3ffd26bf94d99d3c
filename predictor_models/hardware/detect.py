"""Detect the device this process trains on and map it to the catalog.

Never raises: anything unexpected (no torch, a driver error) degrades to a CPU description.
CUDA initialisation happens only when CUDA is available, as training would do anyway.
"""
from __future__ import annotations

import os
import platform
from typing import Any

from predictor_models.hardware.spec import DeviceInfo

GIB = 1024 ** 3


def cpu_name() -> str:
    """CPU model string ('AMD EPYC 7R13 Processor'), best effort."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if platform.system() == "Darwin":
        try:
            import subprocess

            out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True,
                                 timeout=2, check=False)
            if out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown CPU"


def cpu_cores() -> int:
    """Cores this process may use (affinity-aware where the OS tells)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def current_device(catalog: Any = None, device: Any = None) -> DeviceInfo:
    """The current device: the CUDA/ROCm GPU in use (with the visible count), Apple MPS, or the CPU.

    ``device`` (a `torch.device` or string) names the device a run trains on: ``cuda:1`` is GPU 1,
    ``cpu`` the CPU even on a machine with GPUs.
    """
    cores = cpu_cores()
    try:
        import torch
    except Exception:  # noqa: BLE001 - torch missing or broken: still describe the CPU
        return DeviceInfo("cpu", cpu_name(), 1, None, None, cores)
    try:
        wanted = torch.device(device) if device is not None else None
        if wanted is not None and wanted.type == "cpu":
            return DeviceInfo("cpu", cpu_name(), 1, None, None, cores)
        if torch.cuda.is_available():
            index = wanted.index if wanted is not None and wanted.index is not None else 0
            props = torch.cuda.get_device_properties(index)
            name = str(torch.cuda.get_device_name(index))
            memory = props.total_memory / GIB
            kind = "rocm" if getattr(torch.version, "hip", None) else "cuda"
            return DeviceInfo(kind, name, torch.cuda.device_count(), _match(catalog, name, memory), round(memory, 1),
                              cores)
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return DeviceInfo("mps", f"Apple MPS ({cpu_name()})", 1, None, None, cores)
    except Exception:  # noqa: BLE001 - a driver error must not break the caller
        pass
    return DeviceInfo("cpu", cpu_name(), 1, None, None, cores)


def _match(catalog: Any, name: str, memory_gib: float):
    """Catalog entry for a driver name, using the reported memory to pick the variant."""
    try:
        if catalog is None:
            from predictor_models.hardware.catalog import default_catalog

            catalog = default_catalog(on_error="warn")
        return catalog.resolve(name, memory_hint_gb=memory_gib)
    except Exception:  # noqa: BLE001
        return None
