"""Synthetic reports and a stand-in predictor for the projection tests (no shared data, no artifact)."""
from __future__ import annotations

import numpy as np

from predictor_models.predictor import Predictor
from prenet_callbacks.report import Report


def gemm(m: int, n: int, k: int, dtype: str = "float32") -> dict:
    size = 4 if dtype == "float32" else 2
    return {"op_class": "gemm", "dtype": dtype, "flops": 2.0 * m * n * k, "bytes_read": size * (m * k + k * n),
            "bytes_written": size * m * n, "dims": {"b": 1, "m": m, "n": n, "k": k}, "tf32": False, "name": "aten::mm"}


def pointwise(numel: int) -> dict:
    return {"op_class": "elementwise", "dtype": "float32", "flops": float(numel), "bytes_read": 8.0 * numel,
            "bytes_written": 4.0 * numel, "dims": {"numel": numel, "inputs": 2}, "tf32": False, "name": "aten::add"}


def adam(numel: int) -> dict:
    return {"op_class": "optimizer", "dtype": "float32", "flops": 12.0 * numel, "bytes_read": 16.0 * numel,
            "bytes_written": 12.0 * numel, "dims": {"numel": numel, "tensors": 8, "kind": 2}, "tf32": False,
            "name": "aten::_fused_adamw_"}


def make_report(*, device: str = "cuda", catalog_name: str | None = "A100-SXM4-80GB", layers: int = 4,
                width: int = 4096, tokens: int = 8192, precision: str = "32-true", devices: int = 1,
                deepspeed: dict | None = None, batch_size: int | None = 32, with_layers: bool = True,
                memory: dict | None = None, optimizer_ops: list | None = None) -> Report:
    """A report as the session writes it: 4 linear layers, measured times, plan and a prediction.

    `memory`: a ``measured.memory`` account;
    `optimizer_ops`: the optimizer pseudo-layer's ops (default: one fused Adam kernel)."""
    rows = []
    params = width * width
    for i in range(layers if with_layers else 0):
        rows.append({"name": f"block{i}", "module_type": "Linear", "calls_per_step": 1, "forward_s": 0.004,
                     "backward_s": 0.008, "optimizer_s": 0.0, "params": params,
                     "ops": [{"name": "aten::mm", "count_per_step": 1, "seconds_per_step": 0.0039, "phase": "fwd",
                              "spec": gemm(tokens, width, width)},
                             {"name": "aten::mm", "count_per_step": 2, "seconds_per_step": 0.0079, "phase": "bwd",
                              "spec": gemm(tokens, width, width)},
                             {"name": "aten::add", "count_per_step": 1, "seconds_per_step": 0.0001, "phase": "fwd",
                              "spec": pointwise(tokens * width)}]})
    if with_layers:
        rows.append({"name": "optimizer", "module_type": "optimizer", "calls_per_step": 1, "forward_s": 0.0,
                     "backward_s": 0.0, "optimizer_s": 0.003, "params": 0,
                     "ops": optimizer_ops or [{"name": "adam", "count_per_step": 1, "seconds_per_step": 0.003,
                                               "phase": "opt", "spec": adam(layers * params)}]})
    current = {"device": device, "name": "NVIDIA A100-SXM4-80GB" if device == "cuda" else "Some CPU",
               "catalog_name": catalog_name if device == "cuda" else None, "devices": devices,
               "precision": precision, "float32_matmul_precision": "highest"}
    if batch_size:
        current["batch_size"] = batch_size
    if deepspeed:
        current["deepspeed"] = deepspeed
    report = Report(current=current, plan={"total_steps": 10_000, "accumulate": 1},
                    measured={"layers": {"layers": rows, "steps": 3}, "batch_s": 0.06, "data_wait_s": 0.005,
                              "step_phases": {"data_s": 0.005, "forward_s": 0.016, "backward_s": 0.032,
                                              "optimizer_s": 0.003, "other_s": 0.004, "total_s": 0.06}})
    if memory:
        report.measured["memory"] = memory
    parts = {"setup_s": 30.0, "train_s": 600.0, "validation_s": 20.0, "checkpoints_s": 10.0, "epoch_boundaries_s": 0.0}
    report.add_prediction({"at_step": 16, "elapsed_s": 60.0, "step_s": 0.06, "predicted_total_s": 660.0,
                           "eta_s": 600.0, "low_s": 620.0, "high_s": 700.0, "breakdown": parts})
    return report


class ScaledBound(Predictor):
    """Stand-in predictor: physical bound / a fixed utilisation, with a fixed held-out error."""

    def __init__(self, utilisation: float = 0.6, error: float = 0.2) -> None:
        super().__init__({}, {"version": "test-stand-in"}, default_utilisation=utilisation)
        self.error = error

    def relative_error(self, op_class: str) -> float:
        return self.error


def predicted_ratio(predictor, specs, a, b) -> float:
    return float(np.sum(predictor.predict_seconds(specs, a)) / np.sum(predictor.predict_seconds(specs, b)))


def importable_models(tmp_path, monkeypatch, source: str, module: str) -> str:
    """Write `source` as an importable module `module` in `tmp_path` (the CLI's working directory)."""
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return module
