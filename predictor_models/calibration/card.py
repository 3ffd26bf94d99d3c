"""The model card of a calibration folder: which device, how many rows, the held-back error before and after."""
from __future__ import annotations


def _pct(value) -> str:
    return "-" if value is None else f"{value:.1%}"


def calibration_card(summary: dict, base_version: str) -> str:
    """Markdown for ``MODEL_CARD.md`` beside a calibration's ``predictor.json``."""
    lines = [f"# Calibration of the PreNeT per-op predictor for {summary['device']}", "",
             f"- Base: the shipped predictor {base_version} (checked by SHA-256 when loaded); on every other device "
             "this predictor is the base, unchanged.",
             f"- Device: {summary['device']}" + (" (not in the catalog: figures detected from the driver)"
                                                 if summary.get("detected") else ""),
             f"- Rows: {summary['rows']} read from {summary['source'] or 'the input'}, {summary['rows_used']} usable "
             f"({summary['rows_fit']} fitted, {summary['rows_heldback']} held back from the fit and scored below)",
             "- Correction: log(measured / predicted) per op class = the class's median offset plus a Gaussian-kernel "
             "ridge fit on the base model's features of the op (docs/calibration.md): "
             + ", ".join(f"{c} {e['rows']} rows (offset {e['offset']:+.3f}"
                         + (f", kernel on {e['kernel_rows']} rows)" if e["kernel_rows"] else ", offset only)")
                         for c, e in summary["classes"].items()),
             f"- Left out: {summary['left_out'] or 'nothing'}", f"- Date: {summary['created']}", "",
             "## Error on the held-back rows (MAPE)", "",
             "| op class | rows | before (shipped predictor) | after (calibrated) |", "|---|---:|---:|---:|"]
    for cls, entry in summary.get("heldback", {}).items():
        lines.append(f"| {cls} | {entry['n']} | {_pct(entry['mape_before'])} | {_pct(entry['mape_after'])} |")
    if not summary.get("heldback"):
        lines.append("| (no rows held back) | | | |")
    lines += ["", "Load it with `PreNeTCallback(predictor=FOLDER)`, `estimate(..., predictor=FOLDER)` or "
              "`--predictor FOLDER`. See docs/calibration.md.", ""]
    return "\n".join(lines)
