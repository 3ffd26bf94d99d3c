"""The report as people read it: one `rich` panel with tables."""
from __future__ import annotations

import datetime as _dt
import io
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from prenet_callbacks.report import Report
from prenet_callbacks.units import format_count, format_duration, format_percent, format_step_time, format_usd

_BREAKDOWN_LABELS = {
    "setup": "setup and sanity check",
    "train": "training steps",
    "data_loading": "  of which data loading",
    "validation": "validation",
    "checkpoints": "checkpoint saves",
    "epoch_boundaries": "epoch boundaries and teardown",
}
_MAX_LAYER_ROWS = 10


def finish_time(created_iso: str | None, elapsed_s: float, eta_s: float) -> str:
    """Wall-clock time of day at which the fit should end, e.g. ``16:42`` or ``Tue 09:10``."""
    now = _dt.datetime.now().astimezone()
    end = now + _dt.timedelta(seconds=eta_s)
    return end.strftime("%H:%M") if end.date() == now.date() else end.strftime("%a %d %b %H:%M")


def _headline(report: Report) -> Text:
    device = report.current.get("catalog_name") or report.current.get("name") or report.current.get("device", "this device")
    if report.current.get("device") == "cpu":
        cores = report.current.get("cpu_cores")
        device = f"CPU ({report.current.get('name', 'unknown')}{f', {cores} cores' if cores else ''})"
    devices = report.current.get("devices", 1)
    where = f"{devices}x {device}" if devices and devices > 1 else device
    prediction = report.latest_prediction or {}
    text = Text()
    total = prediction.get("predicted_total_s")
    if total is None:
        rate = prediction.get("batches_per_s")
        step = prediction.get("step_s")
        text.append(f"Training on {where}: ", style="bold")
        text.append(f"{format_step_time(step)} per step" if step else "not measured yet")
        if rate:
            text.append(f" ({rate:.2f} batches/s)")
        text.append(f"\nNo total: {prediction.get('note') or 'the run length is unknown'}.", style="yellow")
        return text
    text.append(f"Predicted fit time on {where}: ", style="bold")
    text.append(format_duration(total), style="bold green")
    text.append(f"  (band {format_duration(prediction.get('low_s'))} – {format_duration(prediction.get('high_s'))})")
    eta = prediction.get("eta_s") or 0.0
    text.append(f"\nRemaining {format_duration(eta)}, finishing about {finish_time(report.created, prediction.get('elapsed_s', 0), eta)}")
    text.append(f"; {format_step_time(prediction.get('step_s'))} per optimizer step")
    plan = report.plan
    if plan.get("total_steps"):
        text.append(
            f"\nPlan: {plan['total_steps']:,} optimizer steps"
            + (f", {plan['max_epochs']} epochs" if plan.get("max_epochs") else "")
            + f", {plan.get('validation_runs', 0)} validation runs, {plan.get('checkpoint_saves', 0)} checkpoint files"
        )
    if prediction.get("note"):
        text.append(f"\nNote: {prediction['note']}", style="yellow")
    return text


def _breakdown_table(breakdown: dict[str, float], total: float | None) -> Table:
    table = Table(title="Where the time goes (whole fit)", title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("part")
    table.add_column("time", justify="right")
    table.add_column("share", justify="right")
    for key, label in _BREAKDOWN_LABELS.items():
        seconds = breakdown.get(key)
        if seconds is None or (key != "train" and seconds < 0.05):
            continue
        share = seconds / total if total else None
        table.add_row(label, format_duration(seconds), format_percent(share))
    return table


def _layer_table(layers: list[dict[str, Any]]) -> Table | None:
    rows = [layer for layer in layers if (layer.get("forward_s") or 0) + (layer.get("backward_s") or 0) > 0]
    if not rows:
        return None
    rows.sort(key=lambda layer: -((layer.get("forward_s") or 0) + (layer.get("backward_s") or 0)))
    table = Table(title="Layers (measured, per optimizer step)", title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("layer", overflow="fold", ratio=3)
    table.add_column("type", overflow="ellipsis", ratio=2)
    for column in ("forward", "backward", "FLOPs fwd (CO)", "FLOP/B", "params"):
        table.add_column(column, justify="right", no_wrap=True)
    for layer in rows[:_MAX_LAYER_ROWS]:
        features = layer.get("features") or {}
        table.add_row(
            str(layer.get("name", "?")),
            str(layer.get("module_type", "")),
            format_step_time(layer.get("forward_s")),
            format_step_time(layer.get("backward_s")),
            format_count(features.get("co_flops")),
            _format_intensity(features.get("arithmetic_intensity")),
            format_count(layer.get("params")),
        )
    if len(rows) > _MAX_LAYER_ROWS:
        table.caption = f"{len(rows) - _MAX_LAYER_ROWS} more layers in the JSON report"
    return table


def _format_intensity(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _targets_table(report: Report) -> Table | None:
    if not report.targets:
        return None
    price_dates = sorted({t.get("price_date") for t in report.targets if t.get("price_date")})
    title = "Other hardware (predicted)" + (f", prices as of {price_dates[-1]}" if price_dates else "")
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for column, justify in (("hardware", "left"), ("step", "right"), ("fit time", "right"), ("band", "right"),
                            ("speed-up", "right"), ("fits", "center"), ("$/h", "right"), ("cost", "right"),
                            ("method", "left")):
        table.add_column(column, justify=justify)
    notes: list[str] = []
    for target in report.targets:
        devices = target.get("devices", 1)
        name = target.get("name", "?")
        label = target.get("label") or (f"{devices}x {name}" if devices and devices > 1 else name)
        speedup = target.get("speedup")
        fits = target.get("fits_memory")
        if fits is None:
            fits_text = "—"
        elif fits:
            fits_text = "yes"
        else:
            max_batch = target.get("max_batch")
            fits_text = "[red]no[/red]" + (f" (≤{max_batch})" if max_batch is not None else "")
        error = target.get("relative_error")
        for note in target.get("notes") or []:
            line = f"{label}: {note}"
            if line not in notes:
                notes.append(line)
        table.add_row(
            label + (" (current)" if target.get("current") else ""),
            format_step_time(target.get("step_s", target.get("step_seconds"))),
            format_duration(target.get("total_s", target.get("total_seconds"))),
            "—" if error is None else f"±{error * 100:.0f}%",
            "—" if speedup is None else f"{speedup:.2f}x",
            fits_text,
            format_usd(target.get("usd_per_hour")),
            format_usd(target.get("total_usd")),
            str(target.get("method", "")),
        )
    convention = next((t.get("batch_convention") for t in report.targets if t.get("batch_convention")), None)
    if convention:
        notes.append("batch: each GPU keeps the measured per-device batch" if convention == "per_device"
                     else "batch: the global batch stays, split over each target's GPUs")
    if notes:
        table.caption = "\n".join(notes)
        table.caption_justify = "left"
    return table


def report_renderable(report: Report) -> Panel:
    """The whole report as one rich `Panel`."""
    parts: list[Any] = [_headline(report)]
    prediction = report.latest_prediction or {}
    if prediction.get("breakdown") and prediction.get("predicted_total_s"):
        parts += [Text(""), _breakdown_table(prediction["breakdown"], prediction["predicted_total_s"])]
    layers = (report.measured.get("layers") or {}).get("layers") or []
    layer_table = _layer_table(layers)
    if layer_table is not None:
        parts += [Text(""), layer_table]
    targets = _targets_table(report)
    if targets is not None:
        parts += [Text(""), targets]
    recommendation = report.extra.get("recommendation")
    if isinstance(recommendation, dict):
        recommendation = recommendation.get("text")
    if recommendation:
        parts += [Text(""), Text(f"Recommendation: {recommendation}", style="bold")]
    for limitation in report.limitations:
        parts.append(Text(f"• {limitation}", style="dim"))
    return Panel(Group(*parts), title="PreNeT", title_align="left", border_style="cyan")


def render_text(report: Report, width: int = 110) -> str:
    """The panel as plain text (for logs and tests)."""
    buffer = io.StringIO()
    Console(file=buffer, width=width, force_terminal=False, color_system=None).print(report_renderable(report))
    return buffer.getvalue()


def print_report(report: Report, console: Console | None = None) -> None:
    """Print the panel; in a log file (no terminal) at 120 columns rather than rich's default 80."""
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=120)
    console.print(report_renderable(report))
