"""Writes ``heldout_errors.json`` and the held-out tables of ``MODEL_CARD.md`` from an evaluation result."""
from __future__ import annotations

import json
from pathlib import Path

START, END = "<!-- heldout:start -->", "<!-- heldout:end -->"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def heldout_table(result: dict) -> str:
    """Markdown: per class and GPU, our MAPE vs the baseline, then the transformer-layer check."""
    lines = ["| op class | held-out GPU | n | ours MAPE | PreNeT baseline MAPE | bound only | ours time-weighted "
             "| baseline time-weighted |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(result["heldout"], key=lambda r: (r["op"], r["gpu"])):
        lines.append(f"| {r['op']} | {r['gpu']} | {r['n']} | {r['mape']:.1%} | {_pct(r.get('baseline_mape'))} "
                     f"| {r['bound_only_mape']:.1%} | {_pct(r.get('time_weighted'))} "
                     f"| {_pct(r.get('baseline_time_weighted'))} |")
    lines += ["", "| op class | n | ours (sample-weighted) | ours (mean over GPUs) | baseline | ours time-weighted "
              "(mean over GPUs) | baseline time-weighted |", "|---|---:|---:|---:|---:|---:|---:|"]
    for cls, s in sorted(result["summary"]["by_class"].items()):
        lines.append(f"| {cls} | {s['n']} | {s['mape']:.1%} | {s['gpu_mean_mape']:.1%} | {_pct(s.get('baseline_mape'))} "
                     f"| {_pct(s.get('gpu_mean_time_weighted'))} | {_pct(s.get('baseline_gpu_mean_time_weighted'))} |")
    s = result["summary"]
    lines.append(f"| **all** | | **{s['mape']:.1%}** | | **{(s.get('baseline_mape') or float('nan')):.1%}** | | |")
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
