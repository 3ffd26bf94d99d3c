"""GPU acceptance run (issue 11): one command, one JSON with every figure, at most ~8 minutes on one GPU.

    PYTHONPATH=. python benchmarks/gpu_acceptance.py --out benchmarks/results/gpu/<device>.json
    PYTHONPATH=. python benchmarks/gpu_acceptance.py --smoke --out /tmp/acceptance.json   # CPU, ~1 minute

Needs only what a stock CUDA PyTorch image has (torch, lightning, numpy, scikit-learn, rich; uses
`transformers` for BERT/GPT-2 when installed). Parts:

1. ``pytest -m cuda``: the tests only a GPU can run.
2. The demo (examples/lightning_cnn.py) on the GPU: first prediction against the measured fit.
3. Three real fits (a CNN in 32-true, a transformer in bf16-mixed, one with accumulation and step
   checkpoints), each without and with the callback: first-prediction error, profile coverage,
   and the callback's overhead on the whole fit.
4. ``collect --quick`` on the GPU and the shipped predictor's per-class error on those rows
   (a held-out check when the GPU is not in the training data: the H200 is not).
5. ``estimate()`` from the model alone against measured step times: ResNet-50 (NCHW, and channels-last: what
   cuDNN's layout transforms cost), BERT-base, GPT-2-small, two batch sizes each, 32-true and bf16-mixed; at
   each model's first batch one profiled step's op table, which `benchmarks/op_table_compare.py` sets against
   the estimate per op class; beside each timed step the SM clock, board power and clock caps (`gpu_clocks.py`).
6. Kernel probes (`gpu_probes.py`): misaligned half-precision GEMMs beside their padded twins, bf16 GEMMs of
   training-step shapes (a linear layer's three, weight gradients over 4K-64K tokens), and the DRAM bandwidth share
   of eager streaming kernels beyond the L2, streaming kernels in a warm and a cold L2, and ResNet-50's batch norms
   in bf16, fp16 and fp32 (PyTorch runs bf16 ones on its own kernels, not cuDNN's), each beside the shipped
   predictor's time.

Without a GPU it runs the CPU parts at a small size (``--smoke``) and lists what it skipped and why.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks import gpu_fits, gpu_models  # noqa: E402
from benchmarks.gpu_clocks import ClockSampler  # noqa: E402
from benchmarks.gpu_probes import run_probes  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--smoke", action="store_true", help="small sizes (the CPU check CI runs)")
    parser.add_argument("--fit-seconds", type=float, default=None,
                        help="length of each acceptance fit (default 25 s on a GPU, 3 s with --smoke)")
    parser.add_argument("--work", default="/tmp/prenet-gpu-acceptance", help="scratch directory")
    parser.add_argument("--skip", nargs="*", default=[],
                        help="parts to skip: cuda_tests demo fits collect host_issue estimate probes")
    parser.add_argument("--only", nargs="*", default=[], help="run only these parts")
    parser.add_argument("--budget-s", type=float, default=480.0,
                        help="start no part after this many seconds (a lent GPU is lent for minutes, not hours)")
    args = parser.parse_args(argv)
    cuda = torch.cuda.is_available()
    smoke = args.smoke or not cuda
    if not cuda:
        torch.set_num_threads(1)  # a shared CPU: two threads make tiny steps swing with the neighbours' load
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"benchmark": "gpu_acceptance", "command": " ".join(["python", *sys.argv]),
                              "date": time.strftime("%Y-%m-%d %H:%M"), "smoke": smoke, "environment": _environment(),
                              "skipped": {}, "parts": {}}
    # most telling first: a lent GPU may be taken back before the last part
    parts: list[tuple[str, Callable[[], Any], str | None]] = [
        ("cuda_tests", lambda: _cuda_tests(), None if _has_pytest() else "pytest is not installed here"),
        ("fits", lambda: _fits(work, smoke, args.fit_seconds or (3.0 if smoke else 25.0), "gpu" if cuda else "cpu"),
         None),
        ("estimate", lambda: _estimate(smoke, cuda), None),
        ("probes", lambda: run_probes(torch.device("cuda" if cuda else "cpu"), smoke,
                                      result["environment"].get("catalog_name")), None),
        ("collect", lambda: _collect(work), None if cuda else "collect measures ops on a CUDA GPU"),
        ("host_issue", lambda: host_issue(torch.device("cuda" if cuda else "cpu")), None),
        ("demo", lambda: _demo(work, smoke), None if cuda else "the demo is the README's CPU run; here only on a GPU"),
    ]
    began = time.time()
    for name, run, reason_to_skip in parts:
        if name in args.skip or (args.only and name not in args.only):
            result["skipped"][name] = "--skip" if name in args.skip else "not in --only"
            continue
        if reason_to_skip:
            result["skipped"][name] = reason_to_skip
            continue
        if time.time() - began > args.budget_s:
            result["skipped"][name] = f"time budget of {args.budget_s:.0f} s spent"
            continue
        started = time.time()
        try:
            result["parts"][name] = run()
        except Exception as error:  # noqa: BLE001 - one part failing must not lose the others' figures
            result["parts"][name] = {"error": f"{type(error).__name__}: {error}",
                                     "traceback": traceback.format_exc().splitlines()[-25:]}
        result["parts"][name + "_seconds"] = round(time.time() - started, 1)
        print(f"[acceptance] {name}: {time.time() - started:.0f} s", flush=True)
        _write(args.out, result)  # after every part, so a run cut short still leaves its figures
    _write(args.out, result)
    print(json.dumps(result["summary"], indent=1))
    failed = [name for name, part in result["parts"].items() if isinstance(part, dict) and "error" in part]
    return 1 if failed else 0


def _write(out: str, result: dict[str, Any]) -> None:
    result["summary"] = _summary(result["parts"])
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1, default=str) + "\n")


def _has_pytest() -> bool:
    import importlib.util

    return importlib.util.find_spec("pytest") is not None


def _environment() -> dict[str, Any]:
    import lightning

    env: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                           "lightning": lightning.__version__, "cuda": torch.version.cuda,
                           "cpu": platform.processor() or platform.machine()}
    try:
        import transformers

        env["transformers"] = transformers.__version__
    except ImportError:
        env["transformers"] = None
    if torch.cuda.is_available():
        from prenet_callbacks.hardware import current_device

        info = current_device(device="cuda")
        env.update({"gpu": torch.cuda.get_device_name(), "gpus": torch.cuda.device_count(),
                    "catalog_name": getattr(info.accelerator, "name", None),
                    "detected": bool(getattr(info.accelerator, "detected", False))})
    return env


def _cuda_tests() -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-m", "cuda", "-q", "-rfEs", "--tb=short",
                           "-p", "no:cacheprovider", "--continue-on-collection-errors", "tests/"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    tail = proc.stdout.strip().splitlines()[-80:]
    return {"exit_code": proc.returncode, "summary": tail[-1] if tail else "", "tail": tail}


def _demo(work: Path, smoke: bool) -> dict[str, Any]:
    out = work / "demo"
    proc = subprocess.run([sys.executable, "examples/lightning_cnn.py", "--out", str(out), "--targets", "A100"],
                          cwd=ROOT, capture_output=True, text=True, timeout=240)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    report = json.loads((out / "prenet_report.json").read_text())
    actual = report.get("actual") or {}
    return {"fit_s": actual.get("fit_s"), "first_prediction_error": actual.get("first_prediction_error"),
            "first_prediction": actual.get("first_prediction"), "coverage": report["measured"].get("coverage"),
            "timing": report["measured"].get("timing")}


def _fits(work: Path, smoke: bool, seconds: float, accelerator: str) -> list[dict[str, Any]]:
    device = torch.device("cuda" if accelerator == "gpu" else "cpu")
    rows = []
    for i, spec in enumerate(gpu_fits.FITS):
        batch_s = gpu_fits.probe_batch_s(spec, device, smoke)
        epochs = gpu_fits.sized_epochs(spec, batch_s, seconds, smoke)
        runs = {}
        # alternate which goes first, so that a drift of the machine does not read as overhead
        for with_callback in ((False, True) if i % 2 == 0 else (True, False)):
            runs[with_callback] = gpu_fits.run_fit(spec, with_callback=with_callback, epochs=epochs, out=work / "fits",
                                                   smoke=smoke, accelerator=accelerator)
        row = dict(runs[True])
        row.update({"fit": spec.name, "precision": spec.precision, "accumulate": spec.accumulate, "epochs": epochs,
                    "probe_batch_s": round(batch_s, 6), "wall_without_s": runs[False]["wall_s"],
                    "overhead": round(runs[True]["wall_s"] / runs[False]["wall_s"] - 1, 4)})
        rows.append(row)
    return rows


def _collect(work: Path) -> dict[str, Any]:
    from predictor_models.collect import collect
    from predictor_models.datasets import read_rows
    from predictor_models.hardware import lookup_hardware
    from prenet_callbacks.projection.pricing.predictor_source import resolve_predictor

    path = collect(work / "collect", quick=True, log=lambda line: print("[collect]", line, flush=True))
    samples = read_rows([path])
    predictor, _ = resolve_predictor(None)
    by_class: dict[str, list[tuple[float, float]]] = {}
    for sample in samples:
        device = lookup_hardware(sample.device)
        predicted = float(predictor.predict_seconds([sample.op], device)[0])
        by_class.setdefault(sample.op.op_class, []).append((predicted, sample.seconds))

    def mape(pairs: list[tuple[float, float]]) -> float | None:
        return round(statistics.mean(abs(p / m - 1) for p, m in pairs), 4) if pairs else None

    result = {"rows": len(samples), "file": str(path),
              "mape_by_class": {k: mape(v) for k, v in sorted(by_class.items())},
              # ops of a few microseconds are mostly launch latency; a training step is mostly its long ops
              "mape_by_class_over_20us": {k: mape([(p, m) for p, m in v if m >= 20e-6])
                                          for k, v in sorted(by_class.items())},
              "time_weighted_error_by_class": {k: round(sum(abs(p - m) for p, m in v) / sum(m for _, m in v), 4)
                                               for k, v in sorted(by_class.items())},
              "rows_by_class": {k: len(v) for k, v in sorted(by_class.items())}}
    # calibrating on these rows: the error on rows held back from the fit, before and after
    from predictor_models.calibration.api import calibrate_rows

    result["calibration"] = calibrate_rows(path.parent).summary
    return result


def _measured_step_s(build: Callable, batch: int, precision: str, device: torch.device, steps: int,
                     top_kernels: bool = False) -> tuple[float, float, list[dict[str, Any]] | None, dict | None]:
    """Median time of a real training step (forward, backward, AdamW) at this batch and precision, the
    median host time to issue it, (``top_kernels``) its most expensive ops, and the SM clock and board power
    while the timed steps ran (`gpu_clocks.ClockSampler`; None without ``nvidia-smi``)."""
    model, make_batch, loss_fn = build()
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    inputs = make_batch(batch, device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16-mixed")
    times, host = [], []

    def step() -> None:
        with autocast:
            out = model(**inputs) if isinstance(inputs, dict) else model(inputs)
            loss = loss_fn(out)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):                # warm-up: cuDNN/cuBLAS choices, the allocator, the clocks
        step()
    sampler = ClockSampler(device.index or 0) if device.type == "cuda" else None
    with sampler or contextlib.nullcontext():
        for _ in range(steps):
            gpu_fits._sync(device)
            start = time.perf_counter()
            step()
            queued = time.perf_counter()   # the host has issued the whole step
            gpu_fits._sync(device)
            times.append(time.perf_counter() - start)
            host.append(queued - start)
    kernels = None
    if top_kernels and device.type == "cuda":
        prof = _profiled(step, shapes=True)
        kernels = _top_kernels(prof) + [{"op_table": op_table(prof)}, {"kernel_table": kernel_table(prof)}]
    model = optimizer = inputs = None   # frees the GPU memory (the step closure holds them)
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return statistics.median(times), statistics.median(host), kernels, sampler.result if sampler else None


def _profiled(step: Callable[[], None], *, shapes: bool = False) -> Any:
    """torch.profiler over one step (CPU, and CUDA where there is a GPU), input shapes recorded on request."""
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.cuda.is_available()
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else []),
                 record_shapes=shapes) as prof:
        step()
        if cuda:
            torch.cuda.synchronize()
    return prof


def _device_attr(event: Any) -> str:
    return "device_time_total" if hasattr(event, "device_time_total") else "cuda_time_total"


def op_table(prof: Any, top: int = 250) -> list[dict[str, Any]]:
    """Every aten op of a profiled step (`_profiled(..., shapes=True)`) by name and input shapes, with its
    calls and self device time (self CPU time where no GPU was profiled), the most expensive first: per-op
    truth to hold `estimate()`'s op stream against (issue 23: which bf16 kernels and casts it prices wrong)."""
    cuda = torch.cuda.is_available()
    key = "self_device_us" if cuda else "self_cpu_us"
    rows = []
    for e in prof.key_averages(group_by_input_shape=True):
        us = getattr(e, "self_" + _device_attr(e), 0.0) if cuda else e.self_cpu_time_total
        if us > 0 and e.key.startswith("aten::"):
            rows.append({"op": e.key, "shapes": [list(s) for s in (e.input_shapes or [])], "calls": e.count,
                         key: round(us, 2)})
    rows.sort(key=lambda r: -r[key])
    return rows[:top]


def kernel_table(prof: Any, top: int = 150) -> list[dict[str, Any]]:
    """The profiled step's device kernels by name, with calls and device time, the most expensive first: which
    kernels cuBLAS, cuDNN and SDPA chose on this GPU (`op_table_compare.kernel_family` reads the tensor-core
    instruction from the name: a Hopper GPU reaches its tensor peak only with warpgroup MMA)."""
    rows = []
    for e in prof.key_averages():
        if not str(getattr(e, "device_type", "")).endswith("CUDA"):
            continue
        us = getattr(e, "self_" + _device_attr(e), 0.0)
        if us > 0:
            rows.append({"kernel": e.key[:240], "calls": e.count, "device_us": round(us, 2)})
    rows.sort(key=lambda r: -r["device_us"])
    return rows[:top]


def _top_kernels(prof: Any, top: int = 12) -> list[dict[str, Any]]:
    """The profiled step's most expensive ops by device time, to see what a projection misses."""
    averages = prof.key_averages()
    attr = _device_attr(averages[0])
    rows = sorted(averages, key=lambda e: getattr(e, attr), reverse=True)
    total = sum(getattr(e, "self_" + attr, 0.0) for e in averages)
    out = [{"op": e.key, "calls": e.count, "device_ms": round(getattr(e, attr) / 1e3, 3)} for e in rows[:top]]
    return [{"self_device_ms_all_ops": round(total / 1e3, 3), "ops": len(averages)}] + out


def _estimate(smoke: bool, cuda: bool) -> list[dict[str, Any]]:
    from prenet_callbacks import estimate

    device = torch.device("cuda" if cuda else "cpu")
    target = _environment().get("catalog_name") if cuda else "A100"
    models = gpu_models.SMOKE_MODELS if smoke else gpu_models.ESTIMATE_MODELS
    rows = []
    for name, (build, batches) in models.items():
        for batch in batches:
            for precision in ("32-true", "bf16-mixed"):
                with torch.device("meta"):
                    model, make_batch, loss_fn = build()
                    example = make_batch(batch, "meta")
                est = estimate(model, example, targets=[target], precision=precision, optimizer="adamw",
                               loss_fn=loss_fn)
                predicted = est.step_seconds(target)
                row = {"model": name, "batch": batch, "precision": precision, "target": target,
                       "predicted_step_s": round(predicted, 6),
                       "predicted_phases_s": est.row(target).get("phases_s"),
                       "predicted_kernels": round(float(est.workload.kernels), 1)}
                if cuda:
                    measured, host, kernels, clocks = _measured_step_s(build, batch, precision, device, steps=10,
                                                                       top_kernels=batch == batches[0])
                    row.update({"measured_step_s": round(measured, 6), "host_issue_s": round(host, 6),
                                "error": round(predicted / measured - 1, 4), "clocks": clocks})
                    if kernels:
                        row["top_ops"] = kernels
                rows.append(row)
    return rows


def host_issue(device: torch.device, repeats: int = 15) -> dict[str, Any]:
    """What this machine's host spends issuing eager ops, against the constants every projection assumes
    (`host_constants.json`, measured on the project's CPU with CPU tensors): `measure_host_costs` as a CPU run here
    would measure it, and the same tiny transformer-block pattern on ``device`` in fp32 and under bf16 autocast, timed
    without synchronising (the host's issue time alone). Per op: ``fwd_op_s`` and ``bwd_op_s`` (launch included on a
    GPU; the constants' figure to compare is theirs plus ``launch_s``) and one tiny ``aten::add``. Whether the
    H200's bf16 steps that grew little with their batch (BERT-base 48 -> 55 ms, docs/gpu-runs.md) waited on the host
    is what this tells."""
    from torch import nn

    from prenet_callbacks.projection.pricing.host import (
        _count_step_ops, _time_aten_op, _time_steps, default_host_costs, measure_host_costs)

    constants = default_host_costs()
    out: dict[str, Any] = {"constants": constants.to_dict(), "cpu_tensors": measure_host_costs(repeats)}
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Dropout(0.1), nn.Linear(16, 16),
                          nn.ReLU(), nn.LayerNorm(16), nn.Linear(16, 4)).to(device)
    x = torch.randn(2, 8, device=device)
    with torch.device(device):
        add = [min(_time_aten_op(repeats))]
    for precision in ("32-true", "bf16-mixed"):
        autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16-mixed")
        with autocast:
            fwd_ops, bwd_ops = _count_step_ops(model, x)
            fwd, bwd = _time_steps(model, x, repeats + 3)
        if device.type == "cuda":
            torch.cuda.synchronize()
        out[f"{device.type}_tensors_{precision}"] = {
            "fwd_op_s": min(fwd[3:]) / max(fwd_ops, 1), "bwd_op_s": min(bwd[3:]) / max(bwd_ops, 1),
            "fwd_ops": fwd_ops, "bwd_ops": bwd_ops, "aten_add_s": add[0]}
    launch = constants.launch_s if device.type == "cuda" else 0.0
    out["ratio_to_constants"] = {
        key: {"fwd_op": round(v["fwd_op_s"] / (constants.fwd_op_s + launch), 3),
              "bwd_op": round(v["bwd_op_s"] / (constants.bwd_op_s + launch), 3),
              "aten_add": round(v["aten_add_s"] / (constants.aten_op_s + launch), 3)}
        for key, v in out.items() if key.startswith(device.type + "_tensors_")}
    return out


def _covered(coverage: dict[str, Any]) -> bool:
    """Issue 11's coverage target: per-module times within 10% of the clean step. Where the GPU idles
    part of the step (host-bound: ``device_busy`` < 0.9) no profile of GPU work can add up to the step;
    there the per-module times must cover the GPU's own work (all kernels) to 10% instead."""
    ratio, busy, kernels = coverage.get("ratio"), coverage.get("device_busy"), coverage.get("kernels_s")
    if ratio is None:
        return False
    if abs(ratio - 1) <= 0.10:
        return True
    return busy is not None and busy < 0.9 and bool(kernels) and coverage["modules_s"] / kernels >= 0.9


def _summary(parts: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    fits = parts.get("fits")
    if isinstance(fits, list) and fits:
        errors = [abs(f["first_prediction_error"]) for f in fits if f.get("first_prediction_error") is not None]
        coverages = [f.get("coverage") or {} for f in fits]
        covered = [_covered(c) for c in coverages]
        summary["fits"] = {
            "first_error_median": round(statistics.median(errors), 4) if errors else None,
            "first_error_worst": round(max(errors), 4) if errors else None,
            "coverage_ratios": [c.get("ratio") for c in coverages],
            "device_busy": [c.get("device_busy") for c in coverages],
            "coverage_met": covered,
            "overheads": [f["overhead"] for f in fits],
            "targets_met": bool(errors) and statistics.median(errors) <= 0.03 and max(errors) <= 0.06
                           and all(covered) and all(f["overhead"] <= 0.02 for f in fits),
        }
    collect = parts.get("collect")
    if isinstance(collect, dict) and "mape_by_class" in collect:
        summary["collect_mape_by_class"] = collect["mape_by_class"]
    estimates = parts.get("estimate")
    if isinstance(estimates, list):
        errors = [abs(r["error"]) for r in estimates if "error" in r]
        summary["estimate_median_abs_error"] = round(statistics.median(errors), 4) if errors else None
    tests = parts.get("cuda_tests")
    if isinstance(tests, dict):
        summary["cuda_tests"] = tests.get("summary")
    return summary


if __name__ == "__main__":
    sys.exit(main())
