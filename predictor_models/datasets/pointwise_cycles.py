"""Measured per-element cost of pointwise ops per SM generation and float dtype, from OpenXLA.

Source: OpenXLA's ``hlo_op_profiles_data.h`` (Apache-2.0, Copyright 2023 The OpenXLA Authors; the
numbers were measured by XLA's ``hlo_op_profiler``: GPU clock cycles per element of one elementwise
HLO op), as parsed into ``xla_gpu_perf_tables/xla_hlo_op_profiles_DERIVED.csv`` (see that folder's
SOURCE.md). Only the float element types are kept. `build` writes the committed table,
``predictor_models/pretrained/pointwise_cycles.json``, ``{sm_gen: {opcode: {dtype: cycles_per_element}}}``
with ``sm_gen`` as ``"sm_60"`` .. ``"sm_100"`` (XLA's ``sm_100_B200``) and dtype as XLA writes it
(``F16``, ``F32``, ``F64``; the table has **no BF16 entries**, see below)::

    python -m predictor_models.datasets.pointwise_cycles --data ../shared/data

The table is sparse: sm_80 (A100) has only 19 float entries (of 48 on sm_90) and ``erf`` is measured only on sm_100.
Its generations: sm_60 (P100), sm_70 (V100), sm_75 (Turing), sm_80 (A100), sm_86 (GA10x), sm_90
(H100), sm_100 (B200). Some entries are noisy across generations (fp32 ``tanh``: 167 cycles on sm_75,
504 on sm_80, 190 on sm_86, 467 on sm_90, 137 on sm_100).

`cycles_per_element(aten_name, dtype, sm)` prices a PyTorch aten op as the sum of the XLA opcodes
below, each taken from the nearest SM generation at or below ``sm`` that measured it (per opcode;
``allow_newer=True`` falls back to the nearest newer generation when no older one has it, e.g. for
``erf`` before sm_100). It returns None for an op not in the map, or when an opcode has no entry.
``bfloat16`` is priced with the ``F16`` entries (a documented proxy: eager PyTorch computes both
half types in fp32 registers, so the cost is the fp32 math plus conversions, which the F16
measurements include).

Aten base name -> XLA opcodes (``name`` is taken as its base: ``aten::exp``, ``exp.default``,
``exp_``, ``_foreach_exp`` and ``special_expit`` style prefixes are stripped):

==========================  ===========================================================
aten base name               opcodes (count)
==========================  ===========================================================
exp                          exponential
exp2                         exponential, multiply
expm1                        exponential-minus-one
log                          log
log2, log10                  log, multiply
log1p                        log-plus-one
sqrt / rsqrt                 sqrt / rsqrt
reciprocal                   divide
pow                          power
div / mul / add / sub, rsub  divide / multiply / add / subtract
sin / cos / tan              sine / cosine / sine, cosine, divide
atan2                        atan2
erf                          erf
erfc                         erf, subtract
tanh                         tanh
sigmoid (expit)              exponential, add, divide            (1 / (1 + exp(-x)))
logsigmoid                   exponential, log-plus-one
silu                         exponential, add, divide, multiply  (x * sigmoid(x))
gelu                         erf, multiply x3, add               (exact, erf form)
softplus                     exponential, log-plus-one
mish                         exponential, log-plus-one, tanh, multiply
elu / selu / celu            exponential-minus-one, multiply (selu, celu: x2)
tanh_backward                multiply x2, subtract               (g * (1 - y^2))
sigmoid_backward             multiply x2, subtract               (g * y * (1 - y))
silu_backward                exponential, add, divide, multiply x3, add
gelu_backward                erf, exponential, multiply x5, add x2
addcmul / addcdiv / lerp     multiply x2, add / divide, multiply, add / subtract, multiply, add
==========================  ===========================================================

Ops without a transcendental or divide (relu, neg, abs, clamp, where, copies ...) are not in the
map: XLA did not measure them (they cost about one cycle per element and are memory-bound).
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Sequence

TABLE_PATH = Path(__file__).resolve().parent.parent / "pretrained" / "pointwise_cycles.json"
RAW_FILE = Path("xla_gpu_perf_tables") / "xla_hlo_op_profiles_DERIVED.csv"
FLOAT_TYPES = ("F16", "BF16", "F32", "F64")

ATEN_TO_OPCODES: dict[str, tuple[tuple[str, int], ...]] = {
    "exp": (("exponential", 1),),
    "exp2": (("exponential", 1), ("multiply", 1)),
    "expm1": (("exponential-minus-one", 1),),
    "log": (("log", 1),),
    "log2": (("log", 1), ("multiply", 1)),
    "log10": (("log", 1), ("multiply", 1)),
    "log1p": (("log-plus-one", 1),),
    "sqrt": (("sqrt", 1),),
    "rsqrt": (("rsqrt", 1),),
    "reciprocal": (("divide", 1),),
    "pow": (("power", 1),),
    "div": (("divide", 1),),
    "true_divide": (("divide", 1),),
    "mul": (("multiply", 1),),
    "add": (("add", 1),),
    "sub": (("subtract", 1),),
    "rsub": (("subtract", 1),),
    "sin": (("sine", 1),),
    "cos": (("cosine", 1),),
    "tan": (("sine", 1), ("cosine", 1), ("divide", 1)),
    "atan2": (("atan2", 1),),
    "erf": (("erf", 1),),
    "erfc": (("erf", 1), ("subtract", 1)),
    "tanh": (("tanh", 1),),
    "sigmoid": (("exponential", 1), ("add", 1), ("divide", 1)),
    "expit": (("exponential", 1), ("add", 1), ("divide", 1)),
    "logsigmoid": (("exponential", 1), ("log-plus-one", 1)),
    "log_sigmoid_forward": (("exponential", 1), ("log-plus-one", 1)),
    "silu": (("exponential", 1), ("add", 1), ("divide", 1), ("multiply", 1)),
    "gelu": (("erf", 1), ("multiply", 3), ("add", 1)),
    "softplus": (("exponential", 1), ("log-plus-one", 1)),
    "mish": (("exponential", 1), ("log-plus-one", 1), ("tanh", 1), ("multiply", 1)),
    "elu": (("exponential-minus-one", 1), ("multiply", 1)),
    "selu": (("exponential-minus-one", 1), ("multiply", 2)),
    "celu": (("exponential-minus-one", 1), ("multiply", 2)),
    "tanh_backward": (("multiply", 2), ("subtract", 1)),
    "sigmoid_backward": (("multiply", 2), ("subtract", 1)),
    "silu_backward": (("exponential", 1), ("add", 2), ("divide", 1), ("multiply", 3)),
    "gelu_backward": (("erf", 1), ("exponential", 1), ("multiply", 5), ("add", 2)),
    "addcmul": (("multiply", 2), ("add", 1)),
    "addcdiv": (("divide", 1), ("multiply", 1), ("add", 1)),
    "lerp": (("subtract", 1), ("multiply", 1), ("add", 1)),
}

_DTYPES = {"float16": "F16", "half": "F16", "f16": "F16", "fp16": "F16",
           "bfloat16": "BF16", "bf16": "BF16",
           "float32": "F32", "float": "F32", "f32": "F32", "fp32": "F32",
           "float64": "F64", "double": "F64", "f64": "F64", "fp64": "F64"}


def _sm_key(device_key: str) -> str:
    """``sm_100_B200`` -> ``sm_100``; ``sm_90`` stays."""
    match = re.match(r"sm_(\d+)", device_key)
    if not match:
        raise ValueError(f"unexpected device key {device_key!r}")
    return f"sm_{match.group(1)}"


def _sm_value(key: str) -> float:
    """``sm_86`` -> 8.6, ``sm_100`` -> 10.0."""
    digits = key.split("_", 1)[1]
    return int(digits[:-1]) + int(digits[-1]) / 10


def build(data_dir: str | Path, out: Path = TABLE_PATH) -> dict:
    """Write the float per-element cycles from the raw DERIVED CSV under ``data_dir``; returns the table."""
    path = Path(data_dir) / RAW_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    table: dict[str, dict[str, dict[str, float]]] = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["element_type"] not in FLOAT_TYPES:
                continue
            cycles = float(row["clock_cycles"])
            if not cycles > 0:
                continue
            table.setdefault(_sm_key(row["device_key"]), {}).setdefault(row["opcode"], {})[row["element_type"]] = cycles
    ordered = {sm: {op: dict(sorted(table[sm][op].items())) for op in sorted(table[sm])}
               for sm in sorted(table, key=_sm_value)}
    out.write_text(json.dumps(ordered, indent=1) + "\n")
    return ordered


@lru_cache(maxsize=4)
def _load(path: str) -> dict:
    return json.loads(Path(path).read_text())


def load_cycles(path: str | Path | None = None) -> dict:
    """The committed table ``{sm_gen: {opcode: {dtype: cycles_per_element}}}`` (a copy)."""
    table = _load(str(path or TABLE_PATH))
    return {sm: {op: dict(d) for op, d in ops.items()} for sm, ops in table.items()}


def aten_base(name: str) -> str:
    """``aten::exp_``, ``aten.exp.default``, ``exp.Tensor``, ``_foreach_exp_`` -> ``exp``."""
    base = name.split("::")[-1]
    if base.startswith("aten."):
        base = base[len("aten."):]
    base = base.split(".")[0]
    for prefix in ("_foreach_", "special_"):
        if base.startswith(prefix):
            base = base[len(prefix):]
    if base.endswith("_") and not base.endswith("__"):
        base = base[:-1]
    return base


def _xla_dtype(dtype: str) -> str | None:
    key = str(dtype).lower().removeprefix("torch.")
    return _DTYPES.get(key, dtype if dtype in FLOAT_TYPES else None)


def opcode_cycles(opcode: str, dtype: str, sm_major_minor: float, *, allow_newer: bool = False,
                  table: dict | None = None) -> float | None:
    """One XLA opcode's cycles per element at the nearest generation at or below ``sm_major_minor``
    that measured it (or, with ``allow_newer``, the nearest newer one if none older did)."""
    xla = _xla_dtype(dtype)
    if xla is None:
        return None
    if xla == "BF16":
        xla = "F16"   # no BF16 entries in XLA's table: priced as F16 (see the module docstring)
    table = table if table is not None else _load(str(TABLE_PATH))
    have = sorted(((_sm_value(sm), ops[opcode][xla]) for sm, ops in table.items()
                   if xla in ops.get(opcode, {})), key=lambda pair: pair[0])
    older = [cycles for sm, cycles in have if sm <= sm_major_minor + 1e-9]
    if older:
        return older[-1]
    if allow_newer and have:
        return have[0][1]
    return None


def cycles_per_element(aten_name: str, dtype: str, sm_major_minor: float, *, allow_newer: bool = False,
                       table: dict | None = None) -> float | None:
    """GPU cycles per element of an aten pointwise op (see the module docstring for the map), or
    None when the op is not mapped or one of its opcodes has no entry at or below that generation."""
    parts = ATEN_TO_OPCODES.get(aten_base(aten_name))
    if parts is None:
        return None
    total = 0.0
    for opcode, count in parts:
        cycles = opcode_cycles(opcode, dtype, sm_major_minor, allow_newer=allow_newer, table=table)
        if cycles is None:
            return None
        total += count * cycles
    return total


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m predictor_models.datasets.pointwise_cycles",
                                     description="Rebuild pretrained/pointwise_cycles.json from the raw XLA table.")
    parser.add_argument("--data", required=True, help="the raw source folders, e.g. ../shared/data")
    parser.add_argument("--out", default=str(TABLE_PATH))
    args = parser.parse_args(argv)
    try:
        table = build(args.data, Path(args.out))
    except FileNotFoundError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {sum(len(d) for ops in table.values() for d in ops.values())} entries "
          f"({', '.join(table)}) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
