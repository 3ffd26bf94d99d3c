"""Where the shipped predictor breaks physics: time that falls as an op's work grows, and a GPU that
dominates another in every spec predicted slower on the same op.

    python benchmarks/predictor_physics.py [--json OUT]

Same-generation dominance (``generation_dominance``) compares every NVIDIA catalog GPU with every other of its
generation on the grid ops (the device envelope of `predictor_models/predictor/dominance.py`), over all of them and
over the bf16 ops alone (``bf16_ops``: the half-precision ops the envelope's up-sets hold).

Grids: GEMMs (m and k from 16 to 16,384 at n, k/m in 64..4,096), convolutions (batch 1..128, channels 16..2,048),
layer norms (rows 16..16,384 at 64, 768, 4,096 columns) and adds (256 to 2^27 elements), in fp32 and bf16 (the
GEMMs and convolutions also in fp32 with TF32 on, ``tf32``), on 13
GPUs from the T4 to the B200; and (``work_other_classes``) the classes priced as other classes' kernels: fused
attention along its sequence, pooling, optimizer updates, copies and embeddings along their elements, depthwise
convolutions and their backward, and dense convolutions' backward, along the batch (FP32 convolutions and attention
with TF32 on). A
*work violation* is a step up the grid (2x the work) predicted faster; a *dominance violation* is a GPU
with at least another's FP32 and BF16 peaks, DRAM bandwidth and SM count predicted slower on the same op.
Each is reported with its count and the worst ratio, for the shipped predictor (half-precision pointwise
and norm ops held monotone, `predictor_models/predictor/monotone.py`) and for its raw model. Nothing here
is asserted: it measures (`tests/test_predictor_monotone.py` and `tests/test_predictor_dominance.py` assert what the
work ladder and the envelope guarantee).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from predictor_models.datasets.common import DTYPE_BYTES, conv_op, elementwise_op, embedding_op, gemm_op, norm_op
from predictor_models.op_spec import OpSpec
from predictor_models.hardware import lookup_hardware

GPUS = ("T4", "L4", "A10G", "V100", "A100", "H100", "H200", "B200", "RTX 4090", "A100-PCIe-40GB", "P100", "A40",
        "L40S")
SIZES = [2 ** i for i in range(4, 15)]
_SPECS = ("fp32_tflops", "bf16_tflops", "memory_bandwidth_gbs", "sm_count")


def _conv(n, c, k, hw, taps, dtype):
    return conv_op(n, c, k, hw, hw, taps, taps, 1, taps // 2, dtype)


def _chains(dtype: str) -> dict[str, list[list]]:
    """The grid's chains of ops, each step twice the work of the last; ``dtype`` "tf32" is the fp32 GEMMs and
    convolutions with TF32 on (PyTorch's default for cuDNN convolutions)."""
    if dtype == "tf32":
        return {name: [[replace(op, tf32=True) for op in chain] for chain in chains]
                for name, chains in _chains("float32").items() if name.startswith(("conv", "gemm"))}
    channels = [2 ** i for i in range(4, 12)]
    return {
        # half-precision convolutions are the tiled-kernel network's (monotone by construction)
        "conv_n": [[_conv(n, c, c, hw, t, dtype) for n in (1, 2, 4, 8, 16, 32, 64, 128)]
                   for c in (64, 256) for hw in (14, 56) for t in (1, 3)],
        "conv_channels": [[_conv(32, c, c, hw, t, dtype) for c in channels] for hw in (7, 28) for t in (1, 3)],
        "gemm_m": [[gemm_op(1, m, n, k, dtype) for m in SIZES] for n in (64, 256, 1024, 4096) for k in (64, 256, 1024, 4096)],
        "gemm_k": [[gemm_op(1, m, n, k, dtype) for k in SIZES] for n in (64, 256, 1024, 4096) for m in (64, 256, 1024, 4096)],
        "norm_rows": [[norm_op(r, c, dtype, name="aten::native_layer_norm") for r in SIZES] for c in (64, 768, 4096)],
        "add_numel": [[elementwise_op(2 ** i, 2, dtype, name="aten::add") for i in range(8, 28)]],
    }


# -- the op classes priced as other classes' kernels (`predictor/expand.py`): attention as its GEMMs, pooling, optimizer
# updates, copies and embeddings as streaming kernels, depthwise convolutions as streaming kernels, a convolution's
# backward as its two gradient kernels

def attention_op(b: float, heads: float, seq: float, d: float, dtype: str, *, causal: int = 0,
                 backward: int = 0) -> OpSpec:
    """A fused attention (SDPA) over ``seq`` queries and keys, as `aten/costs.py` describes one."""
    s = DTYPE_BYTES[dtype]
    flops = 4.0 * b * heads * seq * seq * d * (2.5 if backward else 1.0)
    io = b * heads * seq * d * s
    return OpSpec("attention", dtype, flops, (4 if backward else 3) * io, (3 if backward else 1) * io,
                  {"b": b, "heads": heads, "s_q": seq, "s_kv": seq, "d": d, "causal": causal, "backward": backward},
                  False, "aten::_scaled_dot_product_flash_attention")


def pooling_op(numel_out: float, window: float, dtype: str) -> OpSpec:
    """A pooling reading ``window`` inputs per output."""
    s = DTYPE_BYTES[dtype]
    return OpSpec("pooling", dtype, numel_out * window, numel_out * window * s, numel_out * s,
                  {"numel_in": numel_out * window, "numel_out": numel_out, "kernel": window}, False,
                  "aten::max_pool2d")


def optimizer_op(numel: float, optimizer: str) -> OpSpec:
    """One multi-tensor launch of ``optimizer``'s update over ``numel`` FP32 parameters, as a projection emits it
    (`optimizer_ops.optimizer_ops`)."""
    from prenet_callbacks.projection.ops.optimizer_ops import optimizer_ops

    (op, _launches), = optimizer_ops(optimizer, [int(numel)])
    return op


def copy_op(numel: float, dtype: str) -> OpSpec:
    s = DTYPE_BYTES[dtype]
    return OpSpec("data_movement", dtype, 0.0, numel * s, numel * s, {"numel": numel}, False, "aten::copy_")


def backward_conv(op: OpSpec) -> OpSpec:
    """The backward of a forward convolution ``op``: both gradients, as a captured one carries them."""
    return OpSpec(op.op_class, op.dtype, 2.0 * op.flops, op.bytes_read + op.bytes_written, op.bytes_read,
                  {**op.dims, "backward": 1, "grad_input": 1, "grad_weight": 1}, op.tf32, op.name)


def _searched_conv(n: int, c: int, hw: int, backward: bool, dtype: str) -> OpSpec:
    """A 3x3 convolution (its backward where ``backward``) of a run whose cuDNN times its algorithms."""
    from prenet_callbacks.projection.ops.precision import searched

    op = _conv(n, c, c, hw, 3, dtype)
    return searched(backward_conv(op) if backward else op, True)


def _other_chains(dtype: str) -> dict[str, list[list]]:
    """Chains of the other op classes, each step twice the work of the last (in ``dtype``; optimizer updates are
    FP32 in every dtype, as mixed precision keeps its master weights)."""
    sizes = [2 ** i for i in range(8, 28)]
    depthwise = lambda n, c, hw: conv_op(n, c, c, hw, hw, 3, 3, 1, 1, dtype, groups=c)  # noqa: E731
    return {
        "attention_seq": [[attention_op(4, 16, s, 64, dtype, causal=c, backward=bw) for s in SIZES[2:10]]
                          for c in (0, 1) for bw in (0, 1)],
        "pooling_numel": [[pooling_op(n, w, dtype) for n in sizes] for w in (4, 9)],
        "optimizer_numel": [[optimizer_op(n, name) for n in sizes] for name in ("sgd", "sgd-momentum", "adamw")],
        "copy_numel": [[copy_op(n, dtype) for n in sizes]],
        "embedding_indices": [[embedding_op(i, d, 50_000, dtype) for i in SIZES] for d in (64, 768, 4096)],
        "depthwise_conv_n": [[op for n in (1, 2, 4, 8, 16, 32, 64, 128) for op in [depthwise(n, c, hw)]]
                             for c in (32, 256) for hw in (14, 56)],
        "depthwise_conv_backward_n": [[backward_conv(depthwise(n, c, hw)) for n in (1, 2, 4, 8, 16, 32, 64, 128)]
                                      for c in (32, 256) for hw in (14, 56)],
        "conv_backward_n": [[backward_conv(_conv(n, c, c, hw, 3, dtype)) for n in (1, 2, 4, 8, 16, 32, 64, 128)]
                            for c in (64, 256) for hw in (14, 56)],
        # with cuDNN's algorithm search on (torch.backends.cudnn.benchmark): an FP32 3x3 convolution costs the lesser
        # of its direct and its Winograd kernels (`predictor/winograd.py`), forward and backward; odd sides too
        "searched_conv_n": [[_searched_conv(n, c, hw, bw, dtype) for n in (1, 2, 4, 8, 16, 32, 64, 128)]
                            for c in (64, 256) for hw in (7, 14, 56) for bw in (False, True)],
    }


def other_class_violations(predictor, devices) -> dict[str, dict]:
    """`work_violations` for the other op classes (`_other_chains`), in fp32 and bf16, FP32 convolutions and attention
    with TF32 on as a captured FP32 convolution has it."""
    out = {}
    for dtype in ("float32", "bfloat16"):
        for name, chains in _other_chains(dtype).items():
            mode = dtype
            if dtype == "float32" and name.startswith(("conv", "attention")):
                chains, mode = [[replace(op, tf32=True) for op in chain] for chain in chains], "tf32"
            runs = np.array([runs_dtype(d, mode) for d in devices])
            out[f"{name}/{dtype}"] = _chain_violations(predictor, devices, chains, runs)
    return out


def _chain_violations(predictor, devices, chains: list[list], runs: np.ndarray) -> dict:
    """The steps of ``chains`` predicted faster at twice the work: on every device, and on those that ``runs``."""
    ratios = np.concatenate([_step_ratios(predictor.predict_matrix(c, devices)) for c in chains])
    broken = ratios > 1.0001
    return {"steps": int(ratios.size), "violations": int(broken.sum()), "worst_drop": round(float(ratios.max()), 3),
            "where_supported": {"steps": int(ratios[:, runs].size), "violations": int(broken[:, runs].sum())}}


def _step_ratios(times: np.ndarray) -> np.ndarray:
    """Each grid step's time over the next one's (twice the work), per device: above 1, more work priced faster."""
    return times[:-1] / times[1:]


def work_violations(predictor, devices) -> dict[str, dict]:
    """Per chain and dtype, the grid steps predicted faster at twice the work, on every GPU and on the GPUs whose
    catalog entry runs the dtype (``where_supported``: a projection prices bf16 on a V100, T4 or P100 with FP32 math,
    `precision_note`, so it never asks the predictor for those bf16 rows; TF32 exists from Ampere on, and a TF32 op
    on an older GPU is an FP32 one, priced exactly as it and counted among fp32's chains)."""
    out = {}
    for dtype in ("float32", "tf32", "bfloat16"):
        runs = np.array([runs_dtype(d, dtype) for d in devices])
        for name, chains in _chains(dtype).items():
            out[f"{name}/{dtype}"] = _chain_violations(predictor, devices, chains, runs)
    return out


def runs_dtype(device, dtype: str) -> bool:
    """Whether ``device`` runs ``dtype`` ("tf32": has a TF32 figure, Ampere or later; else its catalog peak)."""
    if dtype == "tf32":
        return bool(getattr(device, "tf32_tflops", None))
    return device.supports(dtype)


def _dominates(a, b) -> bool:
    values = [((getattr(a, k) or 0.0), (getattr(b, k) or 0.0)) for k in _SPECS]
    return all(x >= y for x, y in values) and any(x > y for x, y in values)


def dominance_violations(predictor, devices) -> dict:
    ops = [gemm_op(1, m, n, k, dt) for m in (16, 256, 4096) for n in (256, 4096) for k in (256, 4096)
           for dt in ("float32", "bfloat16")]
    ops += [elementwise_op(2 ** i, 2, dt, name="aten::add") for i in (10, 16, 22, 26) for dt in ("float32", "bfloat16")]
    times = predictor.predict_matrix(ops, devices)
    pairs, worst = [], []
    for i, a in enumerate(devices):
        for j, b in enumerate(devices):
            if i != j and _dominates(a, b):
                ratio = times[:, i] / times[:, j]
                pairs.append(int((ratio > 1.0001).sum()))
                worst.append((float(ratio.max()), a.name, b.name))
    worst.sort(reverse=True)
    return {"comparisons": len(pairs) * len(ops), "violations": int(sum(pairs)),
            "worst": [{"faster_gpu": a, "slower_gpu": b, "ratio": round(r, 3)} for r, a, b in worst[:5] if r > 1.0001]}


def generation_dominance(predictor) -> dict:
    """Within a generation, over every NVIDIA catalog GPU, on the grid ops: a GPU with at least another's figures
    predicted slower. ``envelope``: every figure the models read (the op's mode's peak, bandwidth, SMs, L2, board
    power) against a GPU the training data measures (`predictor/dominance.py`, held by construction);
    ``every_figure``: the same against any GPU, measured or not; ``peak_bandwidth_sms``: the op's mode's peak,
    bandwidth and SMs only, where a stronger GPU may have less L2 or board power (or the catalog lacks the figure)."""
    from predictor_models.hardware import list_hardware
    from predictor_models.predictor.devices import MODES
    from predictor_models.predictor.dominance import dominates, generation
    from predictor_models.predictor.optable import op_mode

    gpus = [d for d in list_hardware() if d.memory_bandwidth_gbs and d.vendor.lower() == "nvidia"]
    ops = [op for dtype in ("float32", "bfloat16") for chains in _chains(dtype).values() for chain in chains
           for op in chain]
    times = predictor.predict_matrix(ops, gpus)
    modes = np.array([op_mode(op) for op in ops])
    peak_key = {"fp32": "fp32_tflops", "tf32": "tf32_tflops", "fp16": "fp16_tflops", "bf16": "bf16_tflops"}

    def loose(a, b, mode: str) -> bool:
        figures = lambda d: (getattr(d, peak_key[mode]) or 0.0, d.memory_bandwidth_gbs or 0.0, d.sm_count or 0)  # noqa: E731
        return generation(a) == generation(b) and all(x >= y for x, y in zip(figures(a), figures(b)))

    measured = set(predictor.metadata.get("trained_on") or ())

    def envelope(a, b, mode: str) -> bool:
        return b.name in measured and dominates(a, b, mode)

    half = np.array([op.dtype != "float32" for op in ops])
    out = {}
    for name, relation in (("envelope", envelope), ("every_figure", dominates), ("peak_bandwidth_sms", loose)):
        comparisons = violations = half_comparisons = half_violations = 0
        worst = []
        for mode in sorted(set(modes.tolist())):
            rows = np.flatnonzero(modes == mode)
            for i, a in enumerate(gpus):
                for j, b in enumerate(gpus):
                    if i != j and relation(a, b, MODES[mode]):
                        ratio = times[rows, i] / times[rows, j]
                        broken = ratio > 1.0001
                        comparisons += rows.size
                        violations += int(broken.sum())
                        half_comparisons += int(half[rows].sum())
                        half_violations += int((broken & half[rows]).sum())
                        worst.append((float(ratio.max()), a.name, b.name, MODES[mode]))
        worst.sort(reverse=True)
        out[name] = {"comparisons": comparisons, "violations": violations,
                     "bf16_ops": {"comparisons": half_comparisons, "violations": half_violations},
                     "worst": [{"slower_stronger_gpu": a, "than": b, "mode": m, "ratio": round(r, 3)}
                               for r, a, b, m in worst[:5] if r > 1.0001]}
    return out


def network_violations(predictor, devices) -> dict:
    """The same checks where the tiled-kernel network prices: half-precision convolutions on GPUs that run the
    mode on tensor cores (fp16 from Volta, bf16 from Ampere), dominance over every figure its inputs read."""
    steps = bad = comparisons = worse = 0
    figures = ("fp16_tflops", "bf16_tflops", "memory_bandwidth_gbs", "sm_count", "tdp_w")
    for dtype, generation in (("float16", 7.0), ("bfloat16", 8.0)):
        devs = [d for d in devices if float(d.compute_capability or 0) >= generation]
        ops = []
        for name in ("conv_n", "conv_channels"):
            for chain in _chains(dtype)[name]:
                ratios = _step_ratios(predictor.predict_matrix(chain, devs))
                steps, bad = steps + ratios.size, bad + int((ratios > 1.0001).sum())
                ops += chain
        t = predictor.predict_matrix(ops, devs)
        for i, a in enumerate(devs):
            for j, b in enumerate(devs):
                if i != j and all((getattr(a, f) or 0) >= (getattr(b, f) or 0) for f in figures):
                    comparisons += len(ops)
                    worse += int((t[:, i] > t[:, j] * 1.0001).sum())
    return {"work_steps": steps, "work_violations": bad, "dominance_comparisons": comparisons,
            "dominance_violations": worse}


def main(argv: list[str] | None = None) -> int:
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    predictor = default_predictor()[0]
    devices = [lookup_hardware(g) for g in GPUS]
    result = {"benchmark": "predictor_physics", "work": work_violations(predictor, devices),
              "work_other_classes": other_class_violations(predictor, devices),
              "dominance": dominance_violations(predictor, devices)}
    held, predictor.monotone = predictor.monotone, frozenset()      # the raw model, for comparison
    result["work_raw_model"] = work_violations(predictor, devices)
    result["network"] = network_violations(predictor, devices)
    result["dominance_raw_model"] = dominance_violations(predictor, devices)
    predictor.monotone = held
    result["generation_dominance"] = generation_dominance(predictor)
    predictor.device_envelope = False
    result["generation_dominance_raw_model"] = generation_dominance(predictor)
    predictor.device_envelope = True
    for key, row in {**result["work"], **result["work_other_classes"]}.items():
        here = row["where_supported"]
        print(f"{key:22s} {row['violations']:5d} of {row['steps']:5d} steps faster at 2x the work (worst x{row['worst_drop']}); "
              f"on GPUs that run the dtype {here['violations']} of {here['steps']}")
    dom = result["dominance"]
    print(f"dominance: {dom['violations']} of {dom['comparisons']}; worst: {dom['worst'][:3]}")
    net = result["network"]
    print(f"network (half-precision convolutions on tensor cores): work {net['work_violations']} of {net['work_steps']}, "
          f"dominance {net['dominance_violations']} of {net['dominance_comparisons']}")
    for key in ("generation_dominance", "generation_dominance_raw_model"):
        for name, row in result[key].items():
            print(f"{key} ({name}): {row['violations']} of {row['comparisons']} "
                  f"(bf16 ops {row['bf16_ops']['violations']} of {row['bf16_ops']['comparisons']})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
