"""The one description of an op that every layer of the project shares.

The profiler turns captured aten calls into `OpSpec`s, the predictor predicts their time on a
device, and the training data loaders build them from public measurements. Keep it small and
plain: it is also what the JSON report stores per layer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Op classes the predictor models separately. "other" is the fallback: predicted by the physical
# bound with a default utilisation and counted as unmodelled in reports.
OP_CLASSES: tuple[str, ...] = (
    "gemm",           # mm, addmm, bmm, baddbmm, linear (and their backward GEMMs)
    "conv",           # convolution 1d/2d/3d, grouped, depthwise, transposed, and backward
    "attention",      # scaled_dot_product_attention kernels (flash, efficient, math) fwd/bwd
    "norm",           # batch/layer/group/rms norm and softmax / log_softmax
    "elementwise",    # pointwise math, activations, dropout, reductions
    "pooling",        # max/avg/adaptive pooling fwd/bwd
    "embedding",      # embedding gather and its backward scatter-add
    "recurrent",      # LSTM / GRU / RNN cells and layers
    "optimizer",      # optimizer update kernels (SGD, Adam/AdamW, fused or foreach)
    "data_movement",  # copies, cat, index, transposes that materialise, host-device copies
    "communication",  # all-reduce, reduce-scatter, all-gather
    "other",
)

DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16", "float64", "float8")


@dataclass(frozen=True)
class OpSpec:
    """One op's static description, enough to bound and predict its time on any device.

    Args:
        op_class: one of `OP_CLASSES`.
        dtype: compute dtype name, one of `DTYPES`.
        flops: floating-point operations (a multiply-add counts 2), as `torch.utils.flop_counter`.
        bytes_read: bytes of inputs (and weights) read, assuming each is read once.
        bytes_written: bytes of outputs written.
        dims: class-specific shape features, e.g. gemm ``{"b": 1, "m": 512, "n": 1024, "k": 768}``,
            conv ``{"n":..,"c_in":..,"c_out":..,"h_out":..,"w_out":..,"kh":..,"kw":..,"groups":..}`` (and
            ``"dilation"`` where it is not 1: such a convolution runs no Winograd kernel).
        tf32: True when an fp32 matmul/conv may use TF32 tensor cores
            (``torch.backends.cuda.matmul.allow_tf32`` / ``float32_matmul_precision`` != "highest").
        name: free-text label (aten op name, e.g. ``"aten::addmm"``), for reports only.
    """

    op_class: str
    dtype: str
    flops: float
    bytes_read: float
    bytes_written: float
    # `dims` (a dict) is left out of ``==`` and ``hash``: two specs equal in everything else compare
    # equal, and the callers that count ops in a dict keyed by OpSpec merge them. Use `key` where
    # the shape features must tell ops apart.
    dims: dict[str, float] = field(default_factory=dict, hash=False, compare=False)
    tf32: bool = False
    name: str = ""

    @property
    def key(self) -> tuple:
        """The op's content, dims included, as a hashable tuple; the label `name` is not in it.

        Class, dtype, FLOPs, bytes read and written, TF32, and the dims as sorted ``(key, value)``
        pairs. Callers that must also tell op names apart (the predictor reads a softmax / heavy
        flag from the name) pair it with the name: ``(spec.name, spec.key)``.
        """
        return (self.op_class, self.dtype, self.flops, self.bytes_read, self.bytes_written, self.tf32,
                tuple(sorted(self.dims.items())))

    @property
    def bytes_moved(self) -> float:
        return self.bytes_read + self.bytes_written

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per byte moved (0 when nothing is moved)."""
        moved = self.bytes_moved
        return self.flops / moved if moved > 0 else 0.0
