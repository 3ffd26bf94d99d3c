"""Estimate a training step on other hardware before training, from the model alone.

    import torch
    from prenet_callbacks import estimate
    with torch.device("meta"):
        model = MyNet()
    est = estimate(model, torch.empty(1024, 3, 224, 224, device="meta"), targets=["A100", "8x H100"],
                   precision="bf16-mixed", steps=50_000)
    est.step_seconds("8x H100")   # one optimizer step (forward, backward, optimizer) at that batch per GPU
    print(est.table())

Nothing is computed on ``meta``: the ops of one step are captured (shapes only) and predicted on
each target (method "absolute"), as they would run there: fused attention where the target has it,
PyTorch's default optimizer implementation for the device, eager PyTorch's host cost per kernel.
See ``docs/projection.md``.
"""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from predictor_models.aten_ops import OpCall, op_spec_from_call
from predictor_models.hardware.providers import check_provider
from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.estimate_checks import check_batch_size, check_model, check_steps, zero_config
from prenet_callbacks.projection.ops.accumulation import accumulation_ops, check_accumulate
from prenet_callbacks.projection.ops.alignment import unaligned_gemm_note
from prenet_callbacks.projection.ops.autocast import CAST_NAME
from prenet_callbacks.projection.ops.conv_search import conv_search_note
from prenet_callbacks.projection.rows.advice import recommend
from prenet_callbacks.projection.ops.capture import Capture, CaptureError, capture_step
from prenet_callbacks.projection.ops.fp8 import check_fp8_targets, fp8_notes, fp8_targets
from prenet_callbacks.projection.pricing.host import ExecutionOptions
from prenet_callbacks.projection.ops.layout import layout_ops
from prenet_callbacks.projection.rows.layout_rows import check_layouts
from prenet_callbacks.projection.ops.optimizer_ops import (
    memory_optimizer_name,
    normalise_optimizer,
    optimizer_ops,
    split_optimizer,
)
from prenet_callbacks.projection.parallel.data_parallel import ZeroConfig
from prenet_callbacks.projection.ops.precision import (Precision, activation_scale, convert, parse_precision,
                                                    precision_alias_note, retune)
from prenet_callbacks.projection.pricing.predictor_source import resolve_predictor
from prenet_callbacks.projection.ops.recompute import apply_recompute, check_policy, find_layers
from prenet_callbacks.projection.rows.project import RunShape, check_batch_convention, project_targets
from prenet_callbacks.projection.targets import parse_projection_target, resolve_targets
from prenet_callbacks.projection.ops.workload import Unit, Workload

__all__ = ["CaptureError", "Estimate", "estimate"]


class Estimate:
    """Projected step times, totals, memory fit and cost of one model on several targets."""

    def __init__(self, workload: Workload, rows: list[dict[str, Any]], shape: RunShape, predictor,
                 notes: list[str], batch_convention: str = "per_device", sharding: ZeroConfig | None = None,
                 provider: str | None = None) -> None:
        self.workload = workload
        self.rows = rows
        self.shape = shape
        self._predictor = predictor
        self.notes = notes
        self.batch_convention = batch_convention
        self._sharding = sharding
        self.provider = provider
        self.recommendation = recommend(rows)

    def row(self, target: str) -> dict[str, Any]:
        """The projection row of `target` ("8x H100", "4x8 H100"), projecting it now if it was not among
        the targets."""
        parsed = parse_projection_target(target)
        if self.workload.precision.fp8:
            check_fp8_targets([parsed.accelerator], [parsed.label])
        for row in self.rows:
            if row["label"] == parsed.label:
                return row
        check_layouts(self.workload, [parsed], self.batch_convention)
        return project_targets(self.workload, [parsed], self._predictor, self.shape,
                               batch_convention=self.batch_convention, sharding=self._sharding,
                               provider=self.provider)[0]

    def step_seconds(self, target: str) -> float:
        """Seconds of one optimizer step (forward, backward, optimizer, host) on `target`."""
        return float(self.row(target)["step_s"])

    def total_seconds(self, target: str) -> float | None:
        """Whole-run seconds on `target` when `steps` was given (per-device batch convention: data-parallel
        targets need fewer steps)."""
        return self.row(target)["total_s"]

    def to_dict(self) -> dict[str, Any]:
        w = self.workload
        return {
            "schema": "prenet-estimate/2",
            "precision": w.precision.name,
            "precision_detail": w.precision.label(),
            "optimizer": w.optimizer,
            "batch_size": w.batch_size,
            "accumulate": w.accumulate,
            "params": w.params,
            "activation_bytes": w.activation_bytes,
            "steps": self.shape.steps,
            "batch_convention": self.batch_convention,
            "provider": self.provider,
            "targets": self.rows,
            "recommendation": self.recommendation,
            "notes": self.notes,
        }

    def table(self, width: int | None = None) -> str:
        """The targets as a plain-text table (the training report's columns) at ``width`` columns (default:
        `terminal.output_width`: the terminal's, else ``COLUMNS``, else 100)."""
        from rich.console import Console

        from prenet_callbacks.outputs.render import targets_table
        from prenet_callbacks.report import Report
        from prenet_callbacks.report_upgrade import upgrade_target
        from prenet_callbacks.outputs.terminal import output_width

        report = Report(targets=[upgrade_target(row) for row in self.rows])
        buffer = io.StringIO()
        console = Console(file=buffer, width=width or output_width(), force_terminal=False, color_system=None)
        table = targets_table(report)
        if table is not None:
            console.print(table)
        if self.recommendation:
            console.print(f"Recommendation: {self.recommendation['text']}")
        console.print(f"Batch: {_convention_text(self.batch_convention)}")
        for note in self.notes:
            console.print(f"• {note}")
        return buffer.getvalue()

    def __repr__(self) -> str:
        return f"Estimate({len(self.rows)} targets, precision={self.workload.precision.name!r})"


def _convention_text(convention: str) -> str:
    return ("each GPU keeps the given batch (per-device convention)" if convention == "per_device"
            else "the given batch is the global batch, split over each target's GPUs (global convention)")


def estimate(model: Any, example_input: Any, *, targets: Sequence[str] | None = None, precision: str = "32-true",
             optimizer: str = "adamw", float32_matmul_precision: str | None = None, steps: int | None = None,
             batch_size: int | None = None, loss_fn: Callable[[Any], Any] | None = None,
             deepspeed: dict[str, Any] | None = None, predictor=None, batch_convention: str = "per_device",
             sharding: str | None = None, compile: str = "none", cuda_graphs: bool = False,
             channels_last: bool | None = None, accumulate: int = 1,
             activation_checkpointing: str | None = None, provider: str | None = None) -> Estimate:
    """Project one training step of `model` on `example_input` onto `targets` without training.

    Args:
        model: an ``nn.Module``, ideally built on ``meta`` (``with torch.device("meta"): ...``).
        example_input: one batch per device: a tensor, a tuple of positional tensors or a dict of
            keyword tensors; ``meta`` tensors need no memory. Its first dimension is the batch.
        targets: hardware names ("A100", "8x H100 SXM5", "4x8 H100" for 4 nodes of 8, "2x8 H100 @ 200G"), with a
            tensor/pipeline layout where wanted ("4x8 H100 tp=8 pp=4 microbatches=16": `example_input` is one
            micro-batch; docs/model-parallel.md); None: the default set. Unknown names raise `UnknownHardwareError`
            listing the closest names; a layout the model cannot run raises ValueError saying why.
        precision: "32-true", "16-mixed", "bf16-mixed", "16-true", "bf16-true", or "fp8": FP8 training as
            torchao's float8 tensorwise recipe runs it (each ``nn.Linear`` with sides divisible by 16 in FP8,
            the rest bf16-mixed; docs/projection.md). Named targets without FP8 (A100, V100, T4, ...) raise
            ValueError; the default set keeps only its FP8 GPUs.
        optimizer: "adamw", "adam", "sgd", "sgd-momentum" or "none" (PyTorch's default implementation on
            each target: foreach on GPUs), or with the implementation named: "adamw-fused",
            "adamw-foreach", "adamw-forloop", ...
        float32_matmul_precision: "highest" | "high" | "medium" (None: `torch.get_float32_matmul_precision()`).
            cuDNN's flags are read as this process has them: ``torch.backends.cudnn.allow_tf32`` (TF32 convolutions)
            and ``torch.backends.cudnn.benchmark`` (its algorithm search: 3x3 FP32 convolutions may run Winograd's
            kernels, docs/projection.md).
        steps: optimizer steps of the whole run on one device; gives totals and costs.
        batch_size: the batch when the input's first dimension is not it.
        loss_fn: turns the model's output into the scalar loss (default: ``output.loss`` or a sum).
        deepspeed: ``{"zero_stage": 0-3, "offload_optimizer": bool, "offload_param": bool}`` for ZeRO targets.
        predictor: a `Predictor` (default: the shipped one).
        batch_convention: "per_device" (default: `example_input` is one GPU's batch, every GPU keeps it) or
            "global" (`example_input` is the run's global batch, split over each target's GPUs; it must divide).
        sharding: "none", "zero1", "zero2", "zero3" or "fsdp" for the targets (shorthand for `deepspeed`).
        compile: "none" (eager), "default", "reduce-overhead", "max-autotune": torch.compile on the targets.
        cuda_graphs: True when the step is replayed as a CUDA graph.
        channels_last: the convolutions' memory format on the targets: None reads it from the captured
            tensors (``model.to(memory_format=torch.channels_last)`` and a channels-last input), True or
            False sets it. In half precision NCHW convolutions pay cuDNN's layout transforms.
        activation_checkpointing: None, "full" (each repeated block re-runs its forward in backward, as
            ``torch.utils.checkpoint`` per block or Hugging Face's ``gradient_checkpointing_enable()`` do) or
            "selective" (torchtitan's op policy: attention and every other matmul kept). A Hugging Face model
            with gradient checkpointing enabled is estimated as "full" unless this says otherwise.
        accumulate: micro-batches per optimizer step (gradient accumulation): forward and backward run this
            many times, the optimizer once; `example_input` is one micro-batch. Data-parallel targets
            all-reduce once per optimizer step.
        provider: price the targets with one provider's listings ("Lambda", "GCP", ...; case-insensitive);
            None: the cheapest current listing matching each target's GPU count. Unknown names raise
            ValueError listing the known ones; a GPU the provider does not list gets no price and a note.
    """
    choices = _check_choices(model, example_input, targets=targets, precision=precision, optimizer=optimizer,
                             float32_matmul_precision=float32_matmul_precision, steps=steps, batch_size=batch_size,
                             deepspeed=deepspeed, batch_convention=batch_convention, sharding=sharding,
                             compile=compile, cuda_graphs=cuda_graphs, channels_last=channels_last,
                             accumulate=accumulate, activation_checkpointing=activation_checkpointing, provider=provider)
    return _estimate(model, example_input, choices, loss_fn=loss_fn, predictor=predictor)


@dataclass(frozen=True)
class _Choices:
    """`estimate`'s arguments once checked (every bad value has raised before any work)."""

    targets: list           # the resolved targets (FP8-capable ones only for "fp8")
    target_notes: list[str]  # why targets were left out
    precision_name: str     # as the user spelt it (an alias gets a note)
    precision: Precision
    optimizer: str
    zero: ZeroConfig
    options: ExecutionOptions
    policy: str | None      # activation checkpointing as asked (a Hugging Face model's own setting may add "full")
    steps: int | None
    batch_size: int | None
    accumulate: int
    batch_convention: str
    channels_last: bool | None
    provider: str | None


def _check_choices(model: Any, example_input: Any, *, targets: Sequence[str] | None, precision: str, optimizer: str,
                   float32_matmul_precision: str | None, steps: int | None, batch_size: int | None,
                   deepspeed: dict[str, Any] | None, batch_convention: str, sharding: str | None, compile: str,
                   cuda_graphs: bool, channels_last: bool | None, accumulate: int,
                   activation_checkpointing: str | None, provider: str | None) -> _Choices:
    """Every argument checked, in the order a user meets them, before the model runs."""
    check_model(model)
    if channels_last is not None and not isinstance(channels_last, bool):
        raise ValueError(f"channels_last must be None (read from the tensors), True or False, got {channels_last!r}")
    chosen = resolve_targets(targets)       # bad names fail before any work
    provider = check_provider(provider)
    prec = parse_precision(precision, float32_matmul_precision, allow_fp8=True)
    fp8_notes_ = []
    if prec.fp8:
        chosen, fp8_notes_ = fp8_targets(chosen, explicit=targets is not None)
    optimizer = normalise_optimizer(optimizer)
    check_steps(steps)
    check_batch_size(batch_size)
    check_accumulate(accumulate)
    check_batch_convention(batch_convention)
    zero = zero_config(deepspeed)
    if sharding is not None:
        if deepspeed is not None:
            raise ValueError("give either sharding= or deepspeed=, not both; e.g. sharding='zero3'")
        zero = ZeroConfig.from_sharding(sharding)
    options = ExecutionOptions(compile, cuda_graphs)
    check_input_fits_model(model, example_input)
    policy = check_policy(activation_checkpointing)
    return _Choices(chosen, fp8_notes_, precision, prec, optimizer, zero, options, policy, steps, batch_size,
                    accumulate, batch_convention, channels_last, provider)


def _estimate(model: Any, example_input: Any, choices: _Choices, *, loss_fn: Callable[[Any], Any] | None,
              predictor: Any) -> Estimate:
    """Capture the step, build its workload, project it onto the chosen targets."""
    prec, options = choices.precision, choices.options
    with _hf_checkpointing_off(model) as was_on:
        policy = choices.policy or ("full" if was_on else None)
        layers = find_layers(model) if policy else []
        if policy and not layers:
            raise ValueError("activation_checkpointing needs the model's repeated blocks (an nn.ModuleList of one "
                             "module type, as transformers have); this model has none")
        capture = capture_step(model, example_input, loss_fn=loss_fn, batch_size=choices.batch_size,
                               autocast=prec.half if prec.mixed and _is_float32(model) else None, layers=layers,
                               fp8=prec.fp8, fused_casts=options.compiled)
    if policy:
        apply_recompute(capture, policy)
    workload = workload_from_capture(capture, prec, choices.optimizer, choices.zero, options,
                                     channels_last=choices.channels_last, accumulate=choices.accumulate)
    workload.recompute = policy
    pred, note = resolve_predictor(predictor)
    notes = _estimate_notes(workload, capture, choices, note)
    check_layouts(workload, choices.targets, choices.batch_convention)
    shape = RunShape(float(choices.steps) if choices.steps is not None else None)
    rows = (project_targets(workload, choices.targets, pred, shape, batch_convention=choices.batch_convention,
                            provider=choices.provider) if choices.targets else [])
    return Estimate(workload, rows, shape, pred, notes, choices.batch_convention, provider=choices.provider)


def _estimate_notes(workload: Workload, capture: Capture, choices: _Choices, predictor_note: str | None) -> list[str]:
    """The estimate's notes: the workload's, the predictor's, the targets left out, FP8, a precision alias, the
    loss the backward ran from, and the answers a meta capture gave to reads of tensor values."""
    prec = choices.precision
    notes = list(workload.notes) + ([predictor_note] if predictor_note else []) + choices.target_notes
    if prec.fp8:
        notes.extend(fp8_notes(capture.fp8_linears or 0, capture.fp8_skipped, compiled=choices.options.compiled))
    alias = precision_alias_note(choices.precision_name, prec)
    if alias:
        notes.append(alias)
    if capture.loss_source == "sum of the output":
        notes.append("no loss_fn and no output.loss: backward ran from the sum of the output (the model's "
                     "backward is the same; a real loss's own ops are not counted); pass loss_fn= to include them")
    notes.extend(capture.value_answers.notes())    # a meta capture's reads of tensor values (meta_values.py)
    return notes


_POSITION_LIMITS = ("max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length")


def check_input_fits_model(model: Any, example_input: Any) -> None:
    """Refuse inputs the model cannot take, where its config says so (Hugging Face ``config``): a sequence
    longer than its position embeddings, token ids beyond its vocabulary (real tensors only: ``meta``
    ids have no values). A real run would crash there; a projection would price a step that never runs."""
    import torch

    config = getattr(model, "config", None)
    if config is None:
        return
    ids = example_input.get("input_ids") if isinstance(example_input, dict) else example_input
    if isinstance(ids, (list, tuple)) and ids:
        ids = ids[0]
    if not isinstance(ids, torch.Tensor) or ids.is_floating_point() or ids.dim() < 2:
        return
    seq = int(ids.shape[-1])
    for key in _POSITION_LIMITS:
        limit = getattr(config, key, None)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 and seq > limit:
            raise ValueError(f"example_input has sequences of {seq} tokens, but the model's config.{key} is "
                             f"{limit}: a real step fails at the position embedding. Pass sequences of at most "
                             f"{limit} tokens, or a model configured for longer ones (e.g. {key}={seq})")
    vocab = getattr(config, "vocab_size", None)
    if isinstance(vocab, int) and vocab > 0 and not ids.is_meta and ids.numel():
        top = int(ids.max())
        if top >= vocab:
            raise ValueError(f"example_input holds token id {top}, but the model's config.vocab_size is {vocab}: "
                             f"ids must be below {vocab}")


def _spec_of(item: Any, capture: Capture, precision: Precision, phase: str,
             channels_last: bool | None) -> tuple[OpSpec, list[OpSpec]]:
    """A captured item's spec as it runs under `precision`, and the layout transforms beside it."""
    raw = item if isinstance(item, OpSpec) else op_spec_from_call(item)
    # under autocast the captured dtypes are the real ones: only the TF32 flags follow
    spec = retune(raw, precision) if capture.autocast else convert(raw, precision, phase)
    if not isinstance(item, OpCall):
        return spec, []
    if item.context == "autocast":
        spec = replace(spec, name=CAST_NAME)   # issued by autocast in C++ (host cost, flat.py)
    return spec, layout_ops(item, spec, channels_last)


@contextlib.contextmanager
def _hf_checkpointing_off(model: Any):
    """Hugging Face's gradient checkpointing runs `torch.utils.checkpoint`, which cannot run on ``meta``:
    switch the layers' flags off for the capture (restored exactly after) and say whether it was on; the
    recompute is then applied to the capture (`recompute.apply_recompute`)."""
    flagged = [m for m in model.modules() if getattr(m, "gradient_checkpointing", False) is True]
    for module in flagged:
        module.gradient_checkpointing = False
    try:
        yield bool(flagged)
    finally:
        for module in flagged:
            module.gradient_checkpointing = True


def _is_float32(model: Any) -> bool:
    """Whether the model's floating parameters are fp32 (autocast's input; a half model runs as it is)."""
    import torch

    dtypes = {p.dtype for p in model.parameters() if p.is_floating_point()}
    return not dtypes or dtypes == {torch.float32}


# Consecutive ops per unit: the host-overlap simulation plays units in order, so a unit must be short
# enough that "many tiny kernels, then a big one" is not averaged into one uniform stream.
UNIT_OPS = 24


def workload_from_capture(capture: Capture, precision: Precision, optimizer: str, zero: ZeroConfig,
                          options: ExecutionOptions | None = None, channels_last: bool | None = None,
                          accumulate: int = 1) -> Workload:
    """A `Workload` (method absolute) from captured ops in execution order, converted to `precision`.

    Half-precision convolutions of NCHW tensors get cuDNN's layout transforms beside them (`layout.py`;
    ``channels_last`` True/False overrides the memory format the captured tensors had)."""
    units = []
    specs: dict = {}   # captured item -> (its spec as it runs, the layout transforms beside it)
    for phase in ("fwd", "bwd"):
        items = capture.sequence[phase] or [c for c, n in capture.ops[phase].items() for _ in range(n)]
        for start in range(0, len(items), UNIT_OPS):
            merged: dict = {}
            order: list[int] = []   # the merged entries as they ran (`Unit.sequence`)
            for item in items[start:start + UNIT_OPS]:
                # OpSpec equality ignores dims: look-alikes merge, except FP8 GEMMs, whose dims say which
                # operand is e5m2 (grad_output), a rate of its own (fp8_rates.py)
                fp8_gemm = isinstance(item, OpSpec) and item.dtype == "float8"
                found = specs.get(item.key if fp8_gemm else item)
                if found is None:
                    found = specs[item.key if fp8_gemm else item] = _spec_of(item, capture, precision, phase,
                                                                            channels_last)
                spec, extra = found
                for key, op in [(spec.key if fp8_gemm else spec, spec)] + [(op, op) for op in extra]:
                    position, op, count = merged.get(key, (len(merged), op, 0.0))
                    merged[key] = (position, op, count + 1.0)
                    order.append(position)
            units.append(Unit(f"model.{phase}.{start // UNIT_OPS}", phase,
                              [(spec, count * accumulate) for _, spec, count in merged.values()],
                              sequence=tuple(order)))
    if accumulate > 1:
        units.append(Unit("gradient accumulation", "bwd", accumulation_ops(capture.param_tensors, precision, accumulate)))
    units.append(Unit("optimizer", "opt", optimizer_ops(optimizer, capture.param_tensors, precision.state_dtype,
                                                          grad_scaler=precision.grad_scaler)))
    scale = activation_scale(precision) if capture.param_dtype == "float32" and not capture.autocast else 1.0
    notes = ["estimated from the model alone: eager PyTorch's host cost per kernel is modelled, data loading "
             "and the training loop's own Python are not included"]
    for note in (unaligned_gemm_note(op for unit in units for op in unit.ops),
                 conv_search_note((op for unit in units for op in unit.ops), precision)):
        if note:
            notes.append(note)
    _, named_impl = split_optimizer(optimizer)
    return Workload(units=units, params=float(capture.params), precision=precision,
                    optimizer=memory_optimizer_name(optimizer), batch_size=capture.batch_size, accumulate=accumulate,
                    activation_bytes=capture.saved_bytes * scale, activations_measured=False, zero=zero,
                    current_kind="none", param_tensors=list(capture.param_tensors), optimizer_impl=named_impl,
                    optimizer_ran=named_impl or "foreach", input_bytes=capture.input_bytes,
                    options=options or ExecutionOptions(), notes=notes)
