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
unless given (`find_layers`).
"""
from __future__ import annotations

from math import prod
from typing import Any, Sequence

from predictor_models.op_spec import OpSpec

from prenet_callbacks.projection.precision import esize

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


def _kept(item: Any, name: str, matmuls_seen: int) -> bool:
    """Selective policy: the attention kernel's output and every other matmul's are saved, not recomputed."""
    if isinstance(item, OpSpec) or name == "aten::max":   # a fused SDPA call is recorded as one spec
        return True
    return name in _MATMULS and matmuls_seen % 2 == 1


def _output_bytes(item: Any) -> float:
    shapes, dtypes = getattr(item, "output_shapes", ()), getattr(item, "output_dtypes", ())
    return float(sum(prod(s) * esize(d) for s, d in zip(shapes, dtypes) if s is not None))


def apply_recompute(capture: Any, policy: str, spans: Sequence[Sequence[int]] | None = None) -> int:
    """Put the recomputed forward ops at the head of the backward and shrink the saved activations;
    returns how many ops are recomputed."""
    policy = check_policy(policy)
    spans = list(spans if spans is not None else capture.layer_spans)
    if policy is None or not spans:
        return 0
    recomputed, kept_bytes = [], 0.0
    for start, end in spans:
        matmuls = 0
        for item in capture.sequence["fwd"][start:end]:
            if policy == "selective":
                name = getattr(item, "name", "")
                matmuls += name in _MATMULS
                if _kept(item, name, matmuls):
                    kept_bytes += _output_bytes(item)
                    continue
            recomputed.append(item)
    capture.sequence["bwd"][:0] = recomputed
    for item in recomputed:
        capture.ops["bwd"][item] += 1
    if capture.layer_saved_bytes:
        # checkpointed layers keep their inputs (and, selective, the kept outputs), not what they saved
        inside = capture.layer_saved_bytes
        capture.saved_bytes = max(0.0, capture.saved_bytes - inside) + capture.layer_input_bytes + kept_bytes
    return len(recomputed)
