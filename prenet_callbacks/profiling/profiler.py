"""`ModuleProfiler`: per-module forward/backward time and the aten ops each module ran.

Used for a short window of training steps. A dispatch mode times every aten call; module hooks
and autograd sequence numbers (see `attribution`) say which module it belongs to. Nothing here
changes what the model computes: hooks return None, the mode calls each op unchanged, and
compiled modules run compiled (profiled as one opaque block).
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import torch
from torch import nn

from predictor_models.aten_ops import OpCall, classify, op_spec_from_call, record_call
from predictor_models.layer_features import layer_features
from predictor_models.op_spec import OpSpec
from prenet_callbacks.profiling.attribution import ROOT, Attribution, _graph_task_id
from prenet_callbacks.profiling.capture import CaptureMode, mode_on_stack, remove_mode
from prenet_callbacks.profiling.clocks import make_clock
from prenet_callbacks.profiling.compiled import compiled_kind, display_type
from prenet_callbacks.profiling.errors import ProfilerError
from prenet_callbacks.profiling.table import (OPTIMIZER_NAME, ROOT_NAME, LayerRecord, LayerTable,
                                              OpEntry)

PHASES = ("forward", "backward", "optimizer")
_EMBEDDING_TYPES = (nn.Embedding, nn.EmbeddingBag)


def _tensor_bytes(obj: Any, depth: int = 0) -> int:
    """Bytes of the tensors in a module's args/output (two levels of containers deep)."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if depth < 2:
        if isinstance(obj, (list, tuple)):
            return sum(_tensor_bytes(x, depth + 1) for x in obj)
        if isinstance(obj, dict):
            return sum(_tensor_bytes(x, depth + 1) for x in obj.values())
    return 0


class ModuleProfiler:
    """Profile a model's modules for a few training steps.

    Args:
        model: the module whose submodules are profiled (ops outside it go to "(root)").
        device: the device it runs on; CUDA uses CUDA events, anything else perf_counter.
            Default: the device of the first parameter.
        tf32: whether fp32 matmuls/convs may use TF32; default: read from `torch.backends`
            (CUDA only).
        accelerator: optional catalog entry (``peak_flops(dtype, tf32=)``) for the CT feature.
        max_ops_per_layer: distinct ops kept per layer in the table; the rest are merged.
    """

    def __init__(self, model: nn.Module, *, device: torch.device | str | None = None,
                 tf32: bool | None = None, accelerator: Any = None,
                 max_ops_per_layer: int = 48) -> None:
        if not isinstance(model, nn.Module):
            raise ProfilerError(f"ModuleProfiler needs a torch.nn.Module, got {type(model).__name__}")
        if max_ops_per_layer < 1:
            raise ProfilerError("max_ops_per_layer must be at least 1")
        self.model = model
        if device is None:
            first = next(iter(model.parameters()), None)
            device = first.device if first is not None else torch.device("cpu")
        self.device = torch.device(device)
        on_cuda = self.device.type == "cuda"
        self._tf32_matmul = bool(tf32) if tf32 is not None else on_cuda and (
            torch.backends.cuda.matmul.allow_tf32 or torch.get_float32_matmul_precision() != "highest")
        self._tf32_conv = bool(tf32) if tf32 is not None else on_cuda and torch.backends.cudnn.allow_tf32
        self._accelerator = accelerator
        self._max_ops = max_ops_per_layer
        self._clock = make_clock(self.device)
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
        self._opt_depth = 0
        self._opt_kind: int | None = None   # 0 sgd, 1 sgd-momentum, 2 adam(w); None unknown
        self._opaque_bw_depth = 0
        self._steps = 0
        self._overhead_s = 0.0
        self._windows = 0
        self._window_start: Any = None
        self._window_handles: list[Any] = []
        # layer registry (index 0: root bucket, 1: optimizer pseudo-layer)
        self._names: list[str] = [ROOT_NAME, OPTIMIZER_NAME]
        self._types: list[str] = [type(model).__name__, "Optimizer"]
        self._params: list[int] = [0, 0]
        self._weight_bytes: list[int] = [0, 0]
        self._opaque: list[bool] = [False, False]
        self._embedding: list[bool] = [isinstance(model, _EMBEDDING_TYPES), False]
        self._calls: list[int] = [0, 0]
        self._in_bytes: list[int] = [0, 0]
        self._out_bytes: list[int] = [0, 0]
        self._opaque_time: dict[tuple[int, str], list[Any]] = {}
        self._opaque_starts: list[Any] = []
        self._ops: dict[tuple[int, str, OpCall], list[Any]] = {}
        self._param_owner: dict[int, int] = {}
        self._attr = Attribution(self._param_owner)

    # ------------------------------------------------------------------ public API
    @property
    def limitations(self) -> list[str]:
        """Human sentences about what this profile could not see."""
        return list(self._limitations)

    def start(self) -> None:
        """Install hooks and the capture mode; call at the start of a step's compute."""
        if self._state != "new":
            raise ProfilerError(f"start() called on a profiler that is already {self._state}")
        if _is_compiling():
            raise ProfilerError("start() called while torch.compile is tracing")
        self._state = "running"
        self._thread = threading.get_ident()
        try:
            self._register_layers()
            self._install_optimizer_hooks()
            self._mode = CaptureMode(self)
            self._push_mode()
        except Exception as exc:
            self._cleanup()
            self._state = "stopped"
            self._table = LayerTable(layers=[], steps=0, device=str(self.device),
                                     limitations=self.limitations)
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
            self._table = LayerTable(layers=[], steps=0, device=str(self.device))
            return self._table
        try:
            self._table = self._build_table()
        except Exception as exc:
            self._table = LayerTable(layers=[], steps=0, device=str(self.device),
                                     limitations=self.limitations + [f"profile lost: {exc}"])
            raise ProfilerError(f"could not build the layer table: {exc}") from exc
        return self._table

    def hook_count(self) -> int:
        """Hooks and modes this profiler has installed right now (0 after `stop`)."""
        on_stack = 1 if self._mode is not None and mode_on_stack(self._mode) else 0
        return len(self._handles) + len(self._node_handles) + len(self._restore) + on_stack

    # ------------------------------------------------------------------ setup / teardown
    def _register_layers(self) -> None:
        root_kind = compiled_kind(self.model)
        seen: set[int] = set()
        if root_kind:
            self._mark_opaque(ROOT, ROOT_NAME, root_kind)
            self._own_params(ROOT, self.model, recurse=True, seen=seen)
            self._hook_opaque(ROOT, self.model, root_kind)
            return
        self._own_params(ROOT, self.model, recurse=False, seen=seen)
        self._hook_module(ROOT, self.model)
        skip: list[str] = []
        for name, module in self.model.named_modules():
            if not name or any(name.startswith(p) for p in skip):
                continue
            idx = len(self._names)
            self._names.append(name)
            self._types.append(display_type(module))
            self._params.append(0)
            self._weight_bytes.append(0)
            self._opaque.append(False)
            self._embedding.append(isinstance(module, _EMBEDDING_TYPES))
            self._calls.append(0)
            self._in_bytes.append(0)
            self._out_bytes.append(0)
            kind = compiled_kind(module)
            if kind:
                skip.append(name + ".")
                self._mark_opaque(idx, name, kind)
                self._own_params(idx, module, recurse=True, seen=seen)
                self._hook_opaque(idx, module, kind)
            else:
                self._own_params(idx, module, recurse=False, seen=seen)
                self._hook_module(idx, module)

    def _mark_opaque(self, idx: int, name: str, kind: str) -> None:
        self._opaque[idx] = True
        self._types[idx] += " (compiled)"
        self._limitations.append(f"torch.compile'd module {name!r}: per-layer profile "
                                 "unavailable, timed as one block")

    def _own_params(self, idx: int, module: nn.Module, *, recurse: bool, seen: set[int]) -> None:
        # shared/tied parameters belong to the first module that owns them (named_modules order)
        for p in module.parameters(recurse=recurse):
            if id(p) in seen:
                continue
            seen.add(id(p))
            self._param_owner[id(p)] = idx
            self._params[idx] += p.numel()
            self._weight_bytes[idx] += p.numel() * p.element_size()

    def _hook_module(self, idx: int, module: nn.Module) -> None:
        self._handles.append(module.register_forward_pre_hook(functools.partial(self._on_pre, idx)))
        self._handles.append(module.register_forward_hook(functools.partial(self._on_post, idx),
                                                          always_call=True))

    def _hook_opaque(self, idx: int, module: nn.Module, kind: str) -> None:
        pre = functools.partial(self._on_opaque_pre, idx)
        post = functools.partial(self._on_opaque_post, idx)
        if kind == "call":
            # module.compile(): hooks would run inside the compiled call, so wrap the call itself
            inner = module._compiled_call_impl

            @functools.wraps(inner)
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                pre(module, args)
                out = None
                try:
                    out = inner(*args, **kwargs)
                    return out
                finally:
                    post(module, args, out)

            module._compiled_call_impl = wrapped

            def restore() -> None:
                if module.__dict__.get("_compiled_call_impl") is wrapped:
                    module._compiled_call_impl = inner
            self._restore.append(restore)
            return
        self._handles.append(module.register_forward_pre_hook(pre))
        self._handles.append(module.register_forward_hook(post, always_call=True))

    def _install_optimizer_hooks(self) -> None:
        # Without framework hints, any torch optimizer's step() marks the optimizer phase.
        try:
            from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                               register_optimizer_step_pre_hook)
        except ImportError:
            return
        self._handles.append(register_optimizer_step_pre_hook(self._on_opt_pre))
        self._handles.append(register_optimizer_step_post_hook(self._on_opt_post))

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
        except Exception as exc:
            self._limitations.append(f"could not remove the dispatch mode: {exc}")
        self._mode_paused = 0
        for handle in self._handles + self._node_handles:
            try:
                handle.remove()
            except Exception:  # already removed by its owner (e.g. a freed graph)
                pass
        self._handles.clear()
        self._node_handles.clear()
        for restore in self._restore:
            try:
                restore()
            except Exception as exc:
                self._limitations.append(f"could not unwrap a compiled module: {exc}")
        self._restore.clear()
        self._attr.reset()
        self._opaque_starts.clear()

    def _contain(self, what: str, exc: BaseException) -> None:
        """A profiler failure mid-step: stop capturing, keep the run going, say so."""
        if not self._broken:
            self._broken = True
            self._limitations.append(f"profiling stopped early after an internal error while "
                                     f"{what}: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ windows
    def _open_window(self) -> None:
        self._windows += 1
        self._recording = True
        try:
            self._window_start = self._clock.start()
        except Exception as exc:
            self._contain("starting the window timer", exc)

    def _close_window(self) -> None:
        self._recording = False
        if self._window_start is not None:
            started, self._window_start = self._window_start, None
            try:
                self._window_handles.append(self._clock.stop(started))
            except Exception as exc:
                self._contain("stopping the window timer", exc)

    def _capturing(self) -> bool:
        return self._recording and not self._broken and self._opaque_bw_depth == 0

    # ------------------------------------------------------------------ hooks
    def _on_pre(self, idx: int, module: nn.Module, args: Any) -> None:
        if not self._recording or self._broken:
            return
        try:
            self._enter(idx, args)
        except Exception as exc:
            self._contain("entering a module", exc)

    def _enter(self, idx: int, args: Any) -> bool:
        """Count a forward call and push the module on the attribution stack; True in backward."""
        in_bw = _graph_task_id() != -1
        if not in_bw:
            self._calls[idx] += 1
            self._in_bytes[idx] += _tensor_bytes(args)
        self._attr.enter(idx, in_bw)
        return in_bw

    def _on_post(self, idx: int, module: nn.Module, args: Any, output: Any) -> None:
        if not self._recording or self._broken:
            return
        try:
            self._attr.exit(idx)
            if _graph_task_id() == -1:
                self._out_bytes[idx] += _tensor_bytes(output)
        except Exception as exc:
            self._contain("leaving a module", exc)

    def _on_opaque_pre(self, idx: int, module: nn.Module, args: Any) -> None:
        if not self._recording or self._broken:
            return
        try:
            in_bw = self._enter(idx, args)
            # compiled code must run with no dispatch mode active, or Dynamo falls back to eager
            if self._mode is not None and mode_on_stack(self._mode):
                remove_mode(self._mode)
                self._mode_paused += 1
            self._opaque_starts.append((idx, "bwd" if in_bw else "fwd", self._clock.start()))
        except Exception as exc:
            self._contain("entering a compiled module", exc)

    def _on_opaque_post(self, idx: int, module: nn.Module, args: Any, output: Any) -> None:
        if not self._opaque_starts:
            return
        try:
            sidx, phase, started = self._opaque_starts.pop()
            self._opaque_time.setdefault((sidx, phase), []).append(self._clock.stop(started))
            if self._mode_paused:
                self._mode_paused -= 1
                self._push_mode()
            self._attr.exit(idx)
            if phase == "fwd":
                self._out_bytes[idx] += _tensor_bytes(output)
                self._hook_compiled_backward(idx, output)
        except Exception as exc:
            self._contain("leaving a compiled module", exc)

    def _hook_compiled_backward(self, idx: int, output: Any) -> None:
        """Time the compiled backward node(s) as a whole; capture nothing inside them."""
        nodes: dict[int, Any] = {}
        outs = output if isinstance(output, (list, tuple)) else [output]
        for t in outs:
            node = t.grad_fn if isinstance(t, torch.Tensor) else None
            for _ in range(4):  # compiled outputs may sit behind a view or alias node
                if node is None:
                    break
                if "CompiledFunction" in node.name():
                    nodes[id(node)] = node
                    break
                nxt = [n for n, _ in node.next_functions if n is not None]
                node = nxt[0] if nxt else None
        for node in nodes.values():
            self._node_handles.append(node.register_prehook(
                functools.partial(self._on_compiled_bw_pre, idx)))
            self._node_handles.append(node.register_hook(
                functools.partial(self._on_compiled_bw_post, idx)))

    def _on_compiled_bw_pre(self, idx: int, grad_outputs: Any) -> None:
        if self._recording and not self._broken:
            try:
                self._opaque_starts.append((idx, "bwd", self._clock.start()))
                self._opaque_bw_depth += 1
            except Exception as exc:
                self._contain("entering a compiled backward", exc)

    def _on_compiled_bw_post(self, idx: int, grad_inputs: Any, grad_outputs: Any) -> None:
        if self._opaque_bw_depth > 0 and self._opaque_starts:
            self._opaque_bw_depth -= 1
            try:
                sidx, phase, started = self._opaque_starts.pop()
                self._opaque_time.setdefault((sidx, phase), []).append(self._clock.stop(started))
            except Exception as exc:
                self._contain("leaving a compiled backward", exc)

    def _on_opt_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._opt_depth += 1
        self._opt_kind = _optimizer_kind(optimizer)

    def _on_opt_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._opt_depth = max(0, self._opt_depth - 1)

    # ------------------------------------------------------------------ per op
    def _record(self, func: Any, args: tuple, kwargs: dict, out: Any, handle: Any) -> None:
        in_bw = _graph_task_id() != -1
        stack = self._attr.stack()
        if stack:
            layer, phase = stack[-1], ("bwd" if in_bw else "fwd")
        elif in_bw:
            layer, phase = self._attr.backward_owner(), "bwd"
        elif self._phase == "optimizer" or (not self._hinted and self._opt_depth > 0):
            layer, phase = 1, "opt"
        else:
            layer, phase = ROOT, ("bwd" if self._phase == "backward" else "fwd")
        context = "optimizer" if phase == "opt" else ("embedding" if self._embedding[layer] else "")
        extra = (("opt_kind", self._opt_kind),) if phase == "opt" and self._opt_kind is not None \
            else ()
        call = record_call(func, args, kwargs, out, context=context, extra_scalars=extra)
        key = (layer, phase, call)
        acc = self._ops.get(key)
        if acc is None:
            acc = self._ops[key] = [0, [] if self._clock.deferred else 0.0]
        acc[0] += 1
        if self._clock.deferred:
            acc[1].append(handle)
        else:
            acc[1] += handle

    # ------------------------------------------------------------------ result
    def _build_table(self) -> LayerTable:
        # after a contained failure, what was measured before it is kept; a limitation says so
        if self._steps:
            steps = self._steps
        else:
            steps = max(1, self._windows)
            self._limitations.append("end_step() was never called: each profiling window "
                                     "counted as one step")
        sync = getattr(self._clock, "synchronize", None)
        if sync is not None:
            sync()  # the one synchronisation: every CUDA event is resolved after it
        resolve = self._clock.resolve
        per_layer: dict[int, list[tuple[OpCall, str, float, float]]] = {}
        op_total = 0.0
        for (layer, phase, call), (count, handles) in self._ops.items():
            secs = resolve(handles) if self._clock.deferred else handles
            op_total += secs
            per_layer.setdefault(layer, []).append((call, phase, count, secs))
        opaque: dict[tuple[int, str], float] = {k: resolve(v) for k, v in self._opaque_time.items()}
        op_total += sum(opaque.values())
        window_total = resolve(self._window_handles)
        spec_cache: dict[OpCall, OpSpec] = {}
        keep = [idx for idx in range(len(self._names))
                if idx == ROOT or per_layer.get(idx) or self._calls[idx]
                or any(k[0] == idx for k in opaque)]
        self._fold_unused_params(set(keep))
        records = [self._layer_record(idx, per_layer.get(idx, []), opaque, steps, spec_cache)
                   for idx in keep]
        gaps = window_total - op_total
        if not self._clock.deferred:
            gaps -= self._overhead_s  # CPU windows include the profiler's own host time
        return LayerTable(layers=records, steps=steps, unattributed_s=max(0.0, gaps) / steps,
                          overhead_s=self._overhead_s / steps, device=str(self.device),
                          limitations=self.limitations)

    def _fold_unused_params(self, keep: set[int]) -> None:
        """Parameters of modules never called (e.g. MultiheadAttention.out_proj, used
        functionally by its parent) go to the nearest kept ancestor, so none is lost."""
        index = {name: i for i, name in enumerate(self._names) if i > 1}
        for idx in range(2, len(self._names)):
            if idx in keep or not self._params[idx]:
                continue
            name, target = self._names[idx], ROOT
            while "." in name:
                name = name.rsplit(".", 1)[0]
                if index.get(name) in keep:
                    target = index[name]
                    break
            self._params[target] += self._params[idx]
            self._weight_bytes[target] += self._weight_bytes[idx]
            self._params[idx] = self._weight_bytes[idx] = 0

    def _spec(self, call: OpCall, cache: dict[OpCall, OpSpec]) -> OpSpec:
        spec = cache.get(call)
        if spec is None:
            cls = classify(call)
            tf32 = self._tf32_conv if cls == "conv" else self._tf32_matmul
            spec = cache[call] = op_spec_from_call(call, tf32=tf32)
        return spec

    def _layer_record(self, idx: int, ops: list[tuple[OpCall, str, float, float]],
                      opaque: dict[tuple[int, str], float], steps: int,
                      cache: dict[OpCall, OpSpec]) -> LayerRecord:
        entries = [OpEntry(name=call.name, phase=phase, count_per_step=count / steps,
                           seconds_per_step=secs / steps, spec=self._spec(call, cache))
                   for call, phase, count, secs in ops]
        by_phase = {p: sum(e.seconds_per_step for e in entries if e.phase == p)
                    for p in ("fwd", "bwd", "opt")}
        for p in ("fwd", "bwd"):
            by_phase[p] += opaque.get((idx, p), 0.0) / steps
        feats = layer_features(((e.spec, e.count_per_step, e.phase) for e in entries),
                               weight_bytes=self._weight_bytes[idx],
                               input_bytes=self._in_bytes[idx] / steps,
                               output_bytes=self._out_bytes[idx] / steps,
                               accelerator=self._accelerator)
        return LayerRecord(name=self._names[idx], module_type=self._types[idx],
                           calls_per_step=self._calls[idx] / steps, forward_s=by_phase["fwd"],
                           backward_s=by_phase["bwd"], optimizer_s=by_phase["opt"],
                           params=self._params[idx], ops=_cap_entries(entries, self._max_ops),
                           features=feats, opaque=self._opaque[idx])


def _cap_entries(entries: list[OpEntry], cap: int) -> list[OpEntry]:
    """Keep the `cap` costliest entries; merge the rest per (phase, op class) into one each."""
    entries.sort(key=lambda e: e.seconds_per_step, reverse=True)
    if len(entries) <= cap:
        return entries
    kept, rest = entries[:cap - 1], entries[cap - 1:]
    merged: dict[tuple[str, str], list[OpEntry]] = {}
    for e in rest:
        merged.setdefault((e.phase, e.spec.op_class), []).append(e)
    for (phase, op_class), group in merged.items():
        spec = OpSpec(op_class=op_class, dtype=group[0].spec.dtype,
                      flops=sum(e.spec.flops * e.count_per_step for e in group),
                      bytes_read=sum(e.spec.bytes_read * e.count_per_step for e in group),
                      bytes_written=sum(e.spec.bytes_written * e.count_per_step for e in group),
                      dims={"merged_ops": float(len(group))}, name=f"(merged {len(group)} ops)")
        kept.append(OpEntry(name=spec.name, phase=phase, count_per_step=1.0,
                            seconds_per_step=sum(e.seconds_per_step for e in group), spec=spec))
    return kept


def _optimizer_kind(optimizer: Any) -> int | None:
    """The optimizer feature's kind: 2 for the Adam family, 1 SGD with momentum, 0 plain SGD."""
    name = type(optimizer).__name__.lower()
    if "adam" in name or "lamb" in name:
        return 2
    if "sgd" in name:
        groups = getattr(optimizer, "param_groups", None) or [{}]
        return 1 if any(g.get("momentum", 0) for g in groups) else 0
    return None


def _is_compiling() -> bool:
    compiler = getattr(torch, "compiler", None)
    fn = getattr(compiler, "is_compiling", None)
    return bool(fn()) if fn is not None else False
