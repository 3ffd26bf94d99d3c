"""Detect the device this process trains on and map it to the catalog (or describe it, when the
catalog lacks it).

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
    """The device this process trains on: ``device`` None gives CUDA/ROCm GPU 0 (with the visible
    count), Apple MPS, or the CPU; a `torch.device` or string describes that device (``"cuda:1"`` is
    GPU 1, ``"cuda"`` the current GPU, ``"cpu"`` the CPU even on a GPU machine).

    A GPU the catalog lacks gets an entry built from the driver's figures (``detected=True``; see
    `hardware.detected`), registered so that `lookup_hardware` resolves its name in this process."""
    cores = cpu_cores()
    cpu = DeviceInfo("cpu", cpu_name(), 1, None, None, cores)
    try:
        import torch
    except Exception:  # noqa: BLE001 - torch missing or broken: still describe the CPU
        return cpu
    try:
        kind = _device_type(torch, device)
        if kind == "cuda":
            index = _cuda_index(torch, device)
            props = torch.cuda.get_device_properties(index)
            name = str(torch.cuda.get_device_name(index))
            memory = props.total_memory / GIB
            hip = bool(getattr(torch.version, "hip", None))
            entry = _match(catalog, name, memory) or (None if hip else _detect(name, props))
            return DeviceInfo("rocm" if hip else "cuda", name, torch.cuda.device_count(), entry, round(memory, 1),
                              cores, index)
        if kind == "mps":
            return DeviceInfo("mps", f"Apple MPS ({cpu_name()})", 1, None, None, cores)
    except Exception:  # noqa: BLE001 - a driver error must not break the caller
        pass
    return cpu


def _device_type(torch: Any, device: Any) -> str:
    """"cuda", "mps" or "cpu" for the device asked for (None: the first accelerator present)."""
    if device is None:
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    kind = torch.device(device).type
    if kind == "cuda" and torch.cuda.is_available():
        return "cuda"
    return "mps" if kind == "mps" else "cpu"


def _cuda_index(torch: Any, device: Any) -> int:
    """GPU 0 for ``device`` None, the index of ``cuda:N``, the current GPU for a bare ``cuda``."""
    if device is None:
        return 0
    index = torch.device(device).index
    if index is None:
        try:
            index = torch.cuda.current_device()
        except Exception:  # noqa: BLE001 - no context yet (or a stand-in torch.cuda): the first GPU
            index = 0
    return int(index)


def _detect(name: str, props: Any):
    """A detected entry for a GPU the catalog lacks (None when its figures cannot bound an op)."""
    from predictor_models.hardware.detected import detected_accelerator, driver_figures, nvml_figures

    entry = detected_accelerator(name, driver_figures(props), nvml_figures(props))
    if entry is not None:
        register_detected(entry)
    return entry


_DETECTED: dict[str, Any] = {}


def register_detected(entry) -> None:
    """Make `lookup_hardware` resolve a detected entry's name in this process."""
    _DETECTED[entry.name.strip().lower()] = entry


def detected_entry(name: str):
    """The detected entry registered under ``name`` (case-insensitive), or None."""
    return _DETECTED.get(str(name).strip().lower())


def _match(catalog: Any, name: str, memory_gib: float):
    """Catalog entry for a driver name, using the reported memory to pick the variant."""
    try:
        if catalog is None:
            from predictor_models.hardware.catalog import default_catalog

            catalog = default_catalog(on_error="warn")
        return catalog.resolve(name, memory_hint_gb=memory_gib)
    except Exception:  # noqa: BLE001
        return None
