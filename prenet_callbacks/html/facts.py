"""The panel's facts as HTML fragments: the summary list and the tables under each chart.

Everything shown is escaped; numbers use the same formatting as the text panel (`prenet_callbacks.units`).
"""
from __future__ import annotations

import datetime as _dt
from html import escape
from typing import Any, Iterable

from prenet_callbacks.outputs import report_view
from prenet_callbacks.html import view
from prenet_callbacks.projection.rows.cost import listing_label
from prenet_callbacks.report_parts import Prediction, TargetRow
from prenet_callbacks.outputs.report_view import device_label, number
from prenet_callbacks.units import format_count, format_duration, format_percent, format_step_time, format_usd

MAX_LAYER_ROWS = 10
_ENDINGS = {"completed": "Completed", "stopped_early": "Stopped early", "time_limit": "Stopped at its time limit",
            "interrupted": "Interrupted", "failed": "Failed"}


def when(iso: str | None) -> str:
    """``2026-11-30 15:53 UTC+00:00`` from an ISO-8601 time; the text as given when it does not parse."""
    if not iso:
        return "—"
    try:
        moment = _dt.datetime.fromisoformat(str(iso))
    except ValueError:
        return str(iso)
    return moment.strftime("%Y-%m-%d %H:%M") + (f" {moment.strftime('%Z')}" if moment.tzinfo else "")


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]], numeric: set[int], caption: str = "") -> str:
    head = "".join(f'<th{" class=num" if i in numeric else ""}>{escape(h)}</th>' for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td{" class=num" if i in numeric else ""}>{cell}</td>'
                                    for i, cell in enumerate(row)) + "</tr>" for row in rows)
    caption_html = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{caption_html}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _dash(value: Any) -> Any:
    return "—" if value is None else value


def _status(data: dict[str, Any], latest: Prediction) -> str:
    run = data.get("run") or {}
    ended = run.get("ended") or {}
    actual = data.get("actual") or {}
    fit_s = number(actual.get("fit_s")) or number(ended.get("elapsed_s"))
    reason = ended.get("reason") or actual.get("ended") or ("completed" if fit_s is not None else None)
    if reason is None:
        elapsed = number(latest.elapsed_s)
        written = escape(when(data.get("updated") or data.get("created")))
        return (f"Not finished when the report was written ({written}); {format_duration(elapsed)} elapsed at "
                f"the last prediction (optimizer step {_dash(latest.at_step)}).")
    step = ended.get("at_step", actual.get("steps"))
    text = f"{_ENDINGS.get(reason, escape(str(reason)))}"
    if ended.get("detail"):
        text += f" ({escape(str(ended['detail']))})"
    if step is not None:
        text += f" at optimizer step {step:,}" if isinstance(step, int) else f" at step {escape(str(step))}"
    text += f": took {format_duration(fit_s)}."
    done = number(actual.get("predicted_for_done_work_s"))
    if done is not None:
        text += f" Predicted for the work done: {format_duration(done)}."
    return text


def _first_prediction(data: dict[str, Any]) -> str | None:
    actual = data.get("actual") or {}
    first = actual.get("first_prediction") or next(
        (p for p in data.get("predictions") or [] if number(p.get("predicted_total_s")) is not None), None)
    if not first or number(first.get("predicted_total_s")) is None:
        return None
    text = f"{format_duration(first['predicted_total_s'])} at optimizer step {first.get('at_step', '—')}"
    error = number(actual.get("first_prediction_error"))
    if error is not None:
        text += f" ({error * 100:+.1f}% against the actual time)"
    return text


def _plan(data: dict[str, Any], latest: Prediction) -> str:
    plan = data.get("plan") or {}
    steps = plan.get("total_steps")
    if not steps:
        why = plan.get("unknown_reason") or latest.note or "no total number of steps"
        return escape(f"unknown length: {why}")
    epochs = plan.get("max_epochs")
    epochs_text = f", {epochs} epoch{'s' if epochs != 1 else ''}" if epochs else ""
    return escape(f"{steps:,} optimizer steps{epochs_text}, {plan.get('validation_runs') or 0} validation runs, "
                  f"{plan.get('checkpoint_saves') or 0} checkpoint files")


def _start(data: dict[str, Any]) -> str | None:
    run = data.get("run") or {}
    start, step = run.get("start"), run.get("start_step")
    if start == "resumed":
        return f"resumed from a checkpoint at optimizer step {step:,}" if isinstance(step, int) else "resumed"
    if start == "attached_late":
        return f"attached late, at optimizer step {step:,}" if isinstance(step, int) else "attached late"
    return None


def summary(data: dict[str, Any]) -> str:
    """The headline facts as a definition list."""
    latest = report_view.latest_prediction(data) or Prediction()
    current = data.get("current") or {}
    rows: list[tuple[str, str]] = [("Device", escape(device_label(data)) + escape(
        f", {current['precision']}" if current.get("precision") else ""))]
    rows.append(("Status", _status(data, latest)))
    total = number(latest.predicted_total_s)
    if total is not None:
        low, high = format_duration(number(latest.low_s)), format_duration(number(latest.high_s))
        rows.append((f"Predicted {report_view.run_word(data)} time",
                     f"<strong>{format_duration(total)}</strong> (band {low} – {high}), latest prediction, "
                     f"at optimizer step {_dash(latest.at_step)}"))
        naive = number(latest.naive_total_s)
        if naive is not None:
            rows.append(("Naive progress-bar estimate", f"{format_duration(naive)} at the same step"))
    first = _first_prediction(data)
    if first and (total is None or len(data.get("predictions") or []) > 1 or data.get("actual")):
        rows.append(("First prediction", escape(first)))
    if number(latest.step_s) is not None:
        rows.append(("Time per optimizer step", format_step_time(latest.step_s)))
    rows.append(("Plan", _plan(data, latest)))
    start = _start(data)
    if start:
        rows.append(("Start", escape(start)))
    if latest.note:
        rows.append(("Note", escape(str(latest.note))))
    recommendation = data.get("recommendation")
    text = recommendation.get("text") if isinstance(recommendation, dict) else recommendation
    if text:
        rows.append(("Recommendation", f"<strong>{escape(str(text))}</strong>"))
    return "<dl class=facts>" + "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def breakdown_table(data: dict[str, Any]) -> str:
    found = report_view.prediction_breakdown(report_view.latest_prediction(data))
    if not found.parts:
        return ""
    total = found.total_s or sum(s for _, s in found.parts)
    labels = dict(report_view.BREAKDOWN_PARTS + report_view.OF_WHICH_PARTS)
    rows = []
    for key, seconds, of_which in found.rows():
        if of_which and seconds <= 0:
            continue
        label = f"&nbsp;&nbsp;of which {escape(labels[key])}" if of_which else escape(labels[key])
        rows.append([label, format_duration(seconds), format_percent(seconds / total if total else None)])
    return _table(["part", "time", "share"], rows, {1, 2})


def layers_table(data: dict[str, Any]) -> str:
    rows = view.layers(data)
    if not rows:
        return ""
    body = [[escape(layer.name), escape(layer.module_type), format_step_time(layer.forward_s),
             format_step_time(layer.backward_s), format_count(layer.forward_flops),
             "—" if layer.intensity is None else f"{layer.intensity:.1f}", format_count(layer.params)]
            for layer in rows[:MAX_LAYER_ROWS]]
    more = len(rows) - MAX_LAYER_ROWS
    return _table(["layer", "type", "forward", "backward", "FLOPs fwd (CO)", "FLOP/B", "params"], body,
                  {2, 3, 4, 5, 6}, f"{more} more layers in the JSON report" if more > 0 else "")


def _fits(target: TargetRow) -> str:
    fits = target.fits_memory
    used, capacity = number(target.memory_gib), number(target.memory_capacity_gib)
    memory = f" ({used:.1f} of {capacity:.0f} GiB)" if used is not None and capacity else ""
    if fits is None:
        return "—"
    if fits:
        return "yes" + memory
    max_batch = target.max_batch
    return "<span class=bad>no</span>" + memory + (f", batch ≤ {max_batch}" if max_batch is not None else "")


def targets_table(data: dict[str, Any]) -> str:
    targets = report_view.targets(data)
    if not targets:
        return ""
    rows, notes = [], []
    for target in targets:
        label = str(target.display_label)
        low, high = number(target.total_low_s), number(target.total_high_s)
        error = number(target.relative_error)
        band = (f"{format_duration(low)} – {format_duration(high)}" if low is not None and high is not None
                and low != high else ("—" if error is None else f"±{error * 100:.0f}%"))
        speedup = number(target.speedup)
        rows.append([escape(label) + (" <em>(current)</em>" if target.current else ""),
                     format_step_time(number(target.step_s)), format_duration(number(target.total_s)),
                     band, "—" if speedup is None else f"{speedup:.2f}x", _fits(target),
                     format_usd(number(target.usd_per_hour)), format_usd(number(target.total_usd)),
                     escape(listing_label(target.price_provider, target.price_instance, target.price_date)),
                     escape(str(target.method or ""))])
        notes += [f"{label}: {note}" for note in target.notes or () if f"{label}: {note}" not in notes]
    dates = sorted({str(t.price_date) for t in targets if t.price_date})
    caption = f"prices as of {dates[0]}" + (f" to {dates[-1]}" if len(dates) > 1 else "") if dates else ""
    table = _table(["hardware", "step", "fit time", "band", "speed-up", "fits in memory", "$/h", "cost", "priced by",
                    "method"],
                   rows, {1, 2, 3, 4, 6, 7}, caption)
    return table + notes_list(notes)


def notes_list(notes: Iterable[str]) -> str:
    items = "".join(f"<li>{escape(str(note))}</li>" for note in notes)
    return f"<ul class=notes>{items}</ul>" if items else ""
