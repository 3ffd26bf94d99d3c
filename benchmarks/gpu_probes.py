"""Kernel probes for issue 38's open questions, timed on a lent GPU (a part of `gpu_acceptance.py`).

    PYTHONPATH=. python benchmarks/gpu_acceptance.py --only probes --out /tmp/probes.json   # seconds on a GPU

Questions that no public per-op data answers and that the H200's bf16 steps (about 30% faster predicted
than measured, `estimate_h200.py`) and any GEMM model judged on whole training steps turn on:

- **Misaligned GEMMs.** A half-precision GEMM whose leading dimension is not a multiple of 16 bytes (GPT-2's
  50,257-token head, BERT's 30,522) cannot take cuBLAS's 16-byte-aligned tensor-core kernels. Each probe times
  the misaligned GEMM beside the same GEMM padded to the next multiple of 64 elements (as the forward, the input
  gradient and the weight gradient of a linear layer lay them out), in bf16 and fp32.
- **Training-step GEMMs.** bf16 GEMMs of a linear layer's forward, input gradient and weight gradient (BERT-base's
  MLP, MPT-7B's QKV and MLP output at its benchmark's 12,288 tokens), and the weight gradient over 4K to 64K tokens:
  the shapes a training step is made of and the public rows lack (``training_gemms``: TFLOP/s and the shipped
  predictor's time over the measured one).
- **DRAM efficiency of eager streaming kernels.** Pointwise ops, casts, layer norm and softmax beyond the L2, in
  bf16 and fp32: the share of the catalog's DRAM bandwidth each reaches (the DRAM-ceiling trial of issue 38 asked
  it of Hopper; `benchmarks/results/issue38_dram_ceiling/`).
- **L2 residency.** The same streaming ops at sizes every current L2 holds, timed warm (back to back, no flush:
  how Vidur's profiler times its fp16 pointwise ops and norms, the only half-precision ones in the training rows)
  and cold, as every other probe (``l2_cold_over_warm``). Vidur's H100 adds reach 1.02-1.06 of the DRAM bandwidth at
  0.5-2x the L2, more than DRAM gives, while the H200's own cold rows of that size (a 5.9M-element bf16 mul, a
  2,376 x 2,936 bf16 layer norm) run ~1.5x longer than the predictor prices them. A training step's ops read both:
  the previous op's output (warm if it fits) and activations saved long before (cold).
- **Batch norm in bf16.** PyTorch sends a batch norm to cuDNN in fp32 and in fp16 (with fp32 weights, as autocast
  leaves them), never in bf16 (`_select_batch_norm_backend` in ATen's `Normalization.cpp`): a bf16 one runs ATen's
  own kernels, whose statistics and backward reductions launch one block per channel in NCHW (`Normalization.cuh`).
  The predictor prices it from its bytes, as if it ran at fp32's share of the bandwidth. ResNet-50's bf16-mixed
  steps on the H200 took about as long as its 32-true ones (34 against 36 ms at batch 64), where `estimate()` gives
  bf16 ~1.5x faster. Each probe times training-mode forward and backward of ResNet-50's batch norm shapes (batch 64)
  in NCHW and channels-last, in bf16, fp16 and fp32 (``batch_norm_over_fp32``: each half dtype's time over fp32's).
- **Elementwise kernels off the vectorized path.** ATen runs a pointwise op with wide vector loads only where every
  operand is contiguous and of one dtype (`gpu_kernel_impl`, `CUDALoops.cuh`); a mixed-dtype op (autocast's fp32
  residual stream plus a bf16 branch) takes the unrolled kernel that loads and casts one element at a time, and a
  broadcast or strided operand (RoPE's ``cos`` over the tokens, ``rotate_half``'s slices) the kernel that computes
  each element's offsets. Public figures put the unrolled path 13-46% behind the vectorized one on an A100 (PyTorch
  pull request 195542, bf16 to fp32 copies) and scalar loads further behind on HBM GPUs than on GDDR ones. The
  predictor prices every such op by its bytes, as if vectorized; fp32 steps have almost none of them, bf16-mixed
  transformer steps many. Each probe times a mixed fp32 + bf16 add, a bf16 multiply by a row broadcast over the
  tokens and a bf16 negation of a half-width slice at the streaming sizes (``kernel_path_over_contiguous``: each
  one's share of the bandwidth over that of the contiguous same-dtype op of as many elements).

Each row has its measured device time (CUDA events, a cold L2 before every call: `predictor_models.collection.timer`),
the shipped predictor's time for the device's catalog entry, and the achieved FLOP/s and bytes/s. Nothing here
fits anything: the rows are what a later change is judged on. Without a GPU (``smoke``) the shapes shrink and the
host's clock stands in for CUDA events, so CI runs the code path.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import torch

from predictor_models.collection.cases import norm_call, pointwise_call
from predictor_models.collection.timer import CudaBackend, time_op
from predictor_models.datasets.common import elementwise_op, gemm_op, norm_op
from predictor_models.op_spec import OpSpec

# (label, m, n, k, layout): a linear layer's three GEMMs over a vocabulary that is not a multiple of 8, laid out as
# autograd runs them: "nt" x @ W.t() (the weight stored [vocab, hidden]), "nn" grad @ W, "tn" grad.t() @ x (the
# output gradient stored [tokens, vocab]); m x k @ k x n each way
ALIGNMENT = (
    ("gpt2_head_forward", 16384, 50257, 768, "nt"),
    ("gpt2_head_input_grad", 16384, 768, 50257, "nn"),
    ("gpt2_head_weight_grad", 50257, 768, 16384, "tn"),
    ("bert_head_forward", 8192, 30522, 768, "nt"),
)
# (label, m, n, k, layout): a linear layer's three GEMMs in a training step, laid out as above ("nt" forward over the
# tokens, "nn" input gradient, "tn" weight gradient, which reduces over the tokens), then the weight gradient over ever
# more tokens. The public half-precision rows are inference shapes and benchmark grids: no k beyond 28,672 on a
# current GPU, where a training step's weight gradients reduce over 8K-64K tokens (the GEMM-network trial of issue 38,
# `benchmarks/results/issue38_gemm_scaled_network/`, is judged on these).
TRAINING_LAYERS = (("bert_base_mlp", 768, 3072, 8192), ("mpt7b_qkv", 4096, 12288, 12288),
                   ("mpt7b_mlp_out", 16384, 4096, 12288))
TRAINING_GEMMS = tuple(
    row for label, hidden, out, tokens in TRAINING_LAYERS
    for row in ((f"{label}_forward", tokens, out, hidden, "nt"), (f"{label}_input_grad", tokens, hidden, out, "nn"),
                (f"{label}_weight_grad", out, hidden, tokens, "tn"))
) + tuple((f"mpt7b_qkv_weight_grad_{tokens}_tokens", 12288, 4096, tokens, "tn") for tokens in (4096, 32768, 65536))
STREAMING_SIZES = (2**20, 2**22, 2**24, 2**26, 2**28)   # elements; the largest ones lie far beyond any L2
WARM_SIZES = (2**20, 2**21)   # elements: 4-24 MB moved, inside the L2 of an A100 (40 MB), H100, H200 or B200
WARM_OPS = (("aten::add", 2), ("aten::relu", 1))
NORM_COLS = 4096
DTYPES = ("bfloat16", "float32")
# (label, channels, height = width): ResNet-50's batch norms at its stem, first stage, third and fourth, batch 64
BATCH_NORMS = (("stem", 64, 112), ("layer1_out", 256, 56), ("layer3_out", 1024, 14), ("layer4_out", 2048, 7))
BATCH_NORM_BATCH = 64
BATCH_NORM_DTYPES = ("bfloat16", "float16", "float32")
# (label, the contiguous same-dtype op it is judged against): elementwise ops that ATen cannot vectorize
KERNEL_PATHS = (("mixed_add", "aten::add/float32"), ("broadcast_mul", "aten::mul/bfloat16"),
                ("strided_neg", "aten::relu/bfloat16"))
KERNEL_PATH_SIZES = STREAMING_SIZES[1:4]   # 4M-64M elements: 8 MB to 384 MB moved
ROW = 4096   # the broadcast row and the sliced tensor's width (a hidden size)


def misaligned(size: int) -> bool:
    """Whether a half-precision row of ``size`` elements is not a multiple of 16 bytes (8 elements)."""
    return size % 8 != 0


def padded(size: int, multiple: int = 64) -> int:
    """``size`` rounded up to ``multiple`` (what a padded vocabulary does: 50,257 -> 50,304)."""
    return -(-size // multiple) * multiple


class _HostBackend:
    """The timer's backend on a CPU: the host's clock as events (no cache to flush between calls that matters)."""

    class _Event:
        def record(self) -> None:
            self.t = time.perf_counter()

        def elapsed_time(self, other: "_HostBackend._Event") -> float:
            return (other.t - self.t) * 1e3

    def event(self) -> "_HostBackend._Event":
        return self._Event()

    def synchronize(self) -> None:
        pass

    def flush(self) -> None:
        pass


Build = Callable[[Any, Any], Callable[[], Any]]   # (torch, device) -> the call to time, as `collection.cases.Case`


def probe_cases(smoke: bool) -> list[tuple[str, str, OpSpec, Build]]:
    """``(probe, label, op, build)``: ``build(torch, device)`` allocates the inputs and returns the call to time."""
    # a smoke run (no GPU: the tests) divides every dimension but the padded vocabulary by 512: on a CPU the bf16
    # vocabulary GEMMs at 1/64 took 27 of the 28 seconds of the probes
    shrink = 512 if smoke else 1
    cases: list[tuple[str, str, OpSpec, Build]] = []
    for dtype in DTYPES:
        for label, m, n, k, layout in ALIGNMENT:
            vocab = [misaligned(v) for v in (m, n, k)]   # the dimension that is padded; it is never shrunk
            shape = [v if is_vocab else max(8, v // shrink) for v, is_vocab in zip((m, n, k), vocab)]
            for aligned in (False, True):
                dims = tuple(padded(v) if aligned and is_vocab else v for v, is_vocab in zip(shape, vocab))
                cases.append(("gemm_alignment", f"{label}_{'padded' if aligned else 'misaligned'}",
                              gemm_op(1, *dims, dtype, name="aten::mm"), _gemm(dtype, *dims, layout)))
        if dtype == "bfloat16":    # the transformer steps' precision
            for label, m, n, k, layout in TRAINING_GEMMS:
                dims = tuple(max(8, v // shrink) for v in (m, n, k))
                cases.append(("training_gemm", label, gemm_op(1, *dims, dtype, name="aten::mm"),
                              _gemm(dtype, *dims, layout)))
        for numel in STREAMING_SIZES[:2] if smoke else STREAMING_SIZES:
            numel //= 16 if smoke else 1
            for name, inputs in (("aten::relu", 1), ("aten::add", 2), ("aten::mul", 2)):
                cases.append(("streaming", name, elementwise_op(numel, inputs, dtype, name=name),
                              pointwise_call(dtype, numel, name)))
            cases.append(("streaming", "aten::_to_copy", _cast_op(numel, dtype), _cast(dtype, numel)))
            rows = max(1, numel // NORM_COLS)
            for name in ("aten::native_layer_norm", "aten::_softmax"):
                cases.append(("streaming", name, norm_op(rows, NORM_COLS, dtype, name=name),
                              norm_call(dtype, rows, NORM_COLS, name)))
        for numel in WARM_SIZES:
            numel //= 16 if smoke else 1
            rows = max(1, numel // NORM_COLS)
            for warmth in ("l2_warm", "l2_cold"):
                for name, inputs in WARM_OPS:
                    cases.append((warmth, name, elementwise_op(numel, inputs, dtype, name=name),
                                  pointwise_call(dtype, numel, name)))
                cases.append((warmth, "aten::native_layer_norm",
                              norm_op(rows, NORM_COLS, dtype, name="aten::native_layer_norm"),
                              norm_call(dtype, rows, NORM_COLS, "aten::native_layer_norm")))
    for numel in KERNEL_PATH_SIZES[:1] if smoke else KERNEL_PATH_SIZES:
        numel //= 16 if smoke else 1
        for label, _ in KERNEL_PATHS:
            cases.append(("kernel_path", label, kernel_path_op(label, numel), _kernel_path(label, numel)))
    batch = 2 if smoke else BATCH_NORM_BATCH
    for label, channels, side in BATCH_NORMS:
        channels, side = (max(4, channels // 64), max(2, side // 8)) if smoke else (channels, side)
        for dtype in BATCH_NORM_DTYPES:
            for layout in ("nchw", "channels_last"):
                for backward in (False, True):
                    cases.append(("batch_norm", f"{label}/{layout}/{'backward' if backward else 'forward'}",
                                  batch_norm_op(batch, channels, side, dtype, backward),
                                  _batch_norm(dtype, batch, channels, side, layout, backward)))
    return cases


class _Warm:
    """A backend whose calls are not preceded by an L2 flush: each repeat finds the last one's inputs in the L2."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def event(self) -> Any:
        return self._backend.event()

    def synchronize(self) -> None:
        self._backend.synchronize()

    def flush(self) -> None:
        pass


def run_probes(device: torch.device, smoke: bool, catalog_name: str | None = None) -> dict[str, Any]:
    """Every probe timed on ``device``, beside the shipped predictor's time on ``catalog_name`` (a catalog GPU)."""
    from predictor_models.hardware import lookup_hardware
    from prenet_callbacks.projection.pricing.predictor_source import resolve_predictor

    hardware = lookup_hardware(catalog_name) if catalog_name else None
    predictor = resolve_predictor(None)[0] if hardware is not None else None
    backend = CudaBackend(torch, device) if device.type == "cuda" else _HostBackend()
    rows = []
    for probe, label, op, build in probe_cases(smoke):
        try:
            call = build(torch, device)
            seconds = time_op(call, _Warm(backend) if probe == "l2_warm" else backend, budget_ms=10.0 if smoke else 25.0,
                              max_repeats=20 if smoke else 200).seconds
        except torch.cuda.OutOfMemoryError:   # a smaller GPU: the probe is left out, the others still run
            rows.append({"probe": probe, "label": label, "dtype": op.dtype, "dims": op.dims, "error": "out of memory"})
            continue
        finally:
            call = None
            if device.type == "cuda":
                torch.cuda.empty_cache()
        # each op priced alone: one call's half-precision work grid spans the sizes in it (up to 5% apart here)
        predicted = float(predictor.predict_seconds([op], hardware)[0]) if predictor is not None else None
        moved = op.bytes_read + op.bytes_written
        rows.append({"probe": probe, "label": label, "name": op.name, "dtype": op.dtype, "dims": op.dims,
                     "seconds": seconds, "predicted_s": predicted,
                     # four significant digits: a smoke run's CPU reaches ~0.001 TFLOP/s, which 3 decimals round to 0
                     "tflops": float(f"{op.flops / seconds / 1e12:.4g}"), "gbytes_per_s": round(moved / seconds / 1e9, 1),
                     "bandwidth_share": round(moved / seconds / (hardware.memory_bandwidth_gbs * 1e9), 3)
                     if hardware is not None and hardware.memory_bandwidth_gbs else None})
    return {"device": catalog_name or device.type, "smoke": smoke, "rows": rows, "summary": summarise(rows)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per misaligned GEMM its time over the padded one's per FLOP; per streaming op and dtype the bandwidth share
    (or bytes/s where the device has no catalog bandwidth) at its two largest sizes."""
    timed = [r for r in rows if "seconds" in r]
    alignment = {}
    for r in timed:
        if r["probe"] == "gemm_alignment" and r["label"].endswith("_misaligned"):
            label = r["label"].removesuffix("_misaligned")
            twin = next((p for p in timed if p["label"] == label + "_padded" and p["dtype"] == r["dtype"]), None)
            if twin is not None:
                alignment[f"{label}/{r['dtype']}"] = _ratio(twin["tflops"], r["tflops"]) if r["tflops"] else None
    streaming: dict[str, list[float]] = {}
    for r in timed:
        if r["probe"] == "streaming":
            streaming.setdefault(f"{r['label']}/{r['dtype']}", []).append(
                r["bandwidth_share"] if r["bandwidth_share"] is not None else r["gbytes_per_s"])
    training = {r["label"]: {"tflops": r["tflops"], "predicted_over_measured":
                             _ratio(r["predicted_s"], r["seconds"]) if r.get("predicted_s") else None}
                for r in timed if r["probe"] == "training_gemm"}
    # each warm row's cold twin (the same op, dtype and size) over it
    cold = {(r["label"], r["dtype"], _size(r)): r["seconds"] for r in timed if r["probe"] == "l2_cold"}
    residency = {f"{r['label']}/{r['dtype']}/{_size(r)}": round(cold[(r["label"], r["dtype"], _size(r))] / r["seconds"], 3)
                 for r in timed if r["probe"] == "l2_warm" and (r["label"], r["dtype"], _size(r)) in cold}
    return {"misaligned_slowdown_per_flop": alignment,
            "streaming_largest_two": {k: round(statistics.mean(v[-2:]), 3) for k, v in streaming.items()},
            "training_gemms": training, "l2_cold_over_warm": residency,
            "batch_norm_over_fp32": batch_norm_ratios(timed), "kernel_path_over_contiguous": kernel_path_ratios(timed)}


def kernel_path_ratios(timed: list[dict[str, Any]]) -> dict[str, float]:
    """Per kernel-path probe and size: its bytes/s over those of the contiguous same-dtype streaming op of as many
    elements (`KERNEL_PATHS`; below 1: the path is slower per byte than the vectorized kernel the predictor assumes)."""
    contiguous = {(f"{r['label']}/{r['dtype']}", _size(r)): r["gbytes_per_s"] for r in timed if r["probe"] == "streaming"}
    twins = dict(KERNEL_PATHS)
    out = {}
    for r in timed:
        twin = contiguous.get((twins.get(r["label"]), _size(r))) if r["probe"] == "kernel_path" else None
        if twin:
            out[f"{r['label']}/{_size(r)}"] = _ratio(r["gbytes_per_s"], twin)
    return out


def batch_norm_ratios(timed: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per batch norm probe (shape, layout, phase): each half dtype's time over fp32's, and the predictor's bf16 time
    over the measured one (below 1: priced too fast)."""
    rows = {(r["label"], r["dtype"]): r for r in timed if r["probe"] == "batch_norm"}
    out: dict[str, dict[str, float | None]] = {}
    for (label, dtype), r in rows.items():
        fp32 = rows.get((label, "float32"))
        if dtype == "float32" or fp32 is None:
            continue
        entry = out.setdefault(label, {})
        entry[f"{dtype}_over_fp32"] = _ratio(r["seconds"], fp32["seconds"])
        if dtype == "bfloat16":
            entry["bf16_predicted_over_measured"] = _ratio(r["predicted_s"], r["seconds"]) if r.get("predicted_s") \
                else None
    return out


def _ratio(numerator: float, denominator: float) -> float:
    """A ratio to 4 significant digits: the predictor's H200 time over a CPU's smoke-run time is ~1e-4, which
    rounding to 3 decimals turned into 0.0 on a busy machine."""
    return float(f"{numerator / denominator:.4g}")


def _size(row: dict[str, Any]) -> int:
    """A residency row's size: its elements (pointwise) or rows x columns (norms)."""
    dims = row.get("dims") or {}
    return int(dims.get("numel") or dims.get("rows", 0) * dims.get("cols", 0))


def _cast_op(numel: int, dtype: str) -> OpSpec:
    """An autocast-style cast: fp32 in, ``dtype`` out (bf16), or bf16 in, fp32 out for the fp32 row."""
    width = {"bfloat16": 2, "float32": 4}
    source = 6 - width[dtype]   # the other dtype's width (4 + 2 = 6)
    return OpSpec("data_movement", dtype, 0.0, numel * source, numel * width[dtype], {"numel": numel}, False,
                  "aten::_to_copy")


def batch_norm_op(batch: int, channels: int, side: int, dtype: str, backward: bool) -> OpSpec:
    """A training-mode batch norm of a ``batch x channels x side x side`` input as a projection prices it: captured in
    fp32 (`predictor_models.aten.costs`: one row per channel over ``batch * side**2`` values; the forward reads the
    input, weights and running statistics and writes the output and saved statistics, the backward reads the output
    gradient and the input), then under autocast for a half ``dtype`` (`projection.ops.precision.convert`: batch
    norm runs in its input's dtype, its weights stay fp32)."""
    from prenet_callbacks.projection.ops.precision import convert, parse_precision

    numel = batch * channels * side * side
    if backward:
        spec = OpSpec("norm", "float32", 8.0 * numel, 4.0 * (2 * numel + 5 * channels), 4.0 * (numel + 2 * channels),
                      {"rows": channels, "cols": batch * side * side, "backward": 1}, False,
                      "aten::native_batch_norm_backward")
    else:
        spec = OpSpec("norm", "float32", 5.0 * numel, 4.0 * (numel + 4 * channels), 4.0 * (numel + 2 * channels),
                      {"rows": channels, "cols": batch * side * side, "backward": 0}, False, "aten::native_batch_norm")
    if dtype == "float32":
        return spec
    precision = parse_precision("bf16-mixed" if dtype == "bfloat16" else "16-mixed")
    return convert(spec, precision, "bwd" if backward else "fwd")


def _batch_norm(dtype: str, batch: int, channels: int, side: int, layout: str, backward: bool) -> Build:
    """Training-mode batch norm as autocast leaves it: the input in ``dtype``, weights and statistics in fp32; the
    backward is autograd's (so the backend the forward chose), the forward's graph kept and reused."""
    def build(torch: Any, device: Any) -> Callable[[], Any]:
        fn = torch.nn.functional
        x = torch.randn(batch, channels, side, side, device=device, dtype=getattr(torch, dtype))
        if layout == "channels_last":
            x = x.contiguous(memory_format=torch.channels_last)
        weight = torch.ones(channels, device=device, requires_grad=backward)
        bias = torch.zeros(channels, device=device, requires_grad=backward)
        mean, var = torch.zeros(channels, device=device), torch.ones(channels, device=device)
        if not backward:
            return lambda: fn.batch_norm(x, mean, var, weight, bias, training=True)
        x.requires_grad_(True)
        y = fn.batch_norm(x, mean, var, weight, bias, training=True)
        grad = torch.randn_like(y)
        return lambda: torch.autograd.grad(y, (x, weight, bias), grad, retain_graph=True)
    return build


def gemm_operands(dtype: str, m: int, n: int, k: int, layout: str, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``m x k`` and ``k x n`` operands, each a transposed view where ``layout`` says "t" (stored the other way)."""
    dt = getattr(torch, dtype)
    x = torch.randn(k, m, device=device, dtype=dt).t() if layout[0] == "t" else torch.randn(m, k, device=device, dtype=dt)
    w = torch.randn(n, k, device=device, dtype=dt).t() if layout[1] == "t" else torch.randn(k, n, device=device, dtype=dt)
    return x, w


def _gemm(dtype: str, m: int, n: int, k: int, layout: str) -> Build:
    def build(torch: Any, device: Any) -> Callable[[], Any]:
        x, w = gemm_operands(dtype, m, n, k, layout, device)
        return lambda: torch.mm(x, w)
    return build


def kernel_path_op(label: str, numel: int) -> OpSpec:
    """A `KERNEL_PATHS` probe as a projection prices it: an elementwise op of ``numel`` output elements with the bytes
    its operands really move (the fp32 add reads one fp32 and one bf16 operand; the broadcast row is read once)."""
    if label == "mixed_add":
        return OpSpec("elementwise", "float32", float(numel), numel * (4 + 2), numel * 4, {"numel": numel, "inputs": 2},
                      False, "aten::add")
    if label == "broadcast_mul":
        return OpSpec("elementwise", "bfloat16", float(numel), numel * 2 + ROW * 2, numel * 2,
                      {"numel": numel, "inputs": 2}, False, "aten::mul")
    return elementwise_op(numel, 1, "bfloat16", name="aten::neg")


def kernel_path_inputs(label: str, numel: int, device: Any) -> tuple[torch.Tensor, ...]:
    """The operands of a `KERNEL_PATHS` probe with ``numel`` output elements: an fp32 and a bf16 vector; a bf16
    ``tokens x ROW`` tensor and one row to broadcast over them; or the first half of each row of a bf16 tensor twice
    as wide (a strided view)."""
    rows = max(1, numel // ROW)
    if label == "mixed_add":
        return torch.randn(numel, device=device), torch.randn(numel, device=device, dtype=torch.bfloat16)
    if label == "broadcast_mul":
        return (torch.randn(rows, ROW, device=device, dtype=torch.bfloat16),
                torch.randn(1, ROW, device=device, dtype=torch.bfloat16))
    return (torch.randn(rows, 2 * ROW, device=device, dtype=torch.bfloat16)[:, :ROW],)


def _kernel_path(label: str, numel: int) -> Build:
    """The call of a `KERNEL_PATHS` probe with ``numel`` output elements."""
    def build(torch: Any, device: Any) -> Callable[[], Any]:
        operands = kernel_path_inputs(label, numel, device)
        if label == "strided_neg":
            return lambda: torch.neg(operands[0])
        x, y = operands
        return (lambda: x + y) if label == "mixed_add" else (lambda: x * y)
    return build


def _cast(dtype: str, numel: int) -> Build:
    def build(torch: Any, device: Any) -> Callable[[], Any]:
        out = getattr(torch, dtype)
        x = torch.randn(numel, device=device, dtype=torch.float32 if dtype == "bfloat16" else torch.bfloat16)
        return lambda: x.to(out)
    return build
