"""Trial (issue 38): TF32 convolutions priced by the monotone tiled-kernel network at the class model's level.

    python benchmarks/tf32_conv_levelled_trial.py --variant shipped|network|levelled [--json OUT]

TF32 convolutions (cuDNN's default for an FP32 convolution) are the class model's, which `predictor_physics.py`
finds faster with more work on 145 grid steps. Priced by the tiled-kernel network (monotone by construction), they
made ResNet-50's FP32 steps 14-21% too fast on Hopper (`issue38_network_fp32/trial_conv_fp32_tf32.json`): the network
never saw a TF32 convolution, so its level there is a guess. This trial keeps the network's order and takes the level
from the class model: on each device, the network's TF32 kernel times are multiplied by one number for forward kernels
and one for gradient kernels, the median ratio of the class model's price to the network's over fixed canonical
forward, and backward, convolutions (`canonical_convs`). A positive
constant keeps the network's property, for every input. ``network`` prices them by the network alone (the earlier
trial's variant), ``shipped`` leaves the predictor as it is: both for comparison in the same code. The predictor is patched in this process only; it reports the
development sets of `network_fp32_trial.py` and the host-bound CNN steps (`projection_hostbound.py`).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.result_file import write_result  # noqa: E402


def canonical_convs(backward: bool) -> list:
    """TF32 convolutions of ResNet-like stages: batch 16 and 64, (channels, size) (64, 56) ... (512, 7), as many or
    four times the output channels, 1x1 and 3x3 (32 ops); ``backward``: their backward ops (both gradients)."""
    from dataclasses import replace

    from predictor_models.datasets.common import conv_op

    ops = [conv_op(n, c, c * widen, hw, hw, taps, taps, 1, taps // 2, "float32", tf32=True)
           for n in (16, 64) for c, hw in ((64, 56), (128, 28), (256, 14), (512, 7)) for widen in (1, 4)
           for taps in (1, 3)]
    if not backward:
        return ops
    return [replace(op, flops=2.0 * op.flops, bytes_read=op.bytes_read + op.bytes_written,
                    bytes_written=op.bytes_read, dims={**op.dims, "backward": 1, "grad_input": 1, "grad_weight": 1})
            for op in ops]


def install(level: bool) -> dict:
    """Let the default predictor's convolution network price TF32 convolutions (on GPUs with TF32 tensor cores), at
    the class model's level per device where ``level``; returns the levels by device."""
    from predictor_models.predictor.model import KernelNetwork
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor
    from predictor_models.predictor.model import _catalog_devices

    predictor, _ = default_predictor()
    canon = {grad: canonical_convs(grad) for grad in (False, True)}
    devices = _catalog_devices()
    by_class = {grad: predictor._predict_distinct(ops, devices) for grad, ops in canon.items()}  # before the patch

    @dataclass(frozen=True)
    class LevelledNetwork(KernelNetwork):
        levels: dict = field(default_factory=dict, compare=False)

        def log_seconds(self, pairs) -> np.ndarray:
            log_s = super().log_seconds(pairs)
            if not self.levels:
                return log_s
            tf32 = pairs.ops.mode == 1
            grad = pairs.dim("grad") > 0
            shift = {g: np.log(np.array([self.levels.get((name, g), 1.0) for name in pairs.dev.names]))[None, :]
                     for g in (False, True)}
            return log_s + np.where(tf32, np.where(grad, shift[True], shift[False]), 0.0)

    def patch(levels: dict) -> None:
        predictor.networks = tuple(LevelledNetwork(net.classes, net.modes + ("tf32",), net.members, net.inputs,
                                                   net.floor_s, levels) if "conv" in net.classes else net
                                   for net in original)
        predictor._network_modes = frozenset(m for net in predictor.networks if "conv" in net.classes
                                             for m in net.modes)

    original = predictor.networks
    patch({})
    by_network = {grad: predictor._predict_distinct(ops, devices) for grad, ops in canon.items()}
    levels = {(d.name, grad): float(np.exp(np.median(np.log(by_class[grad][:, j] / by_network[grad][:, j]))))
              for j, d in enumerate(devices) for grad in (False, True)} if level else {}
    patch(levels)
    return levels


def main(argv: list[str] | None = None) -> int:
    from benchmarks import network_fp32_trial

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("shipped", "network", "levelled"), required=True)
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data"))
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    levels = install(args.variant == "levelled") if args.variant != "shipped" else {}
    result = {"variant": args.variant, "levels": {f"{name}/{'backward' if grad else 'forward'}": round(v, 4)
                                                  for (name, grad), v in sorted(levels.items())},
              **network_fp32_trial.evaluate_with_hostbound(Path(args.data))}
    print(json.dumps({k: v for k, v in result.items() if k not in ("h200_rows", "levels")}, indent=1))
    if args.json:
        write_result(args.json, "tf32_conv_levelled_trial", argv, **result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
