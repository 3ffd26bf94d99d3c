"""`ModuleProfiler`: per-module forward/backward time and the aten ops each module ran.

Used for a short window of training steps. A dispatch mode sees every aten call (`capture`);
module hooks and autograd sequence numbers (`attribution`) say which module it belongs to; the op
timer (`op_timing`) times it: the host clock on CPU, torch.profiler's kernel records on CUDA.
Nothing here changes what the model computes: hooks return None, the mode calls each op unchanged,
and compiled modules run compiled (profiled as one opaque block, `compiled`).

The other jobs live beside it: `layers` (registration and parameter ownership),
`optimizer_hooks`, `windows` (the windows' own clock), `table_builder` (records, features, CT),
`records` and `table` (the result).
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import torch
from torch import nn

from predictor_models.aten.call import OpCall
from predictor_models.aten.record import call_key, record_call
from prenet_callbacks.measure.clocks import DeviceClock, clock_for
from prenet_callbacks.measure.profiling.attribution import ROOT, Attribution, in_backward
from prenet_callbacks.measure.profiling.capture import CaptureMode, mode_on_stack, remove_mode
from prenet_callbacks.measure.profiling.compiled import compiled_backward_nodes, wrap_compiled_call
from prenet_callbacks.measure.profiling.errors import ProfilerError
from prenet_callbacks.measure.profiling.layers import OPTIMIZER, LayerRegistry, tensor_bytes
from prenet_callbacks.measure.profiling.op_timing import op_timer_for
from prenet_callbacks.measure.profiling.optimizer_hooks import OptimizerWatch
from prenet_callbacks.measure.profiling.table import LayerTable
from prenet_callbacks.measure.profiling.table_builder import SpecMaker, layer_records
from prenet_callbacks.measure.profiling.windows import WindowTimer

PHASES = ("forward", "backward", "optimizer")


class ModuleProfiler:
    """Profile a model's modules for a few training steps.

    Args:
        model: the module whose submodules are profiled (ops outside it go to "(root)").
        clock: the run's `DeviceClock` (from the integration, shared with the session). Default:
            ``clock_for(device)``.
        accelerator: catalog entry of the device (``peak_flops(dtype, tf32=, matrix=)``): with it,
            every layer gets CT (forward FLOPs over the device's peak) and the table its catalog name.
        precision: the run's precision ("32-true", "bf16-mixed", ...): CT's dtype for ops whose own
            dtype has no peak in the catalog.
        device: only when no clock is given: the device the model runs on (default: the first
            parameter's).
        tf32: whether fp32 matmuls/convs may use TF32; default: read from `torch.backends` (CUDA only).
        op_timing: "dispatch" (host clock per op; CPU/meta default), "cupti" (kernel times from
            torch.profiler; the CUDA default and the only choice there) or "profiler"
            (torch.profiler CPU op times, to exercise the CUDA path's parse on CPU).
        max_ops_per_layer: distinct ops kept per layer in the table; the rest are merged.

    Raises:
        ProfilerError: a bad argument (the message names it), or a clock for an unusable device.
    """

    def __init__(self, model: nn.Module, *, clock: DeviceClock | None = None, accelerator: Any = None,
                 precision: str | None = None, device: torch.device | str | None = None,
                 tf32: bool | None = None, op_timing: str | None = None,
                 max_ops_per_layer: int = 48) -> None:
        if not isinstance(model, nn.Module):
            raise ProfilerError(f"ModuleProfiler needs a torch.nn.Module, got {type(model).__name__}")
        if max_ops_per_layer < 1:
            raise ProfilerError(f"max_ops_per_layer={max_ops_per_layer}: must be at least 1")
        self.model = model
        if clock is None:
            if device is None:
                first = next(iter(model.parameters()), None)
                device = first.device if first is not None else "cpu"
            try:
                clock = clock_for(device)
            except ValueError as exc:
                raise ProfilerError(str(exc)) from exc
        self.clock = clock
        self.device = clock.device
        on_cuda = clock.kind == "cuda"
        self._specs = SpecMaker(
            tf32_matmul=bool(tf32) if tf32 is not None else on_cuda and (
                torch.backends.cuda.matmul.allow_tf32 or torch.get_float32_matmul_precision() != "highest"),
            tf32_conv=bool(tf32) if tf32 is not None else on_cuda and torch.backends.cudnn.allow_tf32)
        self.op_timer = op_timer_for(clock.kind, op_timing)
        self._accelerator = accelerator
        self._precision = precision
        self._max_ops = max_ops_per_layer
        self._state = "new"           # new -> running <-> suspended -> stopped
        self._limitations: list[str] = []
        self._handles: list[Any] = []         # module/optimizer hook handles
        self._node_handles: list[Any] = []    # autograd node hooks (compiled backward timing)
        self._restore: list[Callable[[], None]] = []
        self._mode: CaptureMode | None = None
        self._mode_paused = 0
        self._thread: int | None = None
        self._table: LayerTable | None = None
        self._broken = False
        self._recording = False
        self._phase = "forward"
        self._hinted = False
        self._optim = OptimizerWatch()
        self._opaque_bw_depth = 0
        self._steps = 0
        self._overhead_s = 0.0
        self._windows = WindowTimer(clock, self.contain)
        self._layers = LayerRegistry.for_model(model)
        self._opaque_time: dict[tuple[int, str], list[Any]] = {}
        self._opaque_starts: list[Any] = []
        self._ops: dict[tuple[int, str, OpCall], list[Any]] = {}
        # the same accumulators by (layer, phase, context, `call_key`): a call seen before skips its reduction
        self._seen: dict[tuple[Any, ...], list[Any]] = {}
        self._tuples: dict[tuple, tuple] = {}   # equal tuples of the recorded calls, one object each
        self._attr = Attribution(self._layers.param_owner)

    # ------------------------------------------------------------------ public API
    @property
    def limitations(self) -> list[str]:
        """Human sentences about what this profile could not see."""
        return list(self._limitations)

    def start(self) -> None:
        """Install hooks, start the op timer and the capture mode; call at the start of a step."""
        if self._state != "new":
            raise ProfilerError(f"start() called on a profiler that is already {self._state}")
        if _is_compiling():
            raise ProfilerError("start() called while torch.compile is tracing")
        self._state = "running"
        self._thread = threading.get_ident()
        try:
            self._register_layers()
            self._install_optimizer_hooks()
            self.op_timer.open()
            self._mode = CaptureMode(self)
            self._push_mode()
        except Exception as exc:
            self._cleanup()
            self._state = "stopped"
            self._table = self._empty_table()
            raise ProfilerError(f"could not start the module profiler: {exc}") from exc
        self._open_window()
        if not Attribution.supported:
            self._limitations.append("this torch version cannot attribute backward ops to "
                                     "modules: backward time is reported under (root)")

    def begin_phase(self, phase: str) -> None:
        """Hint from the framework: "forward", "backward" or "optimizer" starts now."""
        if phase not in PHASES:
            raise ProfilerError(f"unknown phase {phase!r}; expected one of {PHASES}")
        self._phase = phase
        self._hinted = True

    def suspend(self) -> None:
        """Stop capturing until `resume` (between steps: data loading is not captured)."""
        if self._state != "running":
            return
        self._close_window()
        self._pop_mode()
        self._state = "suspended"

    def resume(self) -> None:
        """Capture again after `suspend`."""
        if self._state != "suspended":
            return
        self._push_mode()
        self._state = "running"
        self._phase = "forward"
        self._open_window()

    def end_step(self) -> None:
        """One optimizer step finished (per-step averages divide by these)."""
        if self._state in ("running", "suspended"):
            self._steps += 1
            self._phase = "forward"

    def stop(self) -> LayerTable:
        """Remove every hook and mode (idempotent, safe in error handlers) and return the table."""
        if self._table is not None:
            return self._table
        if self._state == "running":
            self._close_window()
        self._cleanup()
        was = self._state
        self._state = "stopped"
        if was == "new":
            self._table = self._empty_table()
            return self._table
        try:
            self._table = self._build_table()
        except Exception as exc:
            self._table = self._empty_table(f"profile lost: {exc}")
            raise ProfilerError(f"could not build the layer table: {exc}") from exc
        finally:
            self._release()
        return self._table

    def hook_count(self) -> int:
        """Hooks and modes this profiler has installed right now (0 after `stop`)."""
        on_stack = 1 if self._mode is not None and mode_on_stack(self._mode) else 0
        return len(self._handles) + len(self._node_handles) + len(self._restore) + on_stack

    # ------------------------------------------------------------------ what the capture mode calls
    def capturing(self) -> bool:
        """Whether an aten call happening now is to be timed and recorded."""
        return self._recording and not self._broken and self._opaque_bw_depth == 0

    def add_overhead(self, seconds: float) -> None:
        """Host time the capture added around an op (taken out of host-timed gaps)."""
        self._overhead_s += seconds

    def contain(self, what: str, exc: BaseException) -> None:
        """A profiler failure mid-step: stop capturing, keep the run going, say so."""
        if not self._broken:
            self._broken = True
            self._limitations.append(f"profiling stopped early after an internal error while "
                                     f"{what}: {type(exc).__name__}: {exc}")

    def record_op(self, func: Any, args: tuple, kwargs: dict, out: Any, handle: Any) -> None:
        """Attribute one timed aten call to a layer and phase and add it to the window's counts."""
        in_bw = in_backward()
        stack = self._attr.stack()
        if stack:
            layer, phase = stack[-1], ("bwd" if in_bw else "fwd")
        elif in_bw:
            layer, phase = self._attr.backward_owner(), "bwd"
        elif self._phase == "optimizer" or (not self._hinted and self._optim.depth > 0):
            layer, phase = OPTIMIZER, "opt"
        else:
            layer, phase = ROOT, ("bwd" if self._phase == "backward" else "fwd")
        opt_kind = self._optim.kind if phase == "opt" else None
        seen_key = call_key(func, args, kwargs, out, prefix=(layer, phase, opt_kind))
        acc = self._seen.get(seen_key) if seen_key is not None else None
        if acc is None:
            context = "optimizer" if phase == "opt" else ("embedding" if self._layers.embedding[layer] else "")
            extra = (("opt_kind", opt_kind),) if opt_kind is not None else ()
            call = record_call(func, args, kwargs, out, context=context, extra_scalars=extra, shared=self._tuples)
            key = (layer, phase, call)
            acc = self._ops.get(key)
            if acc is None:
                acc = self._ops[key] = [0, [] if self.op_timer.deferred else 0.0]
            if seen_key is not None:
                self._seen[seen_key] = acc
        acc[0] += 1
        if self.op_timer.deferred:
            acc[1].append(handle)
        else:
            acc[1] += handle

    # ------------------------------------------------------------------ setup / teardown
    def _register_layers(self) -> None:
        for idx, module, kind in self._layers.walk(self.model):
            if kind:
                self._hook_opaque(idx, module, kind)
            else:
                self._hook_module(idx, module)

    def _hook_module(self, idx: int, module: nn.Module) -> None:
        self._handles.append(module.register_forward_pre_hook(functools.partial(self._on_pre, idx)))
        self._handles.append(module.register_forward_hook(functools.partial(self._on_post, idx),
                                                          always_call=True))

    def _hook_opaque(self, idx: int, module: nn.Module, kind: str) -> None:
        self._layers.mark_opaque(idx)
        self._limitations.append(f"torch.compile'd module {self._layers.names[idx]!r}: per-layer "
                                 "profile unavailable, timed as one block")
        pre = functools.partial(self._on_opaque_pre, idx)
        post = functools.partial(self._on_opaque_post, idx)
        if kind == "call":
            self._restore.append(wrap_compiled_call(module, pre, post))
            return
        self._handles.append(module.register_forward_pre_hook(pre))
        self._handles.append(module.register_forward_hook(post, always_call=True))

    def _install_optimizer_hooks(self) -> None:
        self._handles.extend(self._optim.install())

    def _push_mode(self) -> None:
        if self._mode is not None and not self._broken and threading.get_ident() == self._thread:
            self._mode.__enter__()

    def _pop_mode(self) -> None:
        if self._mode is None:
            return
        if threading.get_ident() != self._thread:
            if mode_on_stack(self._mode):
                self._limitations.append("profiler stopped from another thread: its dispatch "
                                         "mode stays on the training thread's stack")
            return
        remove_mode(self._mode)

    def _cleanup(self) -> None:
        """Remove everything, each step independently so that one failure cannot leak the rest."""
        self._recording = False
        try:
            self._pop_mode()
        except Exception as exc:  # noqa: BLE001 - a profiler fault is contained, never raised into the model or the run
            self._limitations.append(f"could not remove the dispatch mode: {exc}")
        self._mode_paused = 0
        for handle in self._handles + self._node_handles:
            try:
                handle.remove()
            except Exception:  # noqa: BLE001 - already removed by its owner (e.g. a freed graph)
                pass
        self._handles.clear()
        self._node_handles.clear()
        for restore in self._restore:
            try:
                restore()
            except Exception as exc:  # noqa: BLE001 - a profiler fault is contained, never raised into the model or the run
                self._limitations.append(f"could not unwrap a compiled module: {exc}")
        self._restore.clear()
        try:
            self._limitations.extend(self.op_timer.close())
        except Exception as exc:  # noqa: BLE001 - a profiler fault is contained, never raised into the model or the run
            self._limitations.append(f"per-op times lost: the op timer failed to close "
                                     f"({type(exc).__name__}: {exc})")
        self._attr.reset()
        self._opaque_starts.clear()

    def _empty_table(self, limitation: str | None = None) -> LayerTable:
        return LayerTable(layers=[], steps=0, device=self.device, clock=self.clock.kind,
                          op_timing=self.op_timer.kind, precision=self._precision,
                          catalog_name=getattr(self._accelerator, "name", None),
                          limitations=self.limitations + ([limitation] if limitation else []))

    # ------------------------------------------------------------------ windows
    def _open_window(self) -> None:
        self._recording = True
        self._windows.open()

    def _close_window(self) -> None:
        self._recording = False
        self._windows.close()

    # ------------------------------------------------------------------ hooks
    def _on_pre(self, idx: int, module: nn.Module, args: Any) -> None:
        if not self._recording or self._broken:
            return
        try:
            self._enter(idx, args)
        except Exception as exc:  # noqa: BLE001 - a profiler fault is contained, never raised into the model or the run
            self.contain("entering a module", exc)

    def _enter(self, idx: int, args: Any) -> bool:
        """Count a forward call and push the module on the attribution stack; True in backward."""
        in_bw = in_backward()
        if not in_bw:
            self._layers.calls[idx] += 1
            self._layers.in_bytes[idx] += tensor_bytes(args)
        self._attr.enter(idx, in_bw)
        return in_bw

    def _on_post(self, idx: int, module: nn.Module, args: Any, output: Any) -> None:
        if not self._recording or self._broken:
            return
        try:
            self._attr.exit(idx)
            if not in_backward():
                self._layers.out_bytes[idx] += tensor_bytes(output)
        except Exception as exc:  # noqa: BLE001 - a profiler fault is contained, never raised into the model or the run
            self.contain("leaving a module", exc)

    def _on_opaque_pre(self, idx: int, module: nn.Module, args: Any) -> None:
        if not self._recording or self._broken:
            return
        try:
            in_bw = self._enter(idx, args)
            # compiled code must run with no dispatch mode active, or Dynamo falls back to eager
            if self._mode is not None and mode_on_stack(self._mode):
                remove_mode(self._mode)
                self._mode_paused += 1
            self._opaque_starts.append((idx, "bwd" if in_bw else "fwd", self.op_timer.start()))
        except Exception as exc:  # noqa: BLE001 - a profiler fault is contained, never raised into the model or the run
            self.contain("entering a compiled module", exc)

    def _on_opaque_post(self, idx: int, module: nn.Module, args: Any, output: Any) -> None:
        if not self._opaque_starts:
            return
        try:
            sidx, phase, started = self._opaque_starts.pop()
            self._opaque_time.setdefault((sidx, phase), []).append(self.op_timer.stop(started))
            if self._mode_paused:
                self._mode_paused -= 1
                self._push_mode()
            self._attr.exit(idx)
            if phase == "fwd":
                self._layers.out_bytes[idx] += tensor_bytes(output)
                self._hook_compiled_backward(idx, output)
        except Exception as exc:  # noqa: BLE001 - a profiler fault is contained, never raised into the model or the run
            self.contain("leaving a compiled module", exc)

    def _hook_compiled_backward(self, idx: int, output: Any) -> None:
        """Time the compiled backward node(s) as a whole; capture nothing inside them."""
        for node in compiled_backward_nodes(output):
            self._node_handles.append(node.register_prehook(
                functools.partial(self._on_compiled_bw_pre, idx)))
            self._node_handles.append(node.register_hook(
                functools.partial(self._on_compiled_bw_post, idx)))

    def _on_compiled_bw_pre(self, idx: int, grad_outputs: Any) -> None:
        if self._recording and not self._broken:
            try:
                self._opaque_starts.append((idx, "bwd", self.op_timer.start()))
                self._opaque_bw_depth += 1
            except Exception as exc:  # noqa: BLE001 - a profiler fault is contained, never raised into the model or the run
                self.contain("entering a compiled backward", exc)

    def _on_compiled_bw_post(self, idx: int, grad_inputs: Any, grad_outputs: Any) -> None:
        if self._opaque_bw_depth > 0 and self._opaque_starts:
            self._opaque_bw_depth -= 1
            try:
                sidx, phase, started = self._opaque_starts.pop()
                self._opaque_time.setdefault((sidx, phase), []).append(self.op_timer.stop(started))
            except Exception as exc:  # noqa: BLE001 - a profiler fault is contained, never raised into the model or the run
                self.contain("leaving a compiled backward", exc)

    # ------------------------------------------------------------------ result
    def _release(self) -> None:
        """Let go of the model and of the per-call records once the table holds what they measured: the user's
        model is theirs to free, and records kept to the end of the run would be thousands of objects that Python's
        collector carries into its oldest generation, bringing a full collection (hundreds of ms) into the run."""
        self.model = None
        self._seen = {}
        self._tuples = {}
        self._ops = {}
        self._opaque_time = {}

    def _build_table(self) -> LayerTable:
        # after a contained failure, what was measured before it is kept; a limitation says so
        if self._steps:
            steps = self._steps
        else:
            steps = max(1, self._windows.opened)
            self._limitations.append("end_step() was never called: each profiling window "
                                     "counted as one step")
        window_total = self._windows.seconds()
        timer = self.op_timer
        records, op_total = layer_records(self._layers, self._ops, self._opaque_time, timer, steps,
                                          self._specs, accelerator=self._accelerator,
                                          precision=self._precision, max_ops=self._max_ops)
        unmodelled = self._specs.unmodelled.note("distinct op calls")
        if unmodelled and unmodelled not in self._limitations:
            self._limitations.append(unmodelled)
        gaps = window_total - op_total
        if self.clock.kind != "cuda":
            gaps -= self._overhead_s  # host-timed windows include the profiler's own host time
        table = self._empty_table()
        table.layers, table.steps = records, steps
        table.unattributed_s = max(0.0, gaps) / steps
        table.overhead_s = self._overhead_s / steps
        if self.clock.kind == "cuda":
            table.outside_ops_s = float(getattr(timer, "unlabelled_s", 0.0)) / steps
        table.limitations = self.limitations
        return table


def _is_compiling() -> bool:
    compiler = getattr(torch, "compiler", None)
    fn = getattr(compiler, "is_compiling", None)
    return bool(fn()) if fn is not None else False
