"""Writes ``heldout_errors.json`` and the held-out tables of ``MODEL_CARD.md`` from an evaluation result."""
from __future__ import annotations

import json
from pathlib import Path

START, END = "<!-- heldout:start -->", "<!-- heldout:end -->"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def shipped_errors(summary: dict) -> dict[str, float]:
    """Each class's held-out MAPE as a projection prices it (`evaluate`'s ``shipped_mape``; the class model
    alone's ``mape`` for a result written before it was scored)."""
    return {cls: s.get("shipped_mape", s["mape"]) for cls, s in summary["by_class"].items()}


def heldout_table(result: dict) -> str:
    """Markdown: per class and GPU, our MAPE (the class model alone, and as shipped) vs the baseline, per
    precision, then the transformer-layer check."""
    lines = ["| op class | held-out GPU | n | ours MAPE | ours as shipped | PreNeT baseline MAPE | bound only "
             "| ours time-weighted | baseline time-weighted |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(result["heldout"], key=lambda r: (r["op"], r["gpu"])):
        lines.append(f"| {r['op']} | {r['gpu']} | {r['n']} | {r['mape']:.1%} | {_pct(r.get('shipped_mape'))} "
                     f"| {_pct(r.get('baseline_mape'))} | {r['bound_only_mape']:.1%} | {_pct(r.get('time_weighted'))} "
                     f"| {_pct(r.get('baseline_time_weighted'))} |")
    lines += ["", "| op class | n | ours (sample-weighted) | ours as shipped | ours (mean over GPUs) | baseline "
              "| ours time-weighted (mean over GPUs) | baseline time-weighted |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for cls, s in sorted(result["summary"]["by_class"].items()):
        lines.append(f"| {cls} | {s['n']} | {s['mape']:.1%} | {_pct(s.get('shipped_mape'))} | {s['gpu_mean_mape']:.1%} "
                     f"| {_pct(s.get('baseline_mape'))} | {_pct(s.get('gpu_mean_time_weighted'))} "
                     f"| {_pct(s.get('baseline_gpu_mean_time_weighted'))} |")
    s = result["summary"]
    lines.append(f"| **all** | | **{s['mape']:.1%}** | **{_pct(s.get('shipped_mape'))}** | "
                 f"| **{(s.get('baseline_mape') or float('nan')):.1%}** | | |")
    if s.get("by_precision"):
        lines += ["", "Per precision (fp32: FP32 and TF32 rows; half: fp16 and bf16), sample-weighted over the held-out "
                  "GPUs:", "", "| precision | op class | n | ours MAPE | ours as shipped |", "|---|---|---:|---:|---:|"]
        for name, classes in sorted(s["by_precision"].items()):
            for cls, c in sorted(classes.items(), key=lambda kv: (kv[0] == "all", kv[0])):
                bold = "**" if cls == "all" else ""
                lines.append(f"| {name} | {bold}{cls}{bold} | {c['n']} | {bold}{c['mape']:.1%}{bold} "
                             f"| {bold}{_pct(c.get('shipped_mape'))}{bold} |")
    lines += ["", "Transformer layer 0 (NeuSight labels, FP32), predicted by the fold that never saw the GPU:", "",
              "| GPU | model | fwd pred / meas (ms) | bwd pred / meas (ms) | fwd+bwd error |", "|---|---|---:|---:|---:|"]
    for e in result.get("transformer_layers", []):
        lines.append(f"| {e['gpu']} | {e['model']} | {e['forward_predicted_ms']:.2f} / {e['forward_measured_ms']:.2f} "
                     f"| {e['backward_predicted_ms']:.2f} / {e['backward_measured_ms']:.2f} | {e['total_error']:+.1%} |")
    return "\n".join(lines)


def write_card(folder: Path, result: dict) -> None:
    """Update ``heldout_errors.json`` and the marked section of ``MODEL_CARD.md`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    # the bands price what ships: each class's error as a projection prices it
    summary = result["summary"]
    (folder / "heldout_errors.json").write_text(json.dumps({
        "by_class": shipped_errors(summary),
        "by_class_model_alone": {cls: s["mape"] for cls, s in summary["by_class"].items()},
        "summary": {"mape": summary["mape"], "shipped_mape": summary.get("shipped_mape", summary["mape"]),
                    "baseline_mape": summary["baseline_mape"]}}, indent=1, sort_keys=True))
    card = folder / "MODEL_CARD.md"
    text = card.read_text() if card.exists() else f"# Model card\n\n{START}\n{END}\n"
    if START not in text:
        text += f"\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1] if END in rest else ""
    card.write_text(f"{head}{START}\n{heldout_table(result)}\n{END}{tail}")
