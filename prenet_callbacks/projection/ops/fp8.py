"""FP8 training's op stream, as torchao's float8 "tensorwise" recipe runs each ``nn.Linear``.

`Fp8LinearMode` (a `TorchFunctionMode`, entered inside autocast's emulation so that it sees the raw
call) routes every ``F.linear`` whose weight is a trainable 2-D parameter with both sides divisible by
16 (``torch._scaled_mm``'s constraint; torchtitan's filter skips the others) through `_Fp8Linear`,
which records, per Linear per step (x: input M x K, w: weight N x K, g: grad_output M x N):

- forward: amax of x (bf16) and of w (the fp32 master), a scale each, casts x -> e4m3 and w -> e4m3,
  one FP8 GEMM x8 @ w8^T with a bf16 output; x8 and w8 are saved for backward (1 byte per element);
- backward: amax of g, a scale, cast g -> e5m2; the column-major copies ``_scaled_mm`` needs (w8 for
  grad_input, g8^T and x8 for grad_weight); two FP8 GEMMs (grad_input, grad_weight) with bf16
  outputs; autograd then casts the weight gradient to fp32, as it does for the fp32 master weight.

The bias is added in bf16 after the GEMM (torchao adds it outside ``_scaled_mm``). Convolutions,
attention and everything else run bf16-mixed (torchao swaps only ``nn.Linear``; Hugging Face GPT-2's
``Conv1D`` is not one). Each cast is the chain of small kernels eager torchao runs (`cast_ops`), or,
under ``torch.compile`` (``fused``), one amax reduction and one cast kernel.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
from torch.overrides import TorchFunctionMode

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.pricing.fp8_rates import E5M2

ALIGN = 16
_ESIZE = {torch.float32: 4, torch.bfloat16: 2, torch.float16: 2}
FP8_TARGET_HINT = "FP8 needs a Hopper/Ada/Blackwell/MI300 GPU; choose e.g. H100 or use bf16-mixed"


def _elementwise(numel: float, read: float, written: float, name: str, flops: float | None = None) -> OpSpec:
    return OpSpec("elementwise", "bfloat16", float(flops if flops is not None else numel), float(read),
                  float(written), {"numel": float(numel), "inputs": 1.0}, False, name)


def cast_ops(numel: int, src_bytes: int, fused: bool = False) -> list[OpSpec]:
    """Dynamic per-tensor scaling of one tensor to fp8.

    ``fused`` (torch.compile): one amax reduction, one amax -> scale kernel, one scaled cast. Eager, as
    torchao's Python runs it: ``abs``, ``max``; four one-element ops for the scale (to float64, clamp,
    divide, to float32); ``to(float32)`` (bf16 sources only), ``mul`` by the scale, ``clamp`` to the fp8
    range, ``to(float8)``."""
    if fused:
        return [_elementwise(numel, numel * src_bytes, 4, "torchao::amax"),
                _elementwise(1, 4, 4, "torchao::amax_to_scale"),
                _elementwise(numel, numel * src_bytes, numel, "torchao::to_float8", flops=2.0 * numel)]
    ops = [_elementwise(numel, numel * src_bytes, numel * src_bytes, "aten::abs"),
           _elementwise(numel, numel * src_bytes, 4, "aten::max")]
    ops += [_elementwise(1, 8, 8, name) for name in ("aten::_to_copy", "aten::clamp", "aten::div", "aten::_to_copy")]
    if src_bytes != 4:
        ops.append(_elementwise(numel, numel * src_bytes, numel * 4, "aten::_to_copy"))
    ops += [_elementwise(numel, numel * 4, numel * 4, "aten::mul"),
            _elementwise(numel, numel * 4, numel * 4, "aten::clamp"),
            _elementwise(numel, numel * 4, numel, "aten::_to_copy")]
    return ops


def transpose_copy(numel: int) -> OpSpec:
    """A column-major copy of an fp8 tensor (1 byte per element read and written)."""
    return OpSpec("data_movement", "bfloat16", 0.0, float(numel), float(numel), {"numel": float(numel)}, False,
                  "torchao::float8_transpose_copy")


def scaled_mm(m: int, n: int, k: int, *, e5m2: bool = False) -> OpSpec:
    """One FP8 GEMM C[m, n] = A[m, k] @ B[k, n], fp8 operands, bf16 output (``torch._scaled_mm``)."""
    dims = {"b": 1.0, "m": float(m), "n": float(n), "k": float(k), "kind": E5M2 if e5m2 else 0.0}
    return OpSpec("gemm", "float8", 2.0 * m * n * k, float(m * k + k * n), 2.0 * m * n, dims, False,
                  "aten::_scaled_mm")


def forward_ops(m: int, n: int, k: int, input_bytes: int = 2, weight_bytes: int = 4,
                fused: bool = False) -> list[OpSpec]:
    """x (m x k) and w (n x k) cast to e4m3, then out = x8 @ w8^T."""
    return cast_ops(m * k, input_bytes, fused) + cast_ops(n * k, weight_bytes, fused) + [scaled_mm(m, n, k)]


def backward_ops(m: int, n: int, k: int, fused: bool = False) -> list[OpSpec]:
    """g (m x n) cast to e5m2; grad_input = g8 @ w8 and grad_weight = g8^T @ x8 with column-major copies."""
    return (cast_ops(m * n, 2, fused) + [transpose_copy(n * k), scaled_mm(m, k, n, e5m2=True),
                                         transpose_copy(m * n), transpose_copy(m * k), scaled_mm(n, k, m, e5m2=True)])


class _Fp8Linear(torch.autograd.Function):
    """y = x @ w^T recorded as torchao's FP8 ops; computed (unrecorded) as a bf16 linear for the shapes."""

    @staticmethod
    def forward(ctx, x, weight, recorder, fused):  # noqa: ANN001
        k = int(x.shape[-1])
        m, n = x.numel() // max(k, 1), int(weight.shape[0])
        for spec in forward_ops(m, n, k, _ESIZE.get(x.dtype, 2), _ESIZE.get(weight.dtype, 4), fused):
            recorder.add(spec)
        with recorder.suppressed():
            out = torch.nn.functional.linear(x, weight.to(x.dtype))
            # what torchao keeps for backward: x and w in fp8, 1 byte per element
            saved = (torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device),
                     torch.empty(weight.shape, dtype=torch.float8_e4m3fn, device=weight.device))
        ctx.save_for_backward(*saved)
        ctx.hp = (x.detach(), weight.detach())
        ctx.shape, ctx.recorder, ctx.fused = (m, n, k), recorder, fused
        return out

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001
        m, n, k = ctx.shape
        for spec in backward_ops(m, n, k, ctx.fused):
            ctx.recorder.add(spec)
        x, weight = ctx.hp
        with ctx.recorder.suppressed():
            g = grad.reshape(-1, n)
            grad_x = (g @ weight.to(g.dtype)).reshape(x.shape) if ctx.needs_input_grad[0] else None
            grad_w = g.t() @ x.reshape(-1, k).to(g.dtype) if ctx.needs_input_grad[1] else None
        ctx.hp = None
        return grad_x, grad_w, None, None


def fp8_eligible(weight: Any) -> bool:
    """A Linear weight torchao's FP8 path takes: a trainable 2-D parameter, both sides divisible by 16."""
    return (isinstance(weight, torch.Tensor) and weight.dim() == 2 and weight.requires_grad and weight.is_leaf
            and weight.is_floating_point() and all(int(s) % ALIGN == 0 for s in weight.shape))


class Fp8LinearMode(TorchFunctionMode):
    """Routes eligible ``F.linear`` calls through `_Fp8Linear`; counts them (``linears``, ``skipped``)."""

    def __init__(self, recorder: Any, dtype: torch.dtype = torch.bfloat16, *, fused: bool = False) -> None:
        super().__init__()
        self.recorder = recorder
        self.fused = fused
        self.dtype = dtype
        self.linears = 0
        self.skipped: set[tuple[int, ...]] = set()

    def __enter__(self) -> "Fp8LinearMode":
        # nn.Linear calls F.linear; a library may have swapped it for its own (DeepSpeed's ZeRO-3 init leaves
        # a wrapper that calls matmul inside an autograd Function). torchao's Float8Linear runs its own path
        # whatever F.linear is, so the capture pins PyTorch's linear and restores what was there.
        self._saved_linear = torch.nn.functional.linear
        torch.nn.functional.linear = torch._C._nn.linear
        return super().__enter__()

    def __exit__(self, *exc: Any) -> Any:
        torch.nn.functional.linear = self._saved_linear
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if getattr(func, "__name__", "") != "linear":
            return func(*args, **kwargs)
        names = ("input", "weight", "bias")
        bound = dict(zip(names, args))
        bound.update(kwargs)
        x, weight, bias = bound.get("input"), bound.get("weight"), bound.get("bias")
        if not (isinstance(x, torch.Tensor) and fp8_eligible(weight)) or int(x.shape[-1]) != int(weight.shape[1]):
            if isinstance(weight, torch.Tensor) and weight.requires_grad:
                self.skipped.add(tuple(int(s) for s in weight.shape))
            return func(*args, **kwargs)
        self.linears += 1
        if x.dtype != self.dtype:
            x = x.to(self.dtype)       # torchao casts the input to autocast's dtype first
        out = _Fp8Linear.apply(x, weight, self.recorder, self.fused)
        if bias is not None:
            out = out + bias.to(out.dtype)
        return out


def fp8_notes(linears: int, skipped: Sequence[tuple[int, ...]], *, compiled: bool = False) -> list[str]:
    """What the FP8 projection priced in FP8 and what it left in bf16."""
    notes = [f"FP8: {linears} Linear call(s) per forward priced as torchao float8 tensorwise (3 FP8 GEMMs each, "
             "amax/scale/cast of input, weight and grad_output, column-major fp8 copies); convolutions, attention "
             "and the rest bf16-mixed"]
    if skipped:
        shapes = ", ".join("x".join(map(str, s)) for s in sorted(skipped)[:4])
        notes.append(f"FP8: Linear weights with a side not divisible by {ALIGN} stay bf16 ({shapes}"
                     f"{', ...' if len(skipped) > 4 else ''}), as torch._scaled_mm requires")
    if linears and not compiled:
        notes.append("FP8 in eager mode: each cast is ~10 small kernels (abs, max, scale, mul, clamp, to), issued "
                     "from Python; torchao float8 pays off under torch.compile (compile='default' fuses them)")
    if not linears:
        notes.append("FP8: the model has no nn.Linear that FP8 training converts (Hugging Face GPT-2's Conv1D layers "
                     "are not nn.Linear): the projection equals bf16-mixed")
    return notes


def check_fp8_targets(accelerators: Sequence, labels: Sequence[str]) -> None:
    """Refuse FP8 on targets without FP8 tensor cores, naming them and the fix."""
    lacking = [label for acc, label in zip(accelerators, labels) if not acc.supports("float8")]
    if lacking:
        raise ValueError(f"precision='fp8' on {', '.join(lacking)}: no FP8 in hardware. {FP8_TARGET_HINT}")


def fp8_targets(chosen: list, *, explicit: bool) -> tuple[list, list[str]]:
    """FP8 targets: named ones must all have FP8 (else ValueError); the default set keeps its FP8 GPUs."""
    if explicit:
        check_fp8_targets([t.accelerator for t in chosen], [t.label for t in chosen])
        return chosen, []
    kept = [t for t in chosen if t.accelerator.supports("float8")]
    dropped = [t.label for t in chosen if t not in kept]
    return kept, ([f"FP8: default targets without FP8 left out ({', '.join(dropped)})"] if dropped else [])
