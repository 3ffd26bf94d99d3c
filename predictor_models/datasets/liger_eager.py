"""Liger-Kernel's benchmark times of eager PyTorch modules: an evaluation set, never training rows.

Source: linkedin/Liger-Kernel ``benchmark/data/all_benchmark_data.csv`` (BSD 2-Clause, Copyright 2024
LinkedIn Corporation; ``public_data/LICENSES/Liger-Kernel-BSD-2-Clause.txt``), commit
ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c. `build` keeps the rows whose ``metric_name`` is ``speed``
(ms) and whose ``kernel_provider`` is eager PyTorch: ``huggingface`` (e.g. HF's ``LlamaRMSNorm``, which
upcasts to fp32 inside; ``LlamaMLP`` for swiglu/geglu), ``torch`` (``torch.nn`` modules and
functional ops) and ``megatron-unfused``. Not kept: the fused providers (``liger*``,
``torch_compile``, ``*_tiled``, ``megatron-fused``) and ``megatron`` (Megatron-Core's own
implementations, fused in part). The kept rows go to ``public_data/liger_eager.csv.xz`` with the
source's columns (``kernel_name, kernel_provider, kernel_operation_mode, x_name, x_label, x_value,
y_value_50, y_value_20, y_value_80, extra_benchmark_config_str, gpu_name, timestamp,
liger_version``). Times are ``triton.testing.do_bench`` quantiles in ms (median = ``y_value_50``),
per call of the module: ``forward``, ``backward`` (the backward of one forward) or ``full``
(forward + backward).

`load_liger_eager()` reads the committed file and returns, per row, a dict:

- ``kernel``: the Liger benchmark's name (``rms_norm``, ``layer_norm``, ``swiglu``, ``geglu``,
  ``cross_entropy``, ``softmax``, ``embedding``, ``rope``, ...), ``provider``, ``mode``;
- ``inputs``: ``{name: shape}`` of the tensors the module is called on, for the kernels whose
  benchmark shapes are known (`_SHAPES`), else None; ``module``: what to build (e.g.
  ``"LlamaRMSNorm(hidden=4096)"``, ``"LlamaMLP(hidden, intermediate, act)"``: swiglu and geglu
  time the whole MLP, its three projections included), else None;
- ``params``: the benchmark config with ``x_name: x_value`` merged in (always present);
- ``dtype``: a torch dtype name (``"bfloat16"``) from the config, or None where the config names
  none (cross_entropy, kl_div, jsd, tvd and the megatron kernels: the benchmark's tensor default,
  which the evaluation must decide);
- ``seconds`` (median), ``seconds_p20``, ``seconds_p80``; ``gpu_name`` as the source writes it and
  ``device``, the catalog name (`lookup_hardware`), or None.

Shapes follow Liger's benchmark scripts: norms, softmax and relu_squared take ``(M, N|H)``;
swiglu/geglu ``(B|bsz, T, hidden)``; cross_entropy, kl_div, tvd ``(B*T, V)``; rope and llama4_rope
``q (1, heads_q, seq, head_dim)``, ``k (1, heads_kv, seq, head_dim)``; embedding indices ``(B, T)``;
group_norm ``(M, C, H)``. The other kernels (attention variants, MoE, the fused-linear preference
losses, jsd, sparsemax, megatron_*) have ``inputs`` None: build them from ``params``.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Callable

from .rows import open_text
from .shipped_files import LIGER_FILE, SHIPPED_DIR

RAW_FILE = Path("liger_kernel") / "all_benchmark_data.csv"
EAGER_PROVIDERS = ("huggingface", "torch", "megatron-unfused")
COLUMNS = ("kernel_name", "kernel_provider", "kernel_operation_mode", "x_name", "x_label", "x_value",
           "y_value_50", "y_value_20", "y_value_80", "extra_benchmark_config_str", "gpu_name", "timestamp",
           "liger_version")


def build(data_dir: str | Path, out: Path = SHIPPED_DIR / LIGER_FILE) -> int:
    """Write the eager-PyTorch speed rows of the raw Liger CSV under ``data_dir``; returns the count."""
    path = Path(data_dir) / RAW_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    count = 0
    with open(path, newline="") as source, open_text(out, "wt") as handle:
        writer = csv.DictWriter(handle, COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in csv.DictReader(source):
            if row["metric_name"] == "speed" and row["metric_unit"] == "ms" and row["kernel_provider"] in EAGER_PROVIDERS:
                writer.writerow(row)
                count += 1
    return count


def _int(p: dict, key: str) -> int:
    return int(p[key])


def _rows_cols(rows_key: str, cols_key: str, module: str) -> Callable[[dict], tuple[dict, str]]:
    return lambda p: ({"x": (_int(p, rows_key), _int(p, cols_key))}, f"{module}({_int(p, cols_key)})")


def _mlp(batch_key: str) -> Callable[[dict], tuple[dict, str]]:
    return lambda p: ({"x": (_int(p, batch_key), _int(p, "T"), _int(p, "hidden_size"))},
                      f"LlamaMLP(hidden={_int(p, 'hidden_size')}, intermediate={_int(p, 'intermediate_size')}, "
                      f"act={p.get('hidden_act')})")


def _logits(module: str) -> Callable[[dict], tuple[dict, str]]:
    return lambda p: ({"input": (_int(p, "B") * _int(p, "T"), _int(p, "V")),
                       "target": (_int(p, "B") * _int(p, "T"), _int(p, "V"))}, module)


def _rope(p: dict) -> tuple[dict, str]:
    # the sweep variable is H (hidden size) or T (sequence length); batch 1 in Liger's benchmark
    heads_q, heads_kv = _int(p, "num_q_heads"), _int(p, "num_kv_heads")
    head_dim = int(p.get("hidden_size", p.get("H"))) // heads_q
    seq = int(p.get("seq_len", p.get("T")))
    return ({"q": (1, heads_q, seq, head_dim), "k": (1, heads_kv, seq, head_dim), "cos": (1, seq, head_dim),
             "sin": (1, seq, head_dim)}, f"apply_rotary_pos_emb(head_dim={head_dim})")


def _cross_entropy(p: dict) -> tuple[dict, str]:
    bt = _int(p, "B") * _int(p, "T")
    return {"input": (bt, _int(p, "V")), "target": (bt,)}, "CrossEntropyLoss()"


def _embedding(p: dict) -> tuple[dict, str]:
    return {"indices": (_int(p, "B"), _int(p, "T"))}, f"Embedding({_int(p, 'V')}, {_int(p, 'D')})"


def _group_norm(p: dict) -> tuple[dict, str]:
    channels = _int(p, "C")
    return ({"x": (_int(p, "M"), channels, _int(p, "H"))},
            f"GroupNorm({channels // _int(p, 'channels_per_group')}, {channels})")


def _fused_add_rms_norm(p: dict) -> tuple[dict, str]:
    shape = (_int(p, "M"), _int(p, "H"))
    return {"x": shape, "residual": shape}, f"x + residual, then LlamaRMSNorm({_int(p, 'H')})"


def _linear_ce(p: dict) -> tuple[dict, str]:
    return ({"x": (_int(p, "BT"), _int(p, "H"))},
            f"Linear({_int(p, 'H')}, {_int(p, 'V')}, bias=False) + CrossEntropyLoss()")


# kernel_name -> params -> (input shapes, module); shapes as Liger's benchmark scripts build them
_SHAPES: dict[str, Callable[[dict], tuple[dict, str]]] = {
    "rms_norm": _rows_cols("M", "H", "LlamaRMSNorm"),
    "layer_norm": _rows_cols("M", "N", "LayerNorm"),
    "softmax": _rows_cols("M", "N", "Softmax(dim=-1) of"),
    "relu_squared": _rows_cols("M", "N", "relu(x)**2 of"),
    "swiglu": _mlp("B"),
    "geglu": _mlp("bsz"),
    "cross_entropy": _cross_entropy,
    "kl_div": _logits("KLDivLoss"),
    "tvd": _logits("TVD"),
    "embedding": _embedding,
    "rope": _rope,
    "llama4_rope": _rope,
    "group_norm": _group_norm,
    "fused_add_rms_norm": _fused_add_rms_norm,
    "fused_linear_cross_entropy": _linear_ce,
}


def _number(text: str):
    value = float(text)
    return int(value) if value.is_integer() else value


def _describe(row: dict, lookup) -> dict:
    config = json.loads(row["extra_benchmark_config_str"] or "{}")
    params = {k: v for k, v in config.items() if v is not None}
    params[row["x_name"]] = _number(row["x_value"])
    dtype = config.get("dtype")
    inputs = module = None
    if row["kernel_name"] in _SHAPES:
        try:
            inputs, module = _SHAPES[row["kernel_name"]](params)
        except (KeyError, ValueError, TypeError, ZeroDivisionError):
            inputs = module = None
    try:
        device = lookup(row["gpu_name"]).name if lookup else None
    except (LookupError, ValueError):
        device = None
    return {"kernel": row["kernel_name"], "provider": row["kernel_provider"], "mode": row["kernel_operation_mode"],
            "module": module, "inputs": inputs, "params": params,
            "dtype": dtype.removeprefix("torch.") if isinstance(dtype, str) else None,
            "x_name": row["x_name"], "x_value": params[row["x_name"]],
            "seconds": float(row["y_value_50"]) * 1e-3, "seconds_p20": float(row["y_value_20"]) * 1e-3,
            "seconds_p80": float(row["y_value_80"]) * 1e-3, "gpu_name": row["gpu_name"], "device": device,
            "liger_version": row["liger_version"]}


def load_liger_eager(path: str | Path | None = None) -> list[dict]:
    """The committed eager-PyTorch Liger rows, described (see the module docstring)."""
    from predictor_models.hardware import lookup_hardware

    with open_text(Path(path) if path else SHIPPED_DIR / LIGER_FILE) as handle:
        return [_describe(row, lookup_hardware) for row in csv.DictReader(handle)]
