"""Writes ``heldout_errors.json`` and the held-out tables of ``MODEL_CARD.md`` from an evaluation result."""
from __future__ import annotations

import json
from pathlib import Path

START, END = "<!-- heldout:start -->", "<!-- heldout:end -->"


def heldout_table(result: dict) -> str:
    """Markdown: per class and GPU, our MAPE vs the baseline, then the transformer-layer check."""
    lines = ["| op class | held-out GPU | n | ours MAPE | PreNeT baseline MAPE | bound only |", "|---|---|---:|---:|---:|---:|"]
    for r in sorted(result["heldout"], key=lambda r: (r["op"], r["gpu"])):
        base = r.get("baseline_mape")
        lines.append(f"| {r['op']} | {r['gpu']} | {r['n']} | {r['mape']:.1%} | {'-' if base is None else f'{base:.1%}'} "
                     f"| {r['bound_only_mape']:.1%} |")
    lines += ["", "| op class | n | ours (sample-weighted) | ours (mean over GPUs) | baseline |", "|---|---:|---:|---:|---:|"]
    for cls, s in sorted(result["summary"]["by_class"].items()):
        base = s.get("baseline_mape")
        lines.append(f"| {cls} | {s['n']} | {s['mape']:.1%} | {s['gpu_mean_mape']:.1%} | {'-' if base is None else f'{base:.1%}'} |")
    s = result["summary"]
    lines.append(f"| **all** | | **{s['mape']:.1%}** | | **{(s.get('baseline_mape') or float('nan')):.1%}** |")
    lines += ["", "Transformer layer 0 (NeuSight labels, FP32), predicted by the fold that never saw the GPU:", "",
              "| GPU | model | fwd pred / meas (ms) | bwd pred / meas (ms) | fwd+bwd error |", "|---|---|---:|---:|---:|"]
    for e in result.get("transformer_layers", []):
        lines.append(f"| {e['gpu']} | {e['model']} | {e['forward_predicted_ms']:.2f} / {e['forward_measured_ms']:.2f} "
                     f"| {e['backward_predicted_ms']:.2f} / {e['backward_measured_ms']:.2f} | {e['total_error']:+.1%} |")
    return "\n".join(lines)


def write_card(folder: Path, result: dict) -> None:
    """Update ``heldout_errors.json`` and the marked section of ``MODEL_CARD.md`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    by_class = {cls: s["mape"] for cls, s in result["summary"]["by_class"].items()}
    (folder / "heldout_errors.json").write_text(json.dumps({"by_class": by_class, "summary": {
        "mape": result["summary"]["mape"], "baseline_mape": result["summary"]["baseline_mape"]}}, indent=1, sort_keys=True))
    card = folder / "MODEL_CARD.md"
    text = card.read_text() if card.exists() else f"# Model card\n\n{START}\n{END}\n"
    if START not in text:
        text += f"\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1] if END in rest else ""
    card.write_text(f"{head}{START}\n{heldout_table(result)}\n{END}{tail}")
