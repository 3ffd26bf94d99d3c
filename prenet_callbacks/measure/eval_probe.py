"""Time the model's forward as a validation run executes it, before any validation run has happened.

A validation batch is an eval-mode forward without autograd. The training forward that the session
times records the autograd graph and runs train-mode layers (dropout masks, batch statistics): on a
CPU it ran 1.3-3x an evaluation forward on the validation benchmark's fits (an LSTM most). So the
probe keeps the arguments of the model's last top-level forward call in the profiling window and,
when the window closes, calls the forward again on them the way validation does: every module in
eval mode, under ``torch.no_grad()``, once to warm up and then `REPEATS` times, timed. A validation
batch also pays what the training batch spends outside the model's forward (the framework's step,
the loss): after the window the probe times the model's top-level call in `CALL_SAMPLES` clean
training batches on a host clock (``on_call``), and the forward phase less that call is the rest.

The replay runs under the precision the training forward ran under: the pre-hook notes each autocast
active around the call (device type and dtype) and the default dtype, and the replay enters them again.
That is the precision validation runs under too: Lightning's precision plugin wraps both steps in one
``forward_context`` (autocast, or a default dtype for ``*-true``), a Hugging Face Trainer's autocast wraps
the model's forward itself (accelerate), and a plain loop's ``torch.autocast`` is seen where the user's
forward ran.

Nothing of the run changes: the modules' ``training`` flags, the default dtype and torch's random number
generators (CPU and the model's CUDA device) are put back, the autocasts end with the replay, no gradient
is recorded, eval mode updates no BatchNorm statistics, and the outputs are dropped. A forward that fails
is reported, not raised.

The probe declines (and says why) when a replay would not be the validation forward: a compiled
model (eval mode recompiles), a sharded one (FSDP, a DeepSpeed engine: its parameters are gathered
only inside the step), a model called more than once or not at all at the top level. An adapter
adds what only its framework knows (a sharding strategy, ZeRO-3) by not giving the probe the model.
"""
from __future__ import annotations

import contextlib
import statistics
import time
from typing import Any, Callable, Iterator

import torch

from prenet_callbacks.measure.profiling.compiled import compiled_kind

REPEATS = 3
CALL_SAMPLES = 16
_AUTOCAST_DEVICES = ("cpu", "cuda")

# What a forward called now runs under: the active autocasts (device type, dtype) and the default dtype.
Precision = tuple[tuple[tuple[str, torch.dtype], ...], torch.dtype]


class EvalForwardProbe:
    """Keeps the last top-level forward call of ``module`` and times it again in eval mode.

    Args:
        module: the model whose forward validation runs (a LightningModule, a Hugging Face model...).
        now: the clock (seconds); the probe synchronizes a CUDA device around each replayed call.
        on_call: given the seconds of each top-level training call after `measure` (host-timed runs
            only: on a GPU a call returns before its kernels end).
    """

    def __init__(self, module: torch.nn.Module, now: Callable[[], float] = time.perf_counter,
                 on_call: Callable[[float], None] | None = None) -> None:
        self.module = module
        self.now = now
        self.on_call = on_call
        self.call: tuple[tuple[Any, ...], dict[str, Any]] | None = None
        self.precision: Precision | None = None   # what the kept call ran under (`precision_now`)
        self.calls_in_batch = 0
        self.declined: str | None = None
        self.keeping = True          # the window: keep each call's arguments
        self.calls_timed = 0
        self._depth = 0
        self._started: float | None = None
        self._handles: list[Any] = []

    def arm(self) -> None:
        """Listen to the module's forward calls (a hook pair; `remove` takes them off)."""
        if self._handles:
            return
        if any(compiled_kind(m) is not None for m in self.module.modules()):
            self.declined = "a compiled model (eval mode compiles again)"
            return
        if not holds_whole_model(self.module):
            self.declined = "a sharded model (its parameters are gathered only inside the training step)"
            return
        self._handles = [self.module.register_forward_pre_hook(self._before, with_kwargs=True),
                         self.module.register_forward_hook(self._after, always_call=True)]

    def new_batch(self) -> None:
        """A training batch starts: count its top-level calls afresh."""
        self.calls_in_batch = 0

    def _before(self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            if self._depth == 0 and torch.is_grad_enabled():   # a training call (validation runs without grad)
                self.calls_in_batch += 1
                if self.keeping:
                    self.call, self.precision = (args, kwargs), precision_now()
                elif self.on_call is not None:   # after the window: time the call
                    self._started = self.now()
            self._depth += 1
        except Exception as error:  # noqa: BLE001 - these hooks run inside the user's forward: never break it
            self._step_aside(error)

    def _after(self, module: Any, args: Any, output: Any) -> None:
        try:
            self._depth = max(0, self._depth - 1)
            if self._depth == 0 and self._started is not None:
                seconds, self._started = self.now() - self._started, None
                self.on_call(seconds)
                self.calls_timed += 1
                if self.calls_timed >= CALL_SAMPLES:
                    self.remove()
        except Exception as error:  # noqa: BLE001 - as in _before
            self._step_aside(error)

    def _step_aside(self, error: Exception) -> None:
        self.declined = self.declined or f"the probe's hook failed ({type(error).__name__}: {error})"
        self.remove()

    def remove(self) -> None:
        """Take the hooks off and drop the kept arguments (idempotent)."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self.call = None   # the batch's tensors: not held past the window

    def measure(self) -> float | None:
        """Seconds of one eval-mode, no-grad forward on the kept arguments (None: declined, see ``declined``).

        The hooks then stay on for `CALL_SAMPLES` training calls if ``on_call`` is given (and the
        replay went ahead), and come off after them."""
        call, self.call, self.keeping = self.call, None, False
        if self.declined is None and call is None:
            self.declined = "the model's forward was not called during the profiled steps"
        if self.declined is None and self.calls_in_batch != 1:
            self.declined = f"the model's forward ran {self.calls_in_batch} times in a training batch"
        if self.declined is not None or self.on_call is None:
            self.remove()
        if self.declined is not None:
            return None
        args, kwargs = call
        device = _cuda_device(self.module)
        flags = [(m, m.training) for m in self.module.modules()]
        cpu_rng = torch.get_rng_state()
        cuda_rng = torch.cuda.get_rng_state(device) if device is not None else None
        try:
            self.module.eval()
            with torch.no_grad(), running_under(self.precision):
                times = [self._timed(args, kwargs, device) for _ in range(REPEATS + 1)][1:]
        except BaseException:
            self.remove()
            raise
        finally:
            for m, training in flags:
                m.training = training
            torch.set_rng_state(cpu_rng)
            if cuda_rng is not None:
                torch.cuda.set_rng_state(cuda_rng, device)
        return statistics.median(times)

    def _timed(self, args: tuple[Any, ...], kwargs: dict[str, Any], device: torch.device | None) -> float:
        if device is not None:
            torch.cuda.synchronize(device)
        start = self.now()
        self.module(*args, **kwargs)
        if device is not None:
            torch.cuda.synchronize(device)
        return self.now() - start


def precision_now() -> Precision:
    """The autocasts active now and the default dtype (what a forward called here runs under)."""
    active = tuple((device, dtype) for device in _AUTOCAST_DEVICES if (dtype := _autocast_dtype(device)) is not None)
    return active, torch.get_default_dtype()


def _autocast_dtype(device: str) -> torch.dtype | None:
    """The dtype of the autocast active for ``device`` now, None when there is none."""
    try:
        enabled, dtype = torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)
    except (TypeError, AttributeError):  # torch < 2.4: one call per device type
        cpu = device == "cpu"
        enabled = torch.is_autocast_cpu_enabled() if cpu else torch.is_autocast_enabled()
        dtype = torch.get_autocast_cpu_dtype() if cpu else torch.get_autocast_gpu_dtype()
    return dtype if enabled else None


@contextlib.contextmanager
def running_under(precision: Precision | None) -> Iterator[None]:
    """Enter the autocasts and default dtype of ``precision`` (None: as now); the default dtype is put back."""
    if precision is None:
        yield
        return
    autocasts, default = precision
    previous = torch.get_default_dtype()
    with contextlib.ExitStack() as stack:
        for device, dtype in autocasts:
            stack.enter_context(torch.autocast(device, dtype=dtype))
        if default != previous:
            torch.set_default_dtype(default)
            stack.callback(torch.set_default_dtype, previous)
        yield


def holds_whole_model(model: Any) -> bool:
    """Whether ``model`` is an ``nn.Module`` that holds all its parameters in this process, so that it
    can be called outside the training step: nothing in it is FSDP-wrapped (either API) or a DeepSpeed engine."""
    if not isinstance(model, torch.nn.Module):
        return False
    sharded = {"FullyShardedDataParallel", "FSDPModule", "DeepSpeedEngine"}
    return not any(sharded & {c.__name__ for c in type(m).__mro__} for m in model.modules())


def _cuda_device(module: torch.nn.Module) -> torch.device | None:
    for parameter in module.parameters():
        return parameter.device if parameter.device.type == "cuda" else None
    return None
