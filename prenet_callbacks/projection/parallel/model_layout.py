"""How a model is laid out over a target's GPUs: tensor, pipeline and data parallel degrees, the schedule.

Written after the hardware in a target name: ``"8x H100 tp=8"``, ``"4x8 H100 tp=8 pp=4"``,
``"2x8 A100 tp=4 pp=2 dp=2 sp"``, ``"4x8 H100 tp=8 pp=4 microbatches=16 interleaved=2"``. Tokens:

- ``tp=N`` tensor parallel (Megatron's column/row split of each block's GEMMs), ``pp=N`` pipeline stages,
  ``dp=N`` data parallel replicas (derived as GPUs / (tp x pp) when not given; when given the product must be
  the GPU count);
- ``sp``: sequence parallelism beside tp (norms and dropouts split along the sequence, the all-reduces become
  reduce-scatter + all-gather);
- ``microbatches=M`` micro-batches per optimizer step on each replica, or ``global_batch=G`` (then
  M = G / (micro-batch x dp)); neither: the run's own accumulation (1 for ``estimate`` without ``accumulate``);
- ``1f1b`` (default) or ``interleaved`` / ``interleaved=V``: Megatron's interleaved 1F1B with V model chunks
  per GPU (virtual stages, default 2).

The captured step (``estimate``'s input, a run's per-device batch) is one micro-batch. What depends on the
model (heads and hidden size divisible by tp, pp at most the layers) is checked when the model is known
(`check_against_model`). The pipeline's idle share is `bubble_share`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_VIRTUAL_STAGES = 2
_NUMBER = re.compile(r"^(tp|pp|dp|microbatches|global_batch|interleaved)=(\d+)$")
_FLAGS = ("sp", "1f1b", "interleaved")


@dataclass(frozen=True)
class ModelLayout:
    """Degrees of one target's layout: ``tp x pp x dp`` GPUs."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    sp: bool = False
    microbatches: int | None = None    # per replica and optimizer step; None: the run's accumulation
    global_batch: int | None = None    # samples per optimizer step over all replicas (sets the micro-batches)
    schedule: str = "1f1b"
    virtual_stages: int = 1            # model chunks per GPU (interleaved)

    @property
    def model_parallel(self) -> bool:
        """Whether the model itself is split (tp or pp above 1); dp alone is plain data parallelism."""
        return self.tp > 1 or self.pp > 1

    def text(self) -> str:
        """The layout as it is written in a target name (canonical order; dp only where it says more)."""
        parts = [f"tp={self.tp}"] if self.tp > 1 else []
        parts += [f"pp={self.pp}"] if self.pp > 1 else []
        parts += [f"dp={self.dp}"] if self.dp > 1 and self.model_parallel else []
        parts += ["sp"] if self.sp else []
        parts += [f"microbatches={self.microbatches}"] if self.microbatches else []
        parts += [f"global_batch={self.global_batch}"] if self.global_batch else []
        parts += [f"interleaved={self.virtual_stages}"] if self.schedule == "interleaved" else []
        return " ".join(parts)

    def to_dict(self) -> dict:
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "sp": self.sp, "microbatches": self.microbatches,
                "global_batch": self.global_batch, "schedule": self.schedule, "virtual_stages": self.virtual_stages}


def is_layout_token(token: str) -> bool:
    """Whether a whitespace-separated word of a target name belongs to the layout (no GPU name has one)."""
    low = token.strip().lower()
    return low in _FLAGS or bool(_NUMBER.match(low))


def split_layout(text: str) -> tuple[str, list[str]]:
    """(the hardware part of a target name, its layout tokens), e.g. ``"4x8 H100 tp=8 pp=4"`` ->
    ``("4x8 H100", ["tp=8", "pp=4"])``. The layout words may stand anywhere after the count."""
    words = text.split()
    layout = [w for w in words if is_layout_token(w)]
    return " ".join(w for w in words if not is_layout_token(w)), layout


def parse_layout(tokens: list[str], gpus: int, text: str) -> ModelLayout | None:
    """The layout of a target of `gpus` GPUs from its tokens (None when there are none). Raises ValueError
    naming the target, the value and the form to write: a product that is not the GPU count, a degree of 0,
    a token given twice, a schedule without pipeline stages, micro-batches with a global batch."""
    if not tokens:
        return None
    values: dict[str, int] = {}
    flags: set[str] = set()
    for token in tokens:
        low = token.lower()
        match = _NUMBER.match(low)
        key = match.group(1) if match else low
        if key in values or key in flags:
            raise ValueError(f"{text!r}: {key!r} is given twice; write each layout word once, e.g. '8x H100 tp=8'")
        if match:
            values[key] = int(match.group(2))
            if values[key] < 1:
                raise ValueError(f"{text!r}: {token} must be at least 1")
        else:
            flags.add(key)
    if "1f1b" in flags and ("interleaved" in flags or "interleaved" in values):
        raise ValueError(f"{text!r}: choose one schedule, '1f1b' or 'interleaved' (with its virtual stages, "
                         "e.g. 'interleaved=2')")
    tp, pp = values.get("tp", 1), values.get("pp", 1)
    if gpus % (tp * pp):
        raise ValueError(f"{text!r}: tp x pp = {tp} x {pp} = {tp * pp} does not divide the target's {gpus} GPUs; "
                         f"choose degrees whose product divides {gpus} (the rest is data parallel)")
    dp = values.get("dp", gpus // (tp * pp))
    if tp * pp * dp != gpus:
        raise ValueError(f"{text!r}: tp x pp x dp = {tp} x {pp} x {dp} = {tp * pp * dp}, but the target has {gpus} "
                         f"GPUs; make the product {gpus}, e.g. dp={gpus // (tp * pp)}, or leave dp out")
    interleaved = "interleaved" in flags or "interleaved" in values
    virtual = values.get("interleaved", DEFAULT_VIRTUAL_STAGES) if interleaved else 1
    if (interleaved or "1f1b" in flags) and pp == 1:
        raise ValueError(f"{text!r}: a pipeline schedule needs pipeline stages; add pp=N (N >= 2) or drop the "
                         "schedule word")
    if "sp" in flags and tp == 1:
        raise ValueError(f"{text!r}: sequence parallelism ('sp') splits along tensor-parallel ranks; add tp=N "
                         "(N >= 2) or drop 'sp'")
    if "microbatches" in values and "global_batch" in values:
        raise ValueError(f"{text!r}: give microbatches= or global_batch=, not both (the global batch sets the "
                         "micro-batches: global_batch / (micro-batch x dp))")
    if interleaved and virtual < 2:
        raise ValueError(f"{text!r}: interleaved=1 is the plain 1F1B schedule; write 'interleaved=2' or more, "
                         "or '1f1b'")
    return ModelLayout(tp, pp, dp, "sp" in flags, values.get("microbatches"), values.get("global_batch"),
                       "interleaved" if interleaved else "1f1b", virtual)


def check_against_model(layout: ModelLayout, *, heads: int, hidden: int, layers: int) -> str | None:
    """Why `layout` cannot run this model (None when it can): tp must divide the attention heads and the
    hidden size, pp at most the layers (and with interleaving, pp x virtual stages at most the layers)."""
    if layout.tp > heads:
        return f"tp={layout.tp} is more than the model's {heads} attention heads"
    if heads % layout.tp:
        return f"tp={layout.tp} does not divide the model's {heads} attention heads"
    if hidden % layout.tp:
        return f"tp={layout.tp} does not divide the model's hidden size {hidden}"
    if layout.pp > layers:
        return f"pp={layout.pp} is more stages than the model's {layers} layers"
    if layout.pp * layout.virtual_stages > layers:
        return (f"pp={layout.pp} x interleaved={layout.virtual_stages} = {layout.pp * layout.virtual_stages} model "
                f"chunks is more than the model's {layers} layers")
    return None


def bubble_share(pp: int, microbatches: int, virtual_stages: int = 1) -> float:
    """Share of a 1F1B step the pipeline idles, with equal stages: (pp - 1) / (v m + pp - 1); it is
    (pp - 1) / m of the ideal time, divided by the v virtual stages of the interleaved schedule
    (Narayanan et al., SC'21, sections 2.2.1-2.2.2)."""
    if pp <= 1:
        return 0.0
    return (pp - 1) / (virtual_stages * microbatches + pp - 1)
