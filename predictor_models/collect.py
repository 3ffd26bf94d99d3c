"""Measure single ops on this machine's CUDA GPU, in the row format `train --extra` reads.

    python -m predictor_models.collect --out DIR [--dtypes float32 bfloat16] [--quick]

GEMM, convolution, layer norm / softmax, elementwise and attention (SDPA) at a grid of shapes,
timed with CUDA events (warm-up, then the median of repeated runs). Without CUDA it exits 2.
"""
from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from typing import Iterator, Sequence

from predictor_models.op_spec import OpSpec

GEMM_SIDES = (64, 256, 1024, 2048, 4096)
CONV_SHAPES = ((32, 64, 64, 56, 3, 1), (32, 128, 128, 28, 3, 1), (32, 256, 256, 14, 3, 1), (32, 64, 256, 56, 1, 1),
               (16, 3, 64, 224, 7, 2), (64, 512, 512, 7, 3, 1))
ROWS_COLS = ((1024, 1024), (4096, 1024), (8192, 4096), (16384, 768), (2048, 50257))
NUMELS = (2**16, 2**20, 2**22, 2**24, 2**26)
ATTN = ((8, 16, 512, 64), (4, 16, 1024, 64), (2, 32, 2048, 128), (1, 32, 4096, 128))


def _time_ms(torch, fn, repeats: int) -> float:
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def _cases(torch, dtype_name: str, quick: bool) -> Iterator[tuple[OpSpec, object]]:
    from predictor_models.datasets.common import conv_op, elementwise_op, gemm_op, norm_op

    dev, dt = "cuda", getattr(torch, dtype_name)
    tf32 = dtype_name == "float32" and torch.backends.cuda.matmul.allow_tf32
    sides = GEMM_SIDES[1::2] if quick else GEMM_SIDES
    for m, n, k in itertools.product(sides, sides, sides):
        a, b = torch.randn(m, k, device=dev, dtype=dt), torch.randn(k, n, device=dev, dtype=dt)
        yield gemm_op(1, m, n, k, dtype_name, tf32=tf32, name="aten::mm"), lambda a=a, b=b: torch.mm(a, b)
    for n_, cin, cout, size, kern, stride in CONV_SHAPES[: 3 if quick else None]:
        x = torch.randn(n_, cin, size, size, device=dev, dtype=dt)
        w = torch.randn(cout, cin, kern, kern, device=dev, dtype=dt)
        op = conv_op(n_, cin, cout, size, size, kern, kern, stride, kern // 2, dtype_name, tf32=tf32, name="aten::convolution")
        yield op, lambda x=x, w=w, s=stride, p=kern // 2: torch.nn.functional.conv2d(x, w, stride=s, padding=p)
    for rows, cols in ROWS_COLS:
        x = torch.randn(rows, cols, device=dev, dtype=dt)
        yield norm_op(rows, cols, dtype_name, name="aten::native_layer_norm"), \
            lambda x=x, c=cols: torch.nn.functional.layer_norm(x, (c,))
        yield norm_op(rows, cols, dtype_name, name="aten::_softmax"), lambda x=x: torch.softmax(x, -1)
    for numel in NUMELS:
        x, y = torch.randn(numel, device=dev, dtype=dt), torch.randn(numel, device=dev, dtype=dt)
        yield elementwise_op(numel, 2, dtype_name, name="aten::add"), lambda x=x, y=y: x + y
        yield elementwise_op(numel, 1, dtype_name, name="aten::gelu"), lambda x=x: torch.nn.functional.gelu(x)
    s = 2 if dtype_name != "float32" else 4
    for b, h, seq, d in ATTN:
        q = torch.randn(b, h, seq, d, device=dev, dtype=dt)
        flops = 4.0 * b * h * seq * seq * d
        op = OpSpec("attention", dtype_name, flops, 3 * q.numel() * s, q.numel() * s,
                    {"b": b, "heads": h, "s_q": seq, "s_kv": seq, "d": d, "causal": 0, "backward": 0}, tf32,
                    "aten::scaled_dot_product_attention")
        yield op, lambda q=q: torch.nn.functional.scaled_dot_product_attention(q, q, q)


def collect(out: str | Path, *, dtypes: Sequence[str] = ("float32", "bfloat16"), quick: bool = False,
            repeats: int = 20, log=print) -> Path:
    """Measure the grid on the current CUDA device and write ``<device>.csv`` into ``out``."""
    import torch

    from predictor_models.datasets.common import Sample, write_rows

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device: collect measures ops on this machine's GPU")
    device = torch.cuda.get_device_name()
    samples = []
    for dtype_name in dtypes:
        for op, fn in _cases(torch, dtype_name, quick):
            try:
                ms = _time_ms(torch, fn, repeats)
            except RuntimeError as error:  # out of memory, unsupported dtype: skip that case
                log(f"skipped {op.name} {op.dims}: {error}")
                torch.cuda.empty_cache()
                continue
            samples.append(Sample(op, device, ms * 1e-3, "collect"))
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (device.replace(" ", "_").replace("/", "_") + ".csv")
    write_rows(path, samples)
    log(f"wrote {len(samples)} rows to {path}")
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The collect options (shared with ``prenet collect``)."""
    parser.set_defaults(prog=parser.prog)  # errors name the command as typed ("prenet collect" or "python -m ...")
    parser.add_argument("--out", required=True, help="folder to write <device>.csv into")
    parser.add_argument("--dtypes", nargs="*", default=["float32", "bfloat16"], help="dtypes to measure")
    parser.add_argument("--quick", action="store_true", help="a smaller grid (a minute or so)")
    parser.add_argument("--repeats", type=int, default=20, help="timed runs per case (median kept)")


def run(args) -> int:
    try:
        collect(args.out, dtypes=args.dtypes, quick=args.quick, repeats=args.repeats)
    except RuntimeError as error:
        print(f"{getattr(args, 'prog', 'collect')}: error: {error}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m predictor_models.collect", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
