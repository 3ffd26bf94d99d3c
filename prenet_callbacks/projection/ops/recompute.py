"""Activation checkpointing applied to a captured step: backward re-runs the checkpointed layers' forward.

A capture records each repeated layer's span of the forward sequence (`Capture.layer_spans`) and how
many activation bytes were saved inside layers and at their inputs. `apply_recompute` then does what
checkpointing does to the step:

- ``"full"`` (``torch.utils.checkpoint`` around each block, Hugging Face's
  ``gradient_checkpointing_enable()``, Composer/MPT): before each layer's backward its whole forward runs
  again; only the layer's input is kept from the forward;
- ``"selective"`` (torchtitan's "op" policy, which ``benchmarks/projection_transformers.py`` checks against
  its public steps): the outputs of the attention kernel and of every other matmul are kept, the rest of
  the layer's forward is recomputed.

The layers are the model's largest ``nn.ModuleList`` of modules of one type (the transformer's blocks),
unless given (`find_layers`). `recomputed_ops` is the policy itself, on any sequence of ops; a saved
report's blocks use it too (`report_whatif.py`).
"""
from __future__ import annotations

from math import prod
from typing import Any, Callable, Iterable, Sequence

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.ops.precision import esize

POLICIES = ("full", "selective")
_ALIASES = {"full": "full", "selective": "selective", "selective-op": "selective", "op": "selective"}
_MATMULS = ("aten::mm", "aten::addmm", "aten::bmm")


def check_policy(policy: Any) -> str | None:
    """None, "full" or "selective" (also "selective-op"); anything else is a ValueError naming the choices."""
    if policy is None or policy is False:
        return None
    if policy is True:
        return "full"
    key = _ALIASES.get(str(policy).strip().lower()) if isinstance(policy, str) else None
    if key is None:
        raise ValueError(f"activation_checkpointing must be None, 'full' or 'selective', got {policy!r}")
    return key


def find_layers(model: Any) -> list[Any]:
    """The model's repeated blocks: the largest ``nn.ModuleList`` whose modules are all of one type."""
    import torch

    best: list[Any] = []
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) >= 2:
            children = list(module)
            if len({type(c) for c in children}) == 1 and len(children) > len(best):
                best = children
    return best


def _output_bytes(item: Any) -> float:
    shapes, dtypes = getattr(item, "output_shapes", ()), getattr(item, "output_dtypes", ())
    return float(sum(prod(s) * esize(d) for s, d in zip(shapes, dtypes) if s is not None))


def _recorded_as_one(item: Any) -> bool:
    """In a capture, a fused SDPA call is recorded as one spec (every other op is an `OpCall`)."""
    return isinstance(item, OpSpec)


def recomputed_ops(blocks: Iterable[Iterable[tuple[Any, float]]], policy: str, *,
                   kept_whole: Callable[[Any], bool] = _recorded_as_one,
                   output_bytes: Callable[[Any], float] | None = None) -> tuple[list[list[tuple[Any, float]]], float]:
    """Each checkpointed block's forward ops, as ``(op, calls)`` in execution order, reduced to what its
    backward runs again; and the bytes of the outputs the policy keeps instead (summed over the blocks).

    ``"full"`` recomputes every op. ``"selective"`` keeps the attention kernel's output (`kept_whole`: a
    capture's fused SDPA spec; in a report, the ``attention`` ops), ``aten::max``'s, and those of the 1st,
    3rd, ... matmul of each block (``calls`` matmuls in a row count as that many)."""
    policy = check_policy(policy)
    measure = output_bytes or _output_bytes
    out, kept_bytes = [], 0.0
    for ops in blocks:
        recomputed, matmuls = [], 0
        for item, calls in ops:
            if policy == "selective":
                name = getattr(item, "name", "")
                n = max(1, round(calls)) if name in _MATMULS else 0
                odd = (matmuls + n + 1) // 2 - (matmuls + 1) // 2   # of these n matmuls, those at odd positions
                matmuls += n
                kept = calls if kept_whole(item) or name == "aten::max" else (calls * odd / n if n else 0.0)
                if kept:
                    kept_bytes += measure(item) * kept
                if kept >= calls:
                    continue
                calls = calls - kept if kept else calls
            recomputed.append((item, calls))
        out.append(recomputed)
    return out, kept_bytes


def apply_recompute(capture: Any, policy: str, spans: Sequence[Sequence[int]] | None = None) -> int:
    """Put the recomputed forward ops at the head of the backward and shrink the saved activations;
    returns how many ops are recomputed."""
    policy = check_policy(policy)
    spans = list(spans if spans is not None else capture.layer_spans)
    if policy is None or not spans:
        return 0
    blocks = ([(item, 1) for item in capture.sequence["fwd"][start:end]] for start, end in spans)
    per_block, kept_bytes = recomputed_ops(blocks, policy)
    recomputed = [item for ops in per_block for item, _ in ops]
    capture.sequence["bwd"][:0] = recomputed
    for item in recomputed:
        capture.ops["bwd"][item] += 1
    if capture.layer_saved_bytes:
        # checkpointed layers keep their inputs (and, selective, the kept outputs), not what they saved
        inside = capture.layer_saved_bytes
        capture.saved_bytes = max(0.0, capture.saved_bytes - inside) + capture.layer_input_bytes + kept_bytes
    return len(recomputed)
