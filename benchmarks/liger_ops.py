"""The per-op predictor against eager PyTorch modules measured on public GPUs, most in bf16 (Liger-Kernel's data).

    python benchmarks/liger_ops.py [--json benchmarks/results/liger_ops.json]

Rows: linkedin/Liger-Kernel's benchmark of its eager providers (`predictor_models.datasets.liger_eager`, shipped
with the package, BSD-2): Hugging Face's ``LlamaRMSNorm``, RoPE and ``LlamaMLP`` (SwiGLU, GeGLU), ``torch.nn``'s
``LayerNorm``, ``GroupNorm``, ``Softmax``, ``Embedding`` and ``relu(x)**2``, timed by ``triton.testing.do_bench``
per call of the module (``forward``, the ``backward`` of one forward, or ``full``, both) on A100, H100, B200 and
RTX GPUs. Kept: the rows whose inputs, module and dtype are known (`MODULES`); cross-entropy and the divergence
losses name no dtype, and the fused or multi-kernel attention variants have no shapes, so they are left out.

Each module is built on ``meta``, its forward run and then the backward of its output against a gradient of ones
(the module's input and weights require gradients, as Liger's benchmark has them), every aten op recorded and
priced by the shipped predictor on the row's GPU; a mode's prediction is the sum of its ops' device seconds.
Nothing here adds the host: ``do_bench`` times calls back to back with CUDA events, so a small module's call lasts
as long as the host takes to issue its kernels (eager PyTorch: several microseconds each). A row is judged only
where its measured time is at least `HOST_FLOOR_S` per kernel (device-bound: the host cannot be what it measured);
the others are counted and reported apart, with their ratios, as host-bound.

Reported per (kernel, GPU, dtype, mode): the rows, and the median predicted/measured ratio; overall, for the
device-bound rows, the median absolute error by dtype. This is a development set for the predictor's
half-precision norms and pointwise ops (issue 38): nothing is fitted on it here.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from predictor_models.aten.costs import describe_aten_op  # noqa: E402
from predictor_models.aten.taxonomy import is_free_op  # noqa: E402

HOST_FLOOR_S = 20e-6   # measured seconds per kernel below which eager PyTorch's host may be what was timed


class _RMSNorm(nn.Module):
    """Hugging Face's ``LlamaRMSNorm``: the statistics in fp32, the result cast back and scaled."""

    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


class _AddRMSNorm(_RMSNorm):
    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:   # type: ignore[override]
        return super().forward(x + residual)


class _ReluSquared(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) ** 2


class _Rope(nn.Module):
    """Hugging Face's ``apply_rotary_pos_emb`` (``rotate_half``) on q and k."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor,
                sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)

        def rotate(x: torch.Tensor) -> torch.Tensor:
            half = x.shape[-1] // 2
            return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

        return q * cos + rotate(q) * sin, k * cos + rotate(k) * sin


class _LlamaMLP(nn.Module):
    """Hugging Face's ``LlamaMLP``: down(act(gate(x)) * up(x)), no biases."""

    def __init__(self, hidden: int, intermediate: int, act: str) -> None:
        super().__init__()
        self.gate = nn.Linear(hidden, intermediate, bias=False)
        self.up = nn.Linear(hidden, intermediate, bias=False)
        self.down = nn.Linear(intermediate, hidden, bias=False)
        self.act: Callable[[torch.Tensor], torch.Tensor] = (
            nn.functional.silu if act == "silu" else lambda x: nn.functional.gelu(x, approximate="tanh"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.act(self.gate(x)) * self.up(x))


def _eps(p: dict) -> float:
    return float(p.get("eps", 1e-6))


# kernel -> the module of a row (from its parameters); rows of other kernels are left out
MODULES: dict[str, Callable[[dict], nn.Module]] = {
    "rms_norm": lambda p: _RMSNorm(int(p["H"]), _eps(p)),
    "fused_add_rms_norm": lambda p: _AddRMSNorm(int(p["H"]), _eps(p)),
    "layer_norm": lambda p: nn.LayerNorm(int(p["N"]), eps=_eps(p)),
    "group_norm": lambda p: nn.GroupNorm(int(p["C"]) // int(p["channels_per_group"]), int(p["C"]), eps=_eps(p)),
    "softmax": lambda p: nn.Softmax(dim=-1),
    "relu_squared": lambda p: _ReluSquared(),
    "rope": lambda p: _Rope(),
    "swiglu": lambda p: _LlamaMLP(int(p["hidden_size"]), int(p["intermediate_size"]), "silu"),
    "geglu": lambda p: _LlamaMLP(int(p["hidden_size"]), int(p["intermediate_size"]), "gelu"),
    "embedding": lambda p: nn.Embedding(int(p["V"]), int(p["D"])),
}


class _Ops(TorchDispatchMode):
    """Every aten op that launches work, as its `OpSpec`."""

    def __init__(self) -> None:
        super().__init__()
        self.specs: list[Any] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        out = func(*args, **(kwargs or {}))
        if not is_free_op(func):
            self.specs.append(describe_aten_op(func, args, kwargs, out, tf32=False))
        return out


def captured_ops(kernel: str, params: dict, inputs: dict[str, tuple], dtype: str) -> tuple[list, list]:
    """(forward ops, backward ops) of one row's module on meta."""
    torch_dtype = getattr(torch, dtype)
    with torch.device("meta"):
        module = MODULES[kernel](params).to(torch_dtype)
        tensors = []
        for name, shape in inputs.items():
            if kernel == "embedding":
                tensors.append(torch.zeros(shape, dtype=torch.long))
            else:
                tensors.append(torch.empty(shape, dtype=torch_dtype, requires_grad=name not in ("cos", "sin")))
    forward, backward = _Ops(), _Ops()
    with forward:
        out = module(*tensors)
    outs = out if isinstance(out, tuple) else (out,)
    with backward:
        torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
    return forward.specs, backward.specs


def evaluate(predictor=None) -> dict[str, Any]:
    from predictor_models.datasets.liger_eager import load_liger_eager
    from predictor_models.hardware import lookup_hardware
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor = predictor or default_predictor()[0]
    rows, skipped = [], {}
    ops_of: dict[tuple, tuple[list, list]] = {}
    for row in load_liger_eager():
        kernel, dtype = row["kernel"], row["dtype"]
        why = ("no module" if kernel not in MODULES or row["inputs"] is None else "no dtype" if dtype is None
               else "not a catalog GPU" if row["device"] is None else None)
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        key = (kernel, json.dumps(row["params"], sort_keys=True, default=str), dtype)
        if key not in ops_of:
            ops_of[key] = captured_ops(kernel, row["params"], row["inputs"], dtype)
        forward, backward = ops_of[key]
        specs = {"forward": forward, "backward": backward, "full": forward + backward}[row["mode"]]
        device = lookup_hardware(row["device"])
        predicted = float(predictor.predict_matrix(specs, [device])[:, 0].sum()) if specs else 0.0
        measured = float(row["seconds"])
        rows.append({"kernel": kernel, "provider": row["provider"], "mode": row["mode"], "dtype": dtype,
                     "gpu": row["device"], "params": row["params"], "kernels": len(specs),
                     "measured_s": measured, "predicted_s": predicted, "ratio": predicted / measured,
                     "device_bound": measured >= HOST_FLOOR_S * max(len(specs), 1)})
    return {"rows": rows, "skipped": skipped, "summary": summarise(rows)}


def summarise(rows: list[dict]) -> dict[str, Any]:
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(f"{row['kernel']} {row['gpu']} {row['dtype']} {row['mode']}", []).append(row)
    by_group = {name: {"rows": len(g), "device_bound": sum(r["device_bound"] for r in g),
                       "median_ratio": round(statistics.median(r["ratio"] for r in g), 3)} for name, g in sorted(groups.items())}
    judged = [r for r in rows if r["device_bound"]]
    by_dtype = {}
    for dtype in sorted({r["dtype"] for r in judged}):
        errors = [abs(r["ratio"] - 1.0) for r in judged if r["dtype"] == dtype]
        ratios = [r["ratio"] for r in judged if r["dtype"] == dtype]
        by_dtype[dtype] = {"rows": len(errors), "median_abs_error": round(statistics.median(errors), 3),
                           "median_ratio": round(statistics.median(ratios), 3), "worst_ratio":
                               round(max(ratios, key=lambda x: abs(x - 1.0)), 3)}
    host = [r["ratio"] for r in rows if not r["device_bound"]]
    return {"rows": len(rows), "device_bound": len(judged), "by_dtype": by_dtype,
            "host_bound": {"rows": len(host), "median_ratio": round(statistics.median(host), 3) if host else None},
            "groups": by_group}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/liger_ops.json"))
    args = parser.parse_args()
    result = evaluate()
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    out = {"benchmark": "liger_ops", "command": "python benchmarks/liger_ops.py", "date": time.strftime("%Y-%m-%d %H:%M"),
           "predictor": (default_predictor()[0].metadata or {}).get("version"), "host_floor_s": HOST_FLOOR_S,
           **result}
    summary = out["summary"]
    print(json.dumps({k: v for k, v in summary.items() if k != "groups"}, indent=1))
    for name, group in summary["groups"].items():
        print(f"{name:58s} rows {group['rows']:2d} device-bound {group['device_bound']:2d} pred/meas {group['median_ratio']}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
