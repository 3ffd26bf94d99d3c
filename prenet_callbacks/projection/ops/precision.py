"""Training precision as PyTorch and Lightning spell it, and what it means for ops and memory.

``"fp8"`` (projections only: `estimate` and a report's re-projection, ``allow_fp8=True``): FP8 training
as torchao's float8 "tensorwise" recipe runs it -- bf16-mixed, with each ``nn.Linear`` whose sides divide
by 16 computing its three GEMMs in FP8 with dynamic per-tensor scaling (`fp8.py`); FP8 GEMM rates in
`fp8_rates.py`.

Lightning's strings: ``"32-true"``, ``"16-mixed"``, ``"bf16-mixed"``, ``"16-true"``, ``"bf16-true"``
(``"64-true"`` too). In ``"32-true"`` fp32 matmuls may run on TF32 tensor cores: PyTorch decides that
with ``torch.get_float32_matmul_precision()`` ("highest" = no TF32; "high"/"medium" = TF32) and,
separately for cuDNN convolutions, with ``torch.backends.cudnn.allow_tf32`` (default True).
"""
from __future__ import annotations

from typing import Any

from dataclasses import dataclass, replace

from predictor_models.op_spec import OpSpec

# Lightning's short forms and older aliases -> canonical string.
_ALIASES = {
    "32": "32-true", "32-true": "32-true", "fp32": "32-true", "float32": "32-true",
    "16": "16-mixed", "16-mixed": "16-mixed", "fp16-mixed": "16-mixed", "amp": "16-mixed",
    "bf16": "bf16-mixed", "bf16-mixed": "bf16-mixed",
    "16-true": "16-true", "fp16-true": "16-true", "half": "16-true",
    "bf16-true": "bf16-true",
    "64": "64-true", "64-true": "64-true", "fp64": "64-true", "double": "64-true",
}
PRECISIONS = ("32-true", "16-mixed", "bf16-mixed", "16-true", "bf16-true", "64-true")
FP8 = "fp8"
_FP8_ALIASES = frozenset({"fp8", "float8", "fp8-mixed", "float8-mixed"})
ESTIMATE_PRECISIONS = PRECISIONS + (FP8,)
MATMUL_PRECISIONS = ("highest", "high", "medium")
# Ops autocast runs in half precision (the rest, norms and losses, stay in fp32).
_AUTOCAST_CLASSES = frozenset({"gemm", "conv", "attention", "recurrent"})
_TF32_CLASSES = frozenset({"gemm", "attention", "recurrent"})
_ESIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "float8": 1}


@dataclass(frozen=True)
class Precision:
    """One training precision: how its ops compute and how many bytes each state tensor takes."""

    name: str                 # canonical Lightning string
    half: str | None          # "float16" / "bfloat16" for mixed and true-half, else None
    mixed: bool               # autocast with fp32 master weights
    matmul_tf32: bool         # fp32 GEMMs on TF32 tensor cores (32-true only)
    conv_tf32: bool           # fp32 cuDNN convolutions on TF32 (32-true only)
    matmul_precision: str     # "highest" | "high" | "medium"
    fp8: bool = False         # FP8 training: Linear GEMMs in FP8 (torchao float8 tensorwise), the rest bf16-mixed
    conv_search: bool = False  # cuDNN's algorithm search (torch.backends.cudnn.benchmark): FP32 3x3s may run Winograd

    @property
    def compute_dtype(self) -> str:
        """Dtype of the heavy ops (GEMMs, convolutions)."""
        if self.half:
            return self.half
        return "float64" if self.name == "64-true" else "float32"

    @property
    def state_dtype(self) -> str:
        """Dtype of the weights, gradients and optimizer updates (fp32 masters in mixed precision)."""
        if self.half and not self.mixed:
            return self.half
        return "float64" if self.name == "64-true" else "float32"

    @property
    def param_bytes(self) -> int:
        """Bytes per parameter of the weights kept on the device (fp32 masters in mixed)."""
        return 2 if (self.half and not self.mixed) else (8 if self.name == "64-true" else 4)

    @property
    def grad_scaler(self) -> bool:
        """Whether the step runs a GradScaler (Lightning's ``16-mixed``; bf16 needs none)."""
        return self.name == "16-mixed"

    @property
    def grad_bytes(self) -> int:
        return self.param_bytes

    def label(self) -> str:
        if self.name == "32-true":
            matmul = "TF32" if self.matmul_tf32 else "FP32"
            conv = "TF32" if self.conv_tf32 else "FP32"
            return f"32-true ({matmul} matmuls, {conv} convolutions)"
        if self.fp8:
            return "fp8 (torchao float8 tensorwise: Linear GEMMs in FP8, the rest bf16-mixed)"
        return self.name


def precision_alias_note(precision: str | int | None, parsed: Precision) -> str | None:
    """A sentence when `precision` was a short form read as a Lightning name ("bf16" -> "bf16-mixed")."""
    text = str(precision if precision is not None else "32-true").strip().lower()
    if text == parsed.name or parsed.fp8:
        return None
    return f"precision {precision!r} read as {parsed.name!r} (Lightning's name for it)"


def parse_precision(precision: str | int | None = "32-true", float32_matmul_precision: str | None = None,
                    *, conv_tf32: bool | None = None, conv_search: bool | None = None,
                    allow_fp8: bool = False) -> Precision:
    """Validate a Lightning precision string; resolve TF32 and cuDNN's search from the arguments or `torch.backends`.

    ``float32_matmul_precision=None`` reads ``torch.get_float32_matmul_precision()``;
    ``conv_tf32=None`` reads ``torch.backends.cudnn.allow_tf32``; ``conv_search=None`` reads
    ``torch.backends.cudnn.benchmark`` (with it on, cuDNN times its algorithms and a 3x3 FP32 convolution may run
    Winograd's: `predictor/winograd.py`). ``allow_fp8``: accept ``"fp8"`` (a projection of FP8 training; a measured
    run's precision is one of Lightning's names).
    """
    text = str(precision if precision is not None else "32-true").strip().lower()
    if allow_fp8 and text in _FP8_ALIASES:
        return Precision(FP8, "bfloat16", True, False, False, "highest", fp8=True)
    name = _ALIASES.get(text)
    if name is None:
        known = ESTIMATE_PRECISIONS if allow_fp8 else PRECISIONS
        raise ValueError(f"unknown precision {precision!r}; use one of {', '.join(known)}")
    if float32_matmul_precision is None or conv_tf32 is None or conv_search is None:
        try:
            import torch

            if float32_matmul_precision is None:
                float32_matmul_precision = torch.get_float32_matmul_precision()
            if conv_tf32 is None:
                conv_tf32 = bool(torch.backends.cudnn.allow_tf32)
            if conv_search is None:
                conv_search = bool(torch.backends.cudnn.benchmark)
        except ImportError:  # pragma: no cover - torch is a dependency; keep PyTorch's defaults
            float32_matmul_precision = float32_matmul_precision or "highest"
            conv_tf32 = True if conv_tf32 is None else conv_tf32
            conv_search = bool(conv_search)
    matmul = str(float32_matmul_precision).strip().lower()
    if matmul not in MATMUL_PRECISIONS:
        raise ValueError(f"unknown float32_matmul_precision {float32_matmul_precision!r}; "
                         f"use one of {', '.join(MATMUL_PRECISIONS)}")
    half = {"16-mixed": "float16", "16-true": "float16", "bf16-mixed": "bfloat16", "bf16-true": "bfloat16"}.get(name)
    fp32 = name == "32-true"
    return Precision(name, half, name.endswith("-mixed"), fp32 and matmul != "highest", fp32 and bool(conv_tf32),
                     matmul, conv_search=bool(conv_search))


def recorded_precision(current: dict[str, Any], precision: str | None = None, *, allow_fp8: bool = False) -> Precision:
    """The precision a report's ``current`` block records, with its TF32 and cuDNN-search flags; ``precision``: another
    training precision under the same flags."""
    return parse_precision(precision or current.get("precision") or "32-true",
                           current.get("float32_matmul_precision") or "highest",
                           conv_tf32=bool(current.get("cudnn_allow_tf32", True)),
                           conv_search=bool(current.get("cudnn_benchmark", False)), allow_fp8=allow_fp8)


def precision_note(precision: Precision, accelerator, *, has_conv: bool = True) -> str | None:
    """Why a target runs this precision differently (bf16 on a V100, no TF32 before Ampere), else None."""
    name = accelerator.name
    if precision.fp8:
        from prenet_callbacks.projection.pricing.fp8_rates import rate_source

        return (f"projection of FP8 training (torchao float8 tensorwise): Linear GEMMs in FP8 with their "
                f"amax/scale/cast kernels, everything else bf16-mixed; FP8 GEMM rate: {rate_source(accelerator)}")
    if precision.half == "bfloat16" and not accelerator.supports("bfloat16"):
        return (f"{name} has no BF16 in hardware: PyTorch emulates {precision.name} there at FP32 speed or "
                f"slower; projected with FP32 math. Use 16-mixed on {name}")
    if precision.half == "float16" and not accelerator.supports("float16"):
        return f"{name} has no fast FP16: {precision.name} projected with FP32 math"
    if precision.half is None and getattr(accelerator, "kind", "gpu") == "tpu" and not accelerator.fp32_tflops:
        return (f"{name} publishes no FP32 rate: {precision.name} is projected with a placeholder of 1 TFLOPS, not a "
                f"figure to plan with; project bf16-mixed or bf16-true for TPUs")
    if (precision.matmul_tf32 or (precision.conv_tf32 and has_conv)) and accelerator.tf32_tflops is None:
        return f"{name} has no TF32: 32-true projected with FP32 math"
    return None


def retune(spec: OpSpec, precision: Precision) -> OpSpec:
    """The spec with its TF32 flag set as this precision would on a GPU (fp32 ops only), and an FP32 convolution
    marked where cuDNN's algorithm search runs (``dims["algorithm_search"]``: it may run Winograd's kernels)."""
    if spec.dtype != "float32":
        return spec if not spec.tf32 else replace(spec, tf32=False)
    if spec.op_class == "conv":
        spec = searched(spec, precision.conv_search)
        wanted = precision.conv_tf32
    elif spec.op_class in _TF32_CLASSES:
        wanted = precision.matmul_tf32
    else:
        wanted = False
    return spec if spec.tf32 == wanted else replace(spec, tf32=wanted)


def searched(spec: OpSpec, search: bool) -> OpSpec:
    """The convolution ``spec`` with ``dims["algorithm_search"]`` set (1) or cleared as cuDNN's search runs or not."""
    if bool(spec.dims.get("algorithm_search", 0)) == bool(search):
        return spec
    dims = {k: v for k, v in spec.dims.items() if k != "algorithm_search"}
    return replace(spec, dims={**dims, "algorithm_search": 1} if search else dims)


def convert(spec: OpSpec, precision: Precision, phase: str) -> OpSpec:
    """An fp32-captured op as it runs under `precision` (used by `estimate`, which captures in fp32).

    64-true: everything in fp64 (twice the bytes). Mixed: GEMM-like ops compute in the half dtype and move half the bytes; pointwise ops on their
    half outputs move half the bytes too; norms read half and write fp32, except batch norm, which is on none
    of autocast's lists and so runs in its input's half dtype (reads and writes half); the optimizer is
    untouched. True-half: everything, optimizer included, in the half dtype.
    """
    if precision.name == "64-true" and spec.dtype == "float32":
        # everything in fp64, the optimizer too: twice the bytes, the device's FP64 rate
        return replace(spec, dtype="float64", bytes_read=spec.bytes_read * 2, bytes_written=spec.bytes_written * 2,
                       tf32=False)
    if precision.half is None or spec.dtype != "float32":
        return retune(spec, precision)
    half = precision.half
    if precision.mixed and phase == "opt":
        return spec
    if precision.mixed and spec.op_class == "norm" and not runs_in_input_dtype(spec):
        return replace(spec, bytes_read=spec.bytes_read * 0.5, tf32=False)
    return replace(spec, dtype=half, bytes_read=spec.bytes_read * 0.5, bytes_written=spec.bytes_written * 0.5,
                   tf32=False)


def runs_in_input_dtype(spec: OpSpec) -> bool:
    """A norm-class op autocast leaves in its input's dtype: batch norm. (Layer, group and RMS norm and the
    softmaxes are on autocast's fp32 list.)"""
    return spec.op_class == "norm" and "batch_norm" in spec.name


def activation_scale(precision: Precision) -> float:
    """Saved activations relative to an fp32 capture (mixed keeps a few fp32 norm inputs)."""
    if precision.half is None:
        return 2.0 if precision.name == "64-true" else 1.0
    return 0.55 if precision.mixed else 0.5


def esize(dtype: str) -> int:
    return _ESIZE.get(dtype, 4)
