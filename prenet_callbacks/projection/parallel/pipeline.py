"""A pipeline-parallel step's time and a model-parallel rank's activation memory, from published formulas.

Schedule (Narayanan et al., SC'21, "Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM", sections 2.2.1-2.2.2): with m micro-batches over p stages whose forward + backward of one
micro-batch take t_1..t_p, a 1F1B step takes ``(m - 1) max(t) + sum(t)`` (fill and drain pass every stage
once); with equal stages that is (m + p - 1) t, the idle share (p - 1) / (m + p - 1). The interleaved
schedule gives each GPU v model chunks and divides the fill and drain by v: ``m max(t) + (sum(t) - max(t)) / v``.

Activations per layer and micro-batch (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", section 4, table 2), for sequence s, micro-batch b, hidden h, heads a, tensor parallel
t, with 2-byte activations and 1-byte dropout masks:

    no parallelism                     sbh (34 + 5as/h)
    tensor parallel                    sbh (10 + 24/t + 5as/(ht))
    tensor + sequence parallel         sbh (34/t + 5as/(ht))
    + selective recomputation          the 5as/h term goes (the attention core is recomputed)
    full recomputation                 2 sbh (the layer's input; / t with sequence parallelism)

Here 10 = layer-norm inputs 4 + QKV input 2 + MLP input 2 + two dropout masks 2 (whole on every tensor
rank unless sequence parallel), 24 = Q, K 4 + V 2 + attention-out input 2 + the MLP's GELU input and output
2 x 8 (an MLP of 4h), 5as/h = softmax output 2 + its dropout mask 1 + dropped probabilities 2 per score. The
terms are kept with the activation size e (bytes) and the MLP's ratio r = ffn / h as parameters:
replicated 4e + 2, split (4 + 2r) e, scores (2e + 1) as/h; fused attention (flash / memory-efficient
kernels) saves no score matrix, as selective recomputation. With 1F1B the first stage holds min(p, m)
micro-batches in flight (its L/p layers each), the interleaved schedule (1 + (p - 1)/(p v)) times that
(section 4.2.3 of the same paper).
"""
from __future__ import annotations

from dataclasses import dataclass


def stage_layers(layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage, as even as the count allows (the first stages take one more)."""
    base, extra = divmod(layers, pp)
    return [base + (1 if s < extra else 0) for s in range(pp)]


@dataclass(frozen=True)
class PipelineTime:
    """One optimizer step's pipeline part: its time and the idle (bubble) part of it."""

    seconds: float
    bubble_s: float

    @property
    def bubble_share(self) -> float:
        return self.bubble_s / self.seconds if self.seconds > 0 else 0.0


def pipeline_time(stage_s: list[float], microbatches: int, virtual_stages: int = 1) -> PipelineTime:
    """Step time of m micro-batches through stages taking `stage_s` each per micro-batch (forward and
    backward): ``m max + (sum - max) / v``."""
    slowest = max(stage_s)
    bubble = (sum(stage_s) - slowest) / max(virtual_stages, 1)
    return PipelineTime(microbatches * slowest + bubble, bubble)


def in_flight(pp: int, microbatches: int, virtual_stages: int = 1) -> float:
    """Micro-batches whose activations the first stage holds at once (1F1B: min(p, m); interleaved: times
    1 + (p - 1) / (p v))."""
    if pp <= 1:
        return 1.0
    held = float(min(pp, microbatches))
    return held * (1.0 + (pp - 1) / (pp * virtual_stages)) if virtual_stages > 1 else held


def layer_activation_bytes(*, seq: int, batch: int, hidden: int, heads: int, tp: int = 1, sp: bool = False,
                           recompute: str | None = None, act_bytes: int = 2, ffn_ratio: float = 4.0,
                           score_matrix: bool = True) -> float:
    """Bytes one transformer layer keeps for backward per micro-batch on one tensor-parallel rank
    (Korthikanti et al. 2022; see the module docstring). `recompute`: None, "selective" or "full";
    `score_matrix`: False where fused attention keeps no score matrix."""
    sbh = float(seq) * batch * hidden
    if recompute == "full":
        return sbh * act_bytes / (tp if sp else 1)
    replicated = 4 * act_bytes + 2
    split = (4 + 2 * ffn_ratio) * act_bytes
    scores = (2 * act_bytes + 1) * heads * seq / hidden if score_matrix and recompute != "selective" else 0.0
    return sbh * ((replicated / tp if sp else replicated) + (split + scores) / tp)
