"""A 3x3 FP32 convolution as cuDNN's (and MIOpen's) Winograd algorithm runs it: the other price it may have.

For an ungrouped 3x3, stride-1, same-padded, undilated 2-D convolution computed in FP32 (not TF32), cuDNN's
algorithm search (``torch.backends.cudnn.benchmark = True``, Lightning's ``Trainer(benchmark=True)``) times the
algorithms it has and keeps the fastest, a Winograd kernel where it beats the direct (implicit-GEMM) one. Without the
search PyTorch takes cuDNN's heuristic pick, which no public measurement here shows, so the rule applies only to
convolutions marked as searched (``dims["algorithm_search"]``, set from the flag by the projection's `retune`).
DeepBench's FP32 training convolutions name the forward algorithm cuDNN's search chose: on the V100 and T4,
WINOGRAD or WINOGRAD_NONFUSED for 26 of the 30 such layers, on the P100, GTX 1080 Ti and TITAN Xp for 23 (FFT for 2
more). Winograd's minimal filtering F(m x m, 3 x 3) computes an m x m output tile
from an (m+2) x (m+2) input tile with (m+2)^2 multiplies where the direct form takes 9 m^2; the non-fused algorithm,
F(4x4, 3x3), turns the convolution into 36 independent GEMMs over the tiles between an input transform and an
output transform: a quarter of the direct multiplies. DeepBench's V100 runs such layers at up to 2.4x the FP32 peak
counted in direct FLOPs (36.9 "TFLOP/s" on a 15.7 TFLOP/s GPU); the direct-kernel network, which never goes below
the direct roofline and never saw those rows (training drops rows faster than 2/3 of it), priced them 2-4x too slow.

Priced from what the predictor already knows, with no constant fitted:

- the 36 tile GEMMs as the 1x1 convolution kernel they are, over 36 images of ceil(h/4) x ceil(w/4) tiles (a 1x1
  forward for the forward and the data gradient, a 1x1 weight gradient for the weight gradient), by the predictor's
  own convolution pricing (the monotone network) before any calibration;
- each transform (input, filter or output gradient, output) as a streaming kernel at its DRAM roofline: it reads
  its input once and writes the transformed tiles (cuDNN transforms the filter on every call).

The predictor takes the lesser of this and the direct price per kernel (forward, data gradient, weight gradient), as
the library's search does, before a calibration corrects it as the convolution kernel it is. Physical by
construction: tiles are whole (an output side of 7 takes two 4-wide tiles) and both parts are monotone in the work,
so the price never falls as the work grows; the lesser of two prices each priced on every device keeps the device
envelope (`dominance.py`), applied after; the bound (`Predictor.bound_seconds`) is the fastest algorithm's roofline.

Half precision and TF32 run on tensor cores, where an implicit GEMM beats a Winograd kernel: FP32 only (a
TF32-flagged convolution where TF32 does not exist, before Ampere or on an AMD GPU, is an FP32 one). Which tile:
F(4x4, 3x3) against F(2x2, 3x3) and F(6x6, 3x3) on DeepBench's eligible FP32 kernels (the development set), chosen by
the worst GPU and kernel group (`python benchmarks/winograd_trial.py`).
"""
from __future__ import annotations

import math

import numpy as np

from predictor_models.op_spec import OpSpec

from .bound import rooflines

TILE = 4                    # output tile edge m of F(m x m, 3 x 3)
_FP32_BYTES = 4.0
# vendors whose convolution library has Winograd kernels (cuDNN, MIOpen); a TPU's XLA convolutions have none
VENDORS = frozenset({"nvidia", "amd"})


def eligible(op: OpSpec) -> bool:
    """A dense 3x3, stride-1, same-padded, undilated 2-D convolution kernel computed in FP32 (not TF32), in a run
    whose cuDNN times its algorithms (``dims["algorithm_search"]``: ``torch.backends.cudnn.benchmark``)."""
    d = op.dims
    return (op.op_class == "conv" and op.dtype == "float32" and not op.tf32 and bool(d.get("algorithm_search", 0))
            and d.get("kh") == 3 and d.get("kw") == 3 and d.get("stride", 1) == 1 and d.get("dilation", 1) == 1
            and int(d.get("groups", 1) or 1) == 1 and not d.get("transposed", 0) and d.get("spatial_dims", 2) == 2
            and d.get("h_out") == d.get("h_in") and d.get("w_out") == d.get("w_in")
            and all(float(d.get(k, 0) or 0) > 0 for k in ("n", "c_in", "c_out", "h_in", "w_in")))


def on_devices(devices) -> np.ndarray:
    """Which devices' libraries have the algorithm."""
    return np.array([str(getattr(d, "vendor", "") or "").lower() in VENDORS for d in devices], dtype=bool)


def _streaming(numel: float, read: float, name: str) -> OpSpec:
    """A transform: reads ``read`` elements, writes ``numel``."""
    return OpSpec("elementwise", "float32", numel, read * _FP32_BYTES, numel * _FP32_BYTES,
                  {"numel": numel, "inputs": 1.0}, False, name)


def kernels(op: OpSpec) -> tuple[OpSpec, list[OpSpec]]:
    """What Winograd runs for one convolution kernel ``op`` (its ``grad``: 0 forward, 1 data gradient, 2 weight
    gradient): the 36 tile GEMMs, as the 1x1 convolution kernel they are over 36 images of tiles (forward and data
    gradient: a 1x1 forward; weight gradient: a 1x1 weight gradient), and the streaming transforms around them."""
    d = op.dims
    a2 = float((TILE + 2) ** 2)
    n, c, k = (float(d[key]) for key in ("n", "c_in", "c_out"))
    h, w = float(d["h_in"]), float(d["w_in"])
    th, tw = float(math.ceil(h / TILE)), float(math.ceil(w / TILE))   # same padding: input and output tiles alike
    tiles = n * th * tw
    image_c, image_k = n * c * h * w, n * k * h * w
    grad = int(d.get("grad", 0) or 0)
    if grad == 2:   # weight gradient: per tile position, c x k reduced over the tiles
        c_in, c_out = c, k
        transforms = [_streaming(a2 * tiles * c, image_c, "winograd:input"),
                      _streaming(a2 * tiles * k, image_k, "winograd:grad_output"),
                      _streaming(9.0 * c * k, a2 * c * k, "winograd:weight")]
    else:           # forward (c -> k) or data gradient (k -> c): the same algorithm with the roles swapped
        c_in, c_out, src = (c, k, image_c) if grad == 0 else (k, c, image_k)
        transforms = [_streaming(a2 * tiles * c_in, src, "winograd:input"),
                      _streaming(a2 * c * k, 9.0 * c * k, "winograd:filter"),
                      _streaming(image_k if grad == 0 else image_c, a2 * tiles * c_out, "winograd:output")]
    dims = {"n": a2 * n, "c_in": c_in, "c_out": c_out, "h_in": th, "w_in": tw, "h_out": th, "w_out": tw,
            "kh": 1, "kw": 1, "stride": 1, "groups": 1, "transposed": 0, "spatial_dims": 2,
            "backward": int(grad == 2), "grad_input": 0, "grad_weight": int(grad == 2)}
    pixels = a2 * tiles
    gemm = OpSpec("conv", "float32", 2.0 * pixels * c_in * c_out, (pixels * c_in + c_in * c_out) * _FP32_BYTES,
                  pixels * c_out * _FP32_BYTES, dims, False, "winograd:gemm")
    return gemm, transforms


def alternatives(ops: list[OpSpec], devices, price) -> tuple[np.ndarray, np.ndarray] | None:
    """The Winograd price of each eligible convolution kernel among ``ops`` on each device: ``(rows, seconds)``, with
    ``seconds`` of shape ``(len(rows), len(devices))`` and infinite on a device whose library lacks the algorithm;
    None if no kernel is eligible. ``price(ops, devices)`` prices the tile GEMMs (the predictor's own convolution
    pricing before any calibration, monotone in the work); the transforms are priced at their DRAM roofline, monotone
    in their bytes by construction as well. The predictor takes the lesser of this and the direct price."""
    rows = [i for i, op in enumerate(ops) if eligible(op)]
    where = np.flatnonzero(on_devices(devices))
    if not rows or not where.size:
        return None
    on = [devices[j] for j in where]
    gemms, transforms, owner = [], [], []
    for r, i in enumerate(rows):
        gemm, parts = kernels(ops[i])
        gemms.append(gemm)
        transforms += parts
        owner += [r] * len(parts)
    composite = price(gemms, on)
    np.add.at(composite, np.asarray(owner), rooflines(transforms, on))
    seconds = np.full((len(rows), len(devices)), np.inf)
    seconds[:, where] = composite
    return np.asarray(rows), seconds


def least_bound(direct: np.ndarray, ops: list[OpSpec], device, kernels_of) -> np.ndarray:
    """``direct`` (each op's direct roofline on ``device``) lowered, for a convolution with an eligible kernel, to the
    roofline of the fastest algorithm: per kernel the lesser of its direct roofline and Winograd's (the tile GEMMs'
    and the transforms' rooflines). ``kernels_of(op)``: the kernels the predictor prices the op as."""
    if not on_devices([device])[0]:
        return direct
    for i, op in enumerate(ops):
        parts = kernels_of(op) if op.op_class == "conv" else None
        if not parts or not any(eligible(kernel) for kernel, _ in parts):
            continue
        total = 0.0
        for kernel, multiplicity in parts:
            least = rooflines([kernel], [device])[0, 0]
            if eligible(kernel):
                gemm, transforms = kernels(kernel)
                least = min(least, float(rooflines([gemm, *transforms], [device]).sum()))
            total += multiplicity * least
        direct[i] = min(direct[i], total)
    return direct

