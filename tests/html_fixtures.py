"""Hand-made ``prenet-report/2`` reports for the HTML page tests: a finished CPU fit and its variants.

Field names follow docs/report-schema.md (COORDINATION.md); the figures are those of a small CNN fit on
a 2-core CPU, so the charts look like a real run's.
"""
from __future__ import annotations

import copy
from typing import Any

from prenet_callbacks.report import SCHEMA


def _layer(name: str, kind: str, fwd: float, bwd: float, flops: float, moved: float, params: int) -> dict[str, Any]:
    return {"name": name, "module_type": kind, "calls_per_step": 1.0, "forward_s": fwd, "backward_s": bwd,
            "optimizer_s": 0.0, "params": params, "opaque": False, "ops": [],
            "features": {"co_flops": flops, "fwd_flops": flops, "bwd_flops": 2 * flops, "opt_flops": 0.0,
                         "bytes_moved": moved, "arithmetic_intensity": 3 * flops / moved, "dtype": "float32"}}


def _target(label: str, devices: int, step: float, price: float | None, *, current: bool = False,
            fits: bool | None = True, steps: int = 192) -> dict[str, Any]:
    total = step * steps / devices + 1.0
    error = None if current else 0.2
    band = (total, total) if current else (total * 0.8, total * 1.2)
    return {"name": label.split("x ")[-1], "label": label, "devices": devices, "nodes": 1, "current": current,
            "step_s": step, "step_low_s": step * (1 - (error or 0)), "step_high_s": step * (1 + (error or 0)),
            "relative_error": error, "steps": steps // devices, "total_s": total, "total_low_s": band[0],
            "total_high_s": band[1], "speedup": 24.0 / total,
            "usd_per_gpu_hour": price, "usd_per_hour": None if price is None else price * devices,
            "total_usd": None if price is None else price * devices * total / 3600,
            "price_date": None if price is None else "2026-11-09", "fits_memory": fits, "memory_gib": 1.1,
            "memory_capacity_gib": 16.0 if fits is not False else 0.5, "max_batch": None if fits is not False else 12,
            "batch_per_device": 64, "global_batch": 64 * devices, "batch_convention": "per_device",
            "method": "measured" if current else "absolute", "phases_s": {}, "comm_s": 0.0, "comm_exposed_s": 0.0,
            "communication": None, "host_bound": False, "unmodelled_share": 0.0, "precision": "32-true",
            "precision_note": None, "assumed": {}, "notes": ["T4 has no TF32: 32-true projected with FP32 math"]
            if label == "T4" else []}


def _prediction(step: int, total: float, elapsed: float, naive: float | None, fit: int = 1) -> dict[str, Any]:
    return {"fit": fit, "at_step": step, "at_batch": step, "elapsed_s": elapsed, "predicted_total_s": total,
            "eta_s": total - elapsed, "low_s": total * 0.9, "high_s": total * 1.1, "step_s": 0.1,
            "batches_per_s": 10.0, "naive_total_s": naive, "steps": 192, "time_limited": False,
            "breakdown": {"setup_s": 0.7, "train_s": total - 3.4, "validation_s": 2.6, "checkpoints_s": 0.09,
                          "epoch_boundaries_s": 0.01},
            "of_which": {"data_loading_s": 0.6}, "validation_source": "measured", "note": None}


def finished() -> dict[str, Any]:
    """A completed 192-step fit on a CPU with eight priced targets and a recommendation."""
    return {
        "schema": SCHEMA, "created": "2026-11-30T15:53:27+00:00", "updated": "2026-11-30T15:53:50+00:00",
        "run": {"framework": "lightning", "start": "fresh", "start_step": 0, "fits": 1,
                "limits": {"max_steps": None, "max_epochs": 2, "max_time_s": None, "early_stopping": False},
                "startup_s": None,
                "ended": {"reason": "completed", "detail": None, "at": "2026-11-30T15:53:50+00:00", "at_step": 192,
                          "elapsed_s": 20.4}},
        "current": {"device": "cpu", "name": "AMD EPYC", "catalog_name": None, "detected": False, "device_index": None,
                    "devices": 1, "precision": "32-true", "float32_matmul_precision": "highest",
                    "cudnn_allow_tf32": True, "strategy": "SingleDeviceStrategy", "framework": "lightning",
                    "cpu_cores": 2},
        "plan": {"total_batches": 192, "batches_per_epoch": 96, "max_epochs": 2, "accumulate": 1, "total_steps": 192,
                 "validation_runs": 2, "checkpoint_saves": 4, "unknown_reason": None},
        "measured": {
            "layers": {"steps": 3, "device": "cpu", "limitations": [], "layers": [
                _layer("features.1.0", "Conv2d", 0.008, 0.014, 6.04e8, 4.9e6, 18432),
                _layer("features.2.0", "Conv2d", 0.0082, 0.0184, 6.04e8, 2.7e6, 73728),
                _layer("features.0.3", "MaxPool2d", 0.0078, 0.0017, 2.1e6, 4.2e7, 0),
                _layer("features.0.1", "BatchNorm2d", 0.0039, 0.0035, 1.05e7, 5.0e7, 64),
                _layer("head", "Linear", 0.0003, 0.0004, 2.6e6, 1.1e6, 20490),
                {"name": "features", "module_type": "Sequential", "forward_s": 0.0, "backward_s": 0.0}]},
            "step_phases": {"data_s": 0.0019, "forward_s": 0.052, "backward_s": 0.060, "optimizer_s": 0.0027,
                            "other_s": 0.0001, "total_s": 0.1167},
            "timing": {"clock": "cpu", "op_timing": "dispatch", "step_timing": "perf_counter"},
        },
        "predictions": [_prediction(9, 24.0, 1.9, 41.0), _prediction(50, 21.0, 5.9, 22.6),
                        _prediction(100, 19.6, 10.5, 20.1), _prediction(159, 19.1, 15.4, 18.6)],
        "targets": [_target("AMD EPYC", 1, 0.106, None, current=True), _target("T4", 1, 0.0084, 0.526),
                    _target("L4", 1, 0.0068, 0.71), _target("A100-SXM4-80GB", 1, 0.005, 1.79),
                    _target("H100-SXM5", 1, 0.0046, 3.99), _target("8x A100-SXM4-80GB", 8, 0.0051, 1.79),
                    _target("8x H100-SXM5", 8, 0.0047, 3.99)],
        "recommendation": {"text": "fastest 8x H100-SXM5 (1.1 s, $0.01); cheapest T4 (<$0.01, 2.6 s)",
                           "fastest": "8x H100-SXM5", "cheapest": "T4", "best_value": "8x A100-SXM4-80GB", "stay": False},
        "projection": {"notes": ["measured on AMD EPYC: target times are absolute predictions"], "assumptions": "",
                       "batch_convention": "per_device", "precision": "32-true", "predictor": "1.1.0",
                       "work": {"steps": 192, "done_steps": 0}},
        "actual": {"fit_s": 20.4, "steps": 192, "batches": 192, "ended": "completed",
                   "first_prediction": {"at_step": 9, "predicted_total_s": 24.0}, "first_prediction_error": 0.176,
                   "predicted_for_done_work_s": None},
        "limitations": [],
    }


def unknown_length() -> dict[str, Any]:
    """An iterable dataset without max_steps, still running: rates, no totals."""
    data = finished()
    data["run"]["ended"] = None
    data["actual"] = None
    data["plan"].update(total_steps=None, total_batches=None, max_epochs=None,
                        unknown_reason="the training DataLoader has no length and max_steps is not set")
    for prediction in data["predictions"]:
        prediction.update(predicted_total_s=None, eta_s=None, low_s=None, high_s=None, naive_total_s=None,
                          steps=None, breakdown=None, of_which=None,
                          note="the run length is unknown: iterable dataset without max_steps")
    for target in data["targets"]:
        target.update(total_s=None, total_low_s=None, total_high_s=None, total_usd=None, steps=None)
    data["recommendation"] = {"text": "fastest per step 8x H100-SXM5", "fastest": "8x H100-SXM5", "cheapest": None,
                              "best_value": None, "stay": False}
    return data


def no_targets() -> dict[str, Any]:
    data = finished()
    data["targets"] = []
    data["recommendation"] = None
    return data


def not_fitting() -> dict[str, Any]:
    """Two targets whose memory is too small for the batch."""
    data = finished()
    data["targets"].append(_target("P4", 1, 0.02, 0.3, fits=False))
    data["targets"].append(_target("4x P4", 4, 0.021, 0.3, fits=False))
    return data


def failed_profile() -> dict[str, Any]:
    """The per-layer profile failed: step timing only, no layers."""
    data = finished()
    data["measured"]["layers"] = {"layers": [], "limitations": ["per-layer profiling failed (RuntimeError: hook "
                                                                "raised); step timing only"]}
    data["limitations"] = ["per-layer profiling failed: the projection uses step timing only"]
    return data


def resumed() -> dict[str, Any]:
    """Fit 2 resumed from a checkpoint at step 96 and completed; fit 1 was interrupted."""
    data = finished()
    data["run"].update(start="resumed", start_step=96, fits=2)
    data["run"]["ended"].update(elapsed_s=10.8)
    data["predictions"] = [_prediction(9, 24.0, 1.9, 41.0, fit=1), _prediction(50, 21.0, 5.9, 22.6, fit=1),
                           _prediction(105, 11.5, 1.5, 14.0, fit=2), _prediction(150, 11.0, 6.2, 11.3, fit=2)]
    data["actual"].update(fit_s=10.8, first_prediction={"at_step": 105, "predicted_total_s": 11.5},
                          first_prediction_error=0.065)
    data["projection"]["work"] = {"steps": 192, "done_steps": 96}
    return data


def stopped_early() -> dict[str, Any]:
    """EarlyStopping ended the fit at step 120 of 192."""
    data = finished()
    data["run"]["limits"]["early_stopping"] = True
    data["run"]["ended"].update(reason="stopped_early", detail="EarlyStopping on val_loss", at_step=120,
                                elapsed_s=13.0)
    data["actual"].update(fit_s=13.0, steps=120, ended="stopped_early", first_prediction_error=None,
                          predicted_for_done_work_s=12.6)
    data["predictions"] = data["predictions"][:3]
    return data


def on_gpu() -> dict[str, Any]:
    """The same fit on an A100, which the hardware catalog knows: the layer chart gets a roofline."""
    data = finished()
    data["current"].update(device="cuda", name="NVIDIA A100-SXM4-80GB", catalog_name="A100-SXM4-80GB",
                           detected=True, device_index=0, cpu_cores=None)
    return data


def deepspeed() -> dict[str, Any]:
    """A DeepSpeed run (attach, not a Lightning fit): the page speaks of a run."""
    data = finished()
    data["run"]["framework"] = data["current"]["framework"] = "deepspeed"
    return data


VARIANTS = {"finished": finished, "unknown_length": unknown_length, "no_targets": no_targets,
            "not_fitting": not_fitting, "failed_profile": failed_profile, "resumed": resumed,
            "stopped_early": stopped_early, "on_gpu": on_gpu, "deepspeed": deepspeed}


def variant(name: str) -> dict[str, Any]:
    return copy.deepcopy(VARIANTS[name]())
