"""Data classes of the hardware catalog: an accelerator, its prices, a node target, the current device.

Figures are stored as the vendor states them (TFLOPS, GB, GB/s); `Accelerator.peak_flops` converts to
FLOP/s so that callers never multiply by 1e12 themselves.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from predictor_models.hardware.listing import Price
from predictor_models.hardware.prices import cached_choice, cached_default_price

__all__ = ["Accelerator", "DeviceInfo", "MissingFigureError", "Price", "Target", "UnsupportedPrecisionError",
           "precision_key"]

TERA = 1e12

# Canonical precision keys used by the catalog and the names accepted for each. A `torch.dtype` is
# matched through its str() ("torch.bfloat16"), so this module never imports torch.
PRECISION_ALIASES: dict[str, str] = {
    "float32": "fp32", "fp32": "fp32", "float": "fp32", "f32": "fp32", "32": "fp32", "single": "fp32",
    "tf32": "tf32", "tfloat32": "tf32", "tensorfloat32": "tf32",
    "float16": "fp16", "fp16": "fp16", "half": "fp16", "f16": "fp16", "16": "fp16",
    "bfloat16": "bf16", "bf16": "bf16",
    "float8": "fp8", "fp8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8", "e4m3": "fp8", "e5m2": "fp8",
    "float64": "fp64", "fp64": "fp64", "double": "fp64", "f64": "fp64",
}
PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8")


class UnsupportedPrecisionError(ValueError):
    """The device cannot run this precision (e.g. bf16 on a V100), or the dtype is not a float type."""


class MissingFigureError(UnsupportedPrecisionError):
    """The device supports the precision but the catalog has no published figure for it."""


def precision_key(dtype: Any) -> str:
    """Map a `torch.dtype` or a name ("bfloat16", "bf16", "half", ...) to a catalog key ("bf16")."""
    text = str(dtype).strip().lower()
    text = text.removeprefix("torch.")
    key = PRECISION_ALIASES.get(text)
    if key is None:
        raise UnsupportedPrecisionError(
            f"no peak FLOP/s for dtype {dtype!r}; known: float64, float32, tf32, float16, bfloat16, float8"
        )
    return key


@dataclass(frozen=True)
class Accelerator:
    """One accelerator model/variant of the catalog (a single GPU, GCD or TPU chip as PyTorch sees it).

    TFLOPS fields are *dense* peaks (no 2:4 sparsity). On GeForce cards fp16/bf16/fp8 hold the
    FP32-accumulate tensor rate, which is what PyTorch's matmuls use. `None` means unknown.
    """

    name: str
    vendor: str
    architecture: str
    memory_gb: float
    memory_bandwidth_gbs: float
    sm_count: int | None = None
    boost_clock_mhz: float | None = None
    l2_cache_mb: float | None = None
    tdp_w: float | None = None
    fp32_tflops: float | None = None
    tf32_tflops: float | None = None
    fp16_tflops: float | None = None
    bf16_tflops: float | None = None
    fp8_tflops: float | None = None
    fp64_tflops: float | None = None
    fp32_matrix_tflops: float | None = None  # FP32 GEMM on matrix cores where faster than vector FP32 (AMD CDNA1/2)
    interconnect: str | None = None
    interconnect_bandwidth_gbs: float | None = None  # bidirectional total per GPU, as the vendor states it
    pcie_gen: int | None = None
    # -- nodes and network (multi-node data parallelism) --
    max_gpus_per_node: int | None = None       # GPUs of the largest common node (GB200: one NVL72 NVLink domain)
    network_gbps_per_gpu: float | None = None  # scale-out NIC bandwidth per GPU in that node, Gb/s each way
    network: str | None = None                 # which nodes these figures describe
    network_sources: tuple[str, ...] = ()
    release_year: int | None = None
    compute_capability: str | None = None
    kind: str = "gpu"  # "gpu" | "tpu"
    sources: tuple[str, ...] = ()
    notes: str = ""
    # -- beyond the shared contract --
    aliases: tuple[str, ...] = ()
    form_factor: str | None = None
    memory_type: str | None = None
    unsupported: tuple[str, ...] = ()  # precision keys the device has no hardware path for
    estimated: tuple[str, ...] = ()  # precision keys whose figure is an estimate (see notes)
    price_list: tuple[Price, ...] = field(default=(), compare=False, repr=False)
    user_defined: bool = False  # came from an override file
    detected: bool = False  # not in the catalog: built from the driver's figures (`hardware.detected`)

    # ---- precision -------------------------------------------------------------------------
    def _tflops(self, key: str) -> float | None:
        return getattr(self, f"{key}_tflops")

    def peak_flops(self, dtype: Any, *, tf32: bool = False, matrix: bool = False) -> float:
        """Dense peak FLOP/s for `dtype` (a `torch.dtype` or a name).

        - float32 with ``tf32=True`` gives the TF32 tensor peak where the device has one, else fp32.
        - float32 with ``matrix=True`` (a GEMM or convolution) gives the FP32 matrix-core peak where the
          catalog has one (`fp32_matrix_tflops`: AMD CDNA1/CDNA2 run FP32 GEMMs at twice the vector rate),
          else the same as without it. A TF32 peak chosen by ``tf32=True`` comes first.
        - float16 on a device without tensor cores gives its packed-FP16 rate where the catalog has one
          (P100), else the fp32 rate: cuBLAS computes such fp16 GEMMs in fp32.
        - A precision the hardware lacks (bf16 on V100, fp8 before Ada/Hopper) raises
          `UnsupportedPrecisionError`; a supported one without a published figure raises
          `MissingFigureError` (a subclass). Never returns 0.
        """
        key = precision_key(dtype)
        if key == "fp32" and tf32 and self._tflops("tf32") is not None:
            key = "tf32"
        if key == "tf32" and self._tflops("tf32") is None and "tf32" in self.unsupported:
            key = "fp32"  # TF32 requested where it does not exist: PyTorch silently runs fp32
        if key == "fp32" and matrix and self.fp32_matrix_tflops is not None:
            return self.fp32_matrix_tflops * TERA
        value = self._tflops(key)
        if value is None and key == "fp16" and "fp16" not in self.unsupported and self.fp32_tflops is not None:
            if self.kind == "gpu" and self.fp16_tflops is None:
                value = self.fp32_tflops
        if value is not None:
            return value * TERA
        if key in self.unsupported:
            raise UnsupportedPrecisionError(f"{self.name} has no {_LABEL[key]} support in hardware")
        raise MissingFigureError(f"{self.name}: no published {_LABEL[key]} peak in the catalog")

    def supports(self, dtype: Any, *, tf32: bool = False) -> bool:
        """True when `peak_flops(dtype)` returns a figure (the device runs it and the peak is known)."""
        try:
            self.peak_flops(dtype, tf32=tf32)
        except UnsupportedPrecisionError:
            return False
        return True

    # ---- prices -----------------------------------------------------------------------------
    @property
    def prices(self) -> tuple[Price, ...]:
        """All listed on-demand prices for this accelerator (oldest rows included; see `price_date`)."""
        return self.price_list

    @property
    def default_price(self) -> Price | None:
        """The price of one GPU; rule in `predictor_models.hardware.prices.choose_price`."""
        return cached_default_price(self.price_list)

    def price_for(self, gpus: int = 1, provider: str | None = None):
        """The listing a target of `gpus` GPUs (per node) is priced with, as a `PriceChoice` (listing and
        note); ``provider``: that provider's listings only. Rule in `prices.choose_price`."""
        return cached_choice(self.price_list, int(gpus), provider)

    @property
    def usd_per_hour(self) -> float | None:
        """On-demand USD per GPU-hour of one GPU: the cheapest current 1-GPU listing (else the per-GPU rate
        of the smallest instance); None if unlisted."""
        price = self.default_price
        return None if price is None else price.usd_per_gpu_hour

    @property
    def price_date(self) -> str | None:
        """Date of the default price (show it beside any cost)."""
        price = self.default_price
        return None if price is None else price.price_date

    # ---- conversions ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (prices included, with the default price resolved)."""
        out: dict[str, Any] = {}
        for key in self.__dataclass_fields__:
            if key == "price_list":
                continue
            value = getattr(self, key)
            out[key] = list(value) if isinstance(value, tuple) else value
        out["usd_per_hour"] = self.usd_per_hour
        out["price_date"] = self.price_date
        out["prices"] = [p.to_dict() for p in self.price_list]
        return out


_LABEL = {"fp64": "FP64", "fp32": "FP32", "tf32": "TF32", "fp16": "FP16", "bf16": "BF16", "fp8": "FP8"}


@dataclass(frozen=True)
class Target:
    """A projection target: `count` accelerators of one kind in a node ("8x H100")."""

    count: int
    accelerator: Accelerator

    @property
    def label(self) -> str:
        return self.accelerator.name if self.count == 1 else f"{self.count}x {self.accelerator.name}"

    def __str__(self) -> str:
        return self.label


@dataclass(frozen=True)
class DeviceInfo:
    """What this process trains on. `accelerator` is the catalog entry when the device is in it, an
    entry built from the driver's figures (``accelerator.detected``) for a GPU the catalog lacks, or
    None (CPU, MPS, a GPU whose figures cannot be read)."""

    kind: str  # "cuda" | "rocm" | "cpu" | "mps"
    name: str
    count: int
    accelerator: Accelerator | None
    memory_gb: float | None  # per device, GiB as the driver reports it (vendors' "80 GB" HBM = 80 GiB)
    cpu_cores: int
    index: int | None = None  # the GPU's index (``cuda:1`` -> 1); None for the CPU

    @property
    def detected(self) -> bool:
        """True when `accelerator` was built from the driver's figures, not taken from the catalog."""
        return bool(self.accelerator is not None and self.accelerator.detected)
