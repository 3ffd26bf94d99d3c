"""Prediction speed: a 40-target table for a 500-layer model, after the profile.

    python benchmarks/projection_speed.py [--layers 500] [--targets 40] [--layouts 0] [--uniform] [--repeats 9] [--processes 5]

A timing benchmark (run it on a quiet machine). It builds a report as the session writes it for a
500-layer model measured on an A100 (each layer: a forward GEMM, two backward GEMMs, a norm, a
pointwise op and an SDPA call fused forward and backward) and times `project_report` onto 40 targets
(single GPUs, one-node and multi-node targets), the predictor already loaded. Target: <= 50 ms.
``--layouts K`` makes the last K of them tensor/pipeline-parallel layouts (`LAYOUTS`). The layers cycle over 35
shapes, so that the predictor meets many distinct ops; ``--uniform`` gives every layer one shape, as a GPT or
Llama stack has (not the budget's case).
Each process also reports the mean (which holds the full garbage collections that land in one projection of
several, where the median leaves them out) and the collections per projection by generation, with their time.
Writes ``benchmarks/results/projection_speed.json`` (``--out``).
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.gc_probe import Collections  # noqa: E402
from predictor_models.hardware import list_hardware  # noqa: E402
from prenet_callbacks.projection import project_report  # noqa: E402
from prenet_callbacks.projection.pricing.predictor_source import default_predictor  # noqa: E402
from prenet_callbacks.report import Report  # noqa: E402


def _op(name, phase, op_class, flops, read, written, dims, count=1.0):
    return {"name": name, "phase": phase, "count_per_step": count, "seconds_per_step": 1e-5,
            "spec": {"op_class": op_class, "dtype": "bfloat16", "flops": flops, "bytes_read": read,
                     "bytes_written": written, "dims": dims, "tf32": False}}


def synthetic_report(layers: int, uniform: bool = False) -> Report:
    """The report; its layers cycle over 35 shapes (7 token counts x 5 widths), or all share one (``uniform``)."""
    rows = []
    for i in range(layers):
        m, k = (4096, 1024) if uniform else (4096 + (i % 7) * 64, 1024 + (i % 5) * 128)
        gemm = dict(b=1, m=m, n=k, k=k)
        attention = dict(b=8, heads=16, s_q=512, s_kv=512, d=64, causal=1, sdpa=1)
        rows.append({"name": f"blocks.{i}", "module_type": "Block", "calls_per_step": 1, "forward_s": 4e-5,
                     "backward_s": 8e-5, "optimizer_s": 0.0, "params": k * k,
                     "ops": [_op("aten::mm", "fwd", "gemm", 2.0 * m * k * k, 2.0 * (m * k + k * k), 2.0 * m * k, gemm),
                             _op("aten::mm", "bwd", "gemm", 2.0 * m * k * k, 2.0 * (m * k + k * k), 2.0 * m * k,
                                 gemm, 2.0),
                             _op("aten::native_layer_norm", "fwd", "norm", 8.0 * m * k, 2.0 * m * k, 4.0 * m * k,
                                 dict(rows=m, cols=k)),
                             _op("aten::add", "fwd", "elementwise", m * k, 4.0 * m * k, 2.0 * m * k,
                                 dict(numel=m * k, inputs=2)),
                             _op("aten::_flash_attention_forward", "fwd", "attention", 1e9, 3e7, 1e7,
                                 {**attention, "backward": 0}),
                             _op("aten::_flash_attention_backward", "bwd", "attention", 2.5e9, 5e7, 3e7,
                                 {**attention, "backward": 1})]})
    rows.append({"name": "optimizer", "module_type": "optimizer", "calls_per_step": 1, "forward_s": 0.0,
                 "backward_s": 0.0, "optimizer_s": 1e-3, "params": 0,
                 "ops": [_op("aten::_foreach_add_", "opt", "optimizer", 1e9, 8e9, 4e9,
                             dict(numel=1e9, tensors=36, kind=2), 9.0)]})
    report = Report(current={"device": "cuda", "name": "NVIDIA A100-SXM4-80GB", "catalog_name": "A100-SXM4-80GB",
                             "devices": 1, "precision": "bf16-mixed", "batch_size": 8},
                    plan={"total_steps": 100_000, "accumulate": 1},
                    measured={"layers": {"layers": rows, "steps": 3}, "batch_s": 0.2, "data_wait_s": 0.001,
                              "step_phases": {"data_s": 0.001, "forward_s": 0.05, "backward_s": 0.1,
                                              "optimizer_s": 0.01, "other_s": 0.002, "total_s": 0.2}})
    report.add_prediction({"at_step": 30, "elapsed_s": 10.0, "step_s": 0.2, "predicted_total_s": 20000.0,
                           "eta_s": 19990.0, "low_s": 19000.0, "high_s": 21000.0,
                           "breakdown": {"setup_s": 5.0, "train_s": 19900.0, "validation_s": 90.0,
                                         "checkpoints_s": 5.0, "epoch_boundaries_s": 0.0}})
    return report


# tensor/pipeline-parallel targets (`--layouts K` puts the first K of them in place of the last K plain ones)
LAYOUTS = ["8x H100 tp=8", "8x H100 tp=4", "4x8 H100 tp=8 pp=4", "2x8 H100 tp=8 pp=2", "8x A100 tp=8",
           "2x8 A100 tp=4 pp=2 dp=2", "4x8 A100 tp=8 pp=4", "8x H100 tp=2 pp=4", "2x8 H100 tp=4 pp=4",
           "4x8 H100 tp=8 pp=2 microbatches=8"]


def targets(n: int, layouts: int = 0) -> list[str]:
    if layouts > min(n, len(LAYOUTS)):
        raise SystemExit(f"at most {min(n, len(LAYOUTS))} layout targets")
    gpus = [a.name for a in list_hardware(vendor="NVIDIA") if a.usd_per_hour is not None]
    out = list(gpus)
    for name in ("H100-SXM5", "A100-SXM4-80GB", "H200-SXM", "B200", "L4", "L40S"):
        out += [f"8x {name}", f"4x8 {name}"]
    for name in ("H100-SXM5", "A100-SXM4-80GB", "H200-SXM", "B200", "L4", "L40S", "A10G", "T4", "V100-SXM2-32GB"):
        out += [f"2x {name}", f"4x {name}", f"16x8 {name}"]
    if len(out) < n:
        raise SystemExit(f"only {len(out)} targets are defined, {n} asked for")
    return out[:n - layouts] + LAYOUTS[:layouts]


def _time_in_this_process(layers: int, names: list[str], repeats: int, uniform: bool = False) -> dict:
    predictor, _ = default_predictor()
    project_report(synthetic_report(layers, uniform), names[:2], predictor=predictor)   # imports, catalog, predictor warm
    seconds = []
    # the collections a projection sets off (the full ones scan every object of the process and land in one projection
    # of several, so the median leaves them out and the mean does not)
    timing = [False]
    seen = Collections(when=lambda: timing[0])
    gc.callbacks.append(seen)
    for _ in range(repeats):
        report = synthetic_report(layers, uniform)
        start = time.perf_counter()
        timing[0] = True
        project_report(report, names, predictor=predictor)
        timing[0] = False
        seconds.append(time.perf_counter() - start)
    gc.callbacks.remove(seen)
    return {"seconds": seconds, "collections_per_projection": [round(c / repeats, 2) for c in seen.count],
            "collection_ms_per_projection": round(sum(seen.seconds) / repeats * 1e3, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=500)
    parser.add_argument("--targets", type=int, default=40)
    parser.add_argument("--layouts", type=int, default=0,
                        help="how many of the targets are tensor/pipeline-parallel layouts (default 0)")
    parser.add_argument("--repeats", type=int, default=9, help="timed projections per process")
    parser.add_argument("--uniform", action="store_true",
                        help="every layer of one shape, as a GPT or Llama stack (default: 35 shapes, the budget's case)")
    parser.add_argument("--processes", type=int, default=5,
                        help="fresh processes, one after another: on a shared machine a whole process can run "
                             "~1.5x slower than the next (every stage alike), so one process is not a measurement")
    parser.add_argument("--out", default=str(HERE / "results/projection_speed.json"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    names = targets(args.targets, args.layouts)
    if args.child:
        print(json.dumps(_time_in_this_process(args.layers, names, args.repeats, args.uniform)))
        return 0
    per_process, means, collections, collection_ms = [], [], [], []
    for _ in range(args.processes):
        out = subprocess.run([sys.executable, __file__, "--child", "--layers", str(args.layers), "--targets",
                              str(args.targets), "--layouts", str(args.layouts), "--repeats", str(args.repeats)]
                             + (["--uniform"] if args.uniform else []),
                             capture_output=True, text=True, check=True).stdout
        child = json.loads(out.strip().splitlines()[-1])
        per_process.append(statistics.median(child["seconds"]) * 1e3)
        means.append(statistics.mean(child["seconds"]) * 1e3)
        collections.append(child["collections_per_projection"])
        collection_ms.append(child["collection_ms_per_projection"])
    result = {"layers": args.layers, "uniform": args.uniform, "targets": len(names), "layout_targets": args.layouts,
              "repeats": args.repeats,
              "processes": args.processes,
              "median_ms": round(statistics.median(per_process), 2),
              "process_medians_ms": [round(x, 2) for x in per_process],
              "min_ms": round(min(per_process), 2), "max_ms": round(max(per_process), 2),
              # the mean holds the full collections that the median leaves out (one projection in several pays one)
              "process_means_ms": [round(x, 2) for x in means],
              "collections_per_projection": collections, "collection_ms_per_projection": collection_ms,
              "date": time.strftime("%Y-%m-%d %H:%M"), "target_ms": 50}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
