"""The report as people read it: one `rich` panel with tables.

Three moments read differently. *Live* (printed by the callback a few steps in): the prediction,
the time left and the clock time it should finish. *Re-rendered* while unfinished (``prenet
report`` on a report written during a run): when it was written and how old it is, never
"now + ETA". *Finished*: the actual time, how the run ended, and the first prediction's error.
"""
from __future__ import annotations

import datetime as _dt
import io
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from prenet_callbacks.outputs import report_view as view
from prenet_callbacks.outputs.fitted_table import Column, FittedTable
from prenet_callbacks.projection.rows.cost import listing_label
from prenet_callbacks.report import Report
from prenet_callbacks.report_parts import Prediction, TargetRow
from prenet_callbacks.outputs.terminal import output_width, print_block
from prenet_callbacks.units import (format_count, format_duration, format_percent, format_step_time,
                                    format_usd, plural)

# the panel's words for the breakdown's parts (the page's are `report_view.BREAKDOWN_PARTS`)
_BREAKDOWN_LABELS = {**dict(view.BREAKDOWN_PARTS), "data_loading_s": "  of which data loading",
                     "epoch_boundaries_s": "epoch boundaries and teardown"}
_RUN_WORDING = {"setup_s": "setup", "epoch_boundaries_s": "teardown"}  # runs without epochs or sanity checks
_MAX_LAYER_ROWS = 10
_END_WORDS = {"completed": "completed", "stopped_early": "stopped early", "time_limit": "stopped at its time limit",
              "interrupted": "interrupted", "failed": "failed"}


def _parse_time(text: str | None) -> _dt.datetime | None:
    try:
        return _dt.datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def _clock_time(moment: _dt.datetime, now: _dt.datetime) -> str:
    """``16:42`` today, ``Tue 03 Dec 09:10`` on another day."""
    return moment.strftime("%H:%M") if moment.date() == now.date() else moment.strftime("%a %d %b %H:%M")


def finish_time(eta_s: float, now: _dt.datetime | None = None) -> str:
    """Wall-clock time of day at which the run should end, from now and the time left."""
    now = now or _dt.datetime.now().astimezone()
    return _clock_time(now + _dt.timedelta(seconds=eta_s), now)


def _headline(report: Report, live: bool) -> Text:
    word = view.run_word(report)
    where = view.device_label(report)
    prediction = view.latest_prediction(report) or Prediction()
    text = Text()
    if report.actual:
        _finished_headline(text, report, word, where)
    elif prediction.predicted_total_s is None:
        rate, step = prediction.batches_per_s, prediction.step_s
        text.append(f"Training on {where}: ", style="bold")
        text.append(f"{format_step_time(step)} per step" if step else "not measured yet")
        if rate:
            text.append(f" ({rate:.2f} batches/s)")
        text.append(f"\nNo total: {prediction.note or 'the run length is unknown'}.", style="yellow")
    else:
        total = prediction.predicted_total_s
        text.append(f"Predicted {word} time on {where}: ", style="bold")
        text.append(format_duration(total), style="bold green")
        text.append(f"  (band {format_duration(prediction.low_s)} – {format_duration(prediction.high_s)})")
        eta = prediction.eta_s or 0.0
        if live:
            text.append(f"\nRemaining {format_duration(eta)}, finishing about {finish_time(eta)}")
        else:
            text.append("\n" + _written_line(report, prediction, eta))
        text.append(f"; {format_step_time(prediction.step_s)} per optimizer step")
    _plan_line(text, report, prediction)
    if prediction.note and prediction.predicted_total_s is not None and not report.actual:
        text.append(f"\nNote: {prediction.note}", style="yellow")   # without a total the note is its reason
    return text


def _finished_headline(text: Text, report: Report, word: str, where: str) -> None:
    actual = report.actual or {}
    ended = report.run.get("ended") or {}
    reason = actual.get("ended") or ended.get("reason") or "completed"
    text.append(f"The {word} on {where} took ", style="bold")
    text.append(format_duration(actual.get("fit_s")), style="bold green")
    text.append(f" ({_END_WORDS.get(reason, reason)} at step {actual.get('steps')}"
                + (f": {ended['detail']}" if ended.get("detail") else "") + ")")
    first = actual.get("first_prediction") or {}
    if first:
        error = actual.get("first_prediction_error")
        if error is not None:
            text.append(f"\nPredicted {format_duration(first['predicted_total_s'])} at step {first['at_step']}: "
                        f"{error:+.1%}")
        elif actual.get("predicted_for_done_work_s") and actual.get("fit_s"):
            done = actual["predicted_for_done_work_s"]
            text.append(f"\nFor the steps it ran, the prediction at step {first['at_step']} said "
                        f"{format_duration(done)} ({done / actual['fit_s'] - 1:+.1%}); the planned run was "
                        f"predicted at {format_duration(first['predicted_total_s'])}")
    written = _parse_time(report.updated)
    if written is not None:
        text.append(f"\nReport written {_clock_time(written, _dt.datetime.now().astimezone())}")


def _written_line(report: Report, prediction: Prediction, eta: float) -> str:
    """For a re-rendered unfinished report: when it was written and what it said then."""
    written = _parse_time(report.updated or report.created)
    if written is None:
        return f"Remaining {format_duration(eta)} when the report was written"
    now = _dt.datetime.now().astimezone()
    age = format_duration(max(0.0, (now - written).total_seconds()))
    return (f"Written {_clock_time(written, now)} ({age} ago) at step {prediction.at_step}, "
            f"{format_duration(prediction.elapsed_s)} in, with {format_duration(eta)} to go")


def _plan_line(text: Text, report: Report, prediction: Prediction) -> None:
    plan = report.plan
    if not plan.get("total_steps"):
        return
    steps = plan["total_steps"]
    covered = prediction.steps
    parts = [f"{steps:,} optimizer steps" if not prediction.time_limited or covered is None
             else f"{covered:,} of {steps:,} optimizer steps fit in the time limit"]
    # under a time limit the counts are those of the steps that fit (the plan's, scaled by the share of steps)
    share = covered / steps if prediction.time_limited and covered is not None and steps else 1.0
    def count(key: str, word: str) -> str:
        planned = plan.get(key, 0) or 0
        about = "about " if share < 1.0 and planned else ""
        return about + plural(round(planned * share), word)

    if plan.get("max_epochs") and share == 1.0:
        parts.append(plural(plan["max_epochs"], "epoch"))
    if view.is_lightning(report) or plan.get("validation_runs"):
        parts.append(count("validation_runs", "validation run"))
    parts.append(count("checkpoint_saves", "checkpoint file"))
    start = report.run.get("start_step") or 0
    if start:
        how = "resumed" if report.run.get("start") == "resumed" else "attached"
        parts.append(f"{how} at step {start:,}")
    text.append("\nPlan: " + ", ".join(parts))


def _breakdown_table(report: Report) -> FittedTable | None:
    """Where the time went (finished, measured) or goes (the latest prediction), or None."""
    found = view.breakdown(report)
    if found is None:
        return None
    if found.finished:
        title = "Where the time went"
    else:
        start = report.run.get("start_step") or 0
        # after a resume the breakdown is this fit's (from step N on); "whole run" is the targets' word
        title = f"Where the time goes ({f'from step {start:,}' if start else 'whole ' + view.run_word(report)})"
    lightning = view.is_lightning(report)
    rows = []
    total = found.total_s
    for key, seconds, _ in found.rows():
        if key != "train_s" and seconds < 0.05:
            continue
        label = _BREAKDOWN_LABELS[key] if lightning else _RUN_WORDING.get(key, _BREAKDOWN_LABELS[key])
        rows.append([label, format_duration(seconds), format_percent(seconds / total if total else None)])
    return FittedTable([Column("part", wrap=True), Column("time", "right"), Column("share", "right")], rows,
                       title=title)


# the layer table's columns; at 80 columns FLOP/B goes first, then the parameters, the FLOPs and the type
_LAYER_COLUMNS = (Column("layer", keep_tail=True), Column("type", drop=4), Column("forward", "right"),
                  Column("backward", "right"), Column("FLOPs fwd (CO)", "right", drop=3),
                  Column("FLOP/B", "right", drop=1), Column("params", "right", drop=2))


def _layer_table(layers: list[dict[str, Any]]) -> FittedTable | None:
    rows = [layer for layer in layers if (layer.get("forward_s") or 0) + (layer.get("backward_s") or 0) > 0]
    if not rows:
        return None
    rows.sort(key=lambda layer: -((layer.get("forward_s") or 0) + (layer.get("backward_s") or 0)))
    cells = []
    for layer in rows[:_MAX_LAYER_ROWS]:
        features = layer.get("features") or {}
        name = str(layer.get("name", "?"))
        if name == "(root)":
            name = "(root: ops outside submodules)"
        cells.append([name, str(layer.get("module_type", "")), format_step_time(layer.get("forward_s")),
                      format_step_time(layer.get("backward_s")), format_count(features.get("co_flops")),
                      _format_intensity(features.get("arithmetic_intensity")), format_count(layer.get("params"))])
    more = len(rows) - _MAX_LAYER_ROWS
    return FittedTable(_LAYER_COLUMNS, cells, title="Layers (measured, per optimizer step)",
                       caption=f"{more} more layers in the JSON report" if more > 0 else "")


def _format_intensity(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _price_title(targets: list[TargetRow]) -> str:
    dates = sorted({t.price_date for t in targets if t.price_date})
    if not dates:
        return ""
    # the oldest price is the one a reader should doubt first
    return f", prices as of {dates[0]}" if len(dates) == 1 else f", prices dated {dates[0]} to {dates[-1]}"


# at 80 columns the method goes first, then the listing, the hourly price and the speed-up (time says it too)
_TARGET_COLUMNS = (Column("step", "right"), Column("time", "right"), Column("band", "right"),
                   Column("speed-up", "right", drop=4), Column("fits", "center", wrap=True),
                   Column("$/h", "right", drop=3), Column("cost", "right", drop=5),
                   Column("priced by", drop=2), Column("method", drop=1))


def targets_table(report: Report) -> FittedTable | None:
    """The other-hardware table of a report (also what ``estimate().table()`` prints)."""
    rows = view.targets(report)
    if not rows:
        return None
    title = "Other hardware (predicted)" + _price_title(rows)
    at = (report.projection or {}).get("at_step")
    latest = (view.latest_prediction(report) or Prediction()).at_step
    if at is not None and latest is not None and at != latest and not report.actual:
        title += f", projected at step {at}"
    cells = [_target_cells(target) for target in rows]
    # a target's name stays on one line; the current device's may break before "(current)"
    hardware = Column("hardware", wrap=True, min_width=max((len(t.display_label) for t in rows if not t.current),
                                                           default=0))
    return FittedTable((hardware, *_TARGET_COLUMNS), cells, title=title, caption="\n".join(_target_notes(report, rows)))


def _target_cells(target: TargetRow) -> list[str]:
    speedup, fits = target.speedup, target.fits_memory
    if fits is None:
        fits_text = "—"
    elif fits:
        fits_text = "yes"
    else:
        fits_text = "[red]no[/red]" + (f" (≤{target.max_batch})" if target.max_batch is not None else "")
    return [target.display_label + (" (current)" if target.current else ""), format_step_time(target.step_s),
            format_duration(target.total_s), _band_text(target), "—" if speedup is None else f"{speedup:.2f}x",
            fits_text, format_usd(target.usd_per_hour), format_usd(target.total_usd),
            listing_label(target.price_provider, target.price_instance, target.price_date, instance_chars=0),
            str(target.method)]


def _target_notes(report: Report, rows: list[TargetRow]) -> list[str]:
    """The table's notes: one line per fact with the rows it applies to, then the run's and the prices'."""
    by_note: dict[str, list[str]] = {}
    for target in rows:
        for note in target.notes or ():
            by_note.setdefault(note, []).append(target.display_label)
    notes = [f"{', '.join(labels)}: {note}" for note, labels in by_note.items()]
    notes += _one_off_note(report, rows)
    work = (report.projection or {}).get("work") or {}
    if work.get("done_steps"):
        notes.append(f"every row is the whole run of {work.get('steps') or '?':,} steps, of which "
                     f"{work['done_steps']:,} ran before this {'fit' if view.is_lightning(report) else 'attach'}")
    convention = (report.projection or {}).get("batch_convention")
    if not any(not t.current for t in rows):
        # the measured row alone: the projection's notes say why nothing else is there (a run that splits its
        # model, no per-layer profile)
        notes += (report.projection or {}).get("notes") or []
    elif convention and any((t.devices or 1) > 1 for t in rows):
        notes.append("multi-GPU rows: each GPU keeps the measured per-device batch" if convention == "per_device"
                     else "multi-GPU rows: the global batch stays, split over each target's GPUs")
    instances = sorted({f"{t.price_provider} {t.price_instance}" for t in rows if t.price_provider and t.price_instance})
    if instances:
        notes.append("priced by: " + "; ".join(instances) + " (on-demand list prices of that date)")
    return notes


def _one_off_note(report: Report, rows: list[TargetRow]) -> list[str]:
    """Where the rows' one-off time comes from, when the measured run's (a CPU's) is not carried to them."""
    measured = ((report.projection or {}).get("one_off") or {}).get("measured_s")
    own = [t.assumed["one_off_s"] for t in rows if not t.current and t.assumed.get("one_off_s")]
    if measured is None or not own:
        return []
    spread = dict.fromkeys((format_duration(min(own)), format_duration(max(own))))   # "0.4 s" or "0.4 s to 1.2 s"
    where = "this CPU's" if report.current.get("device") == "cpu" else "the measured device's"
    instead = f", not {where} {format_duration(measured)}" if measured >= 0.05 else ""
    return [f"other rows: their own warm-up ({' to '.join(spread)}, estimated){instead}"]


def _band_text(target: TargetRow) -> str:
    """The row's step band as the projection made it (regime-widened, multiplicative): "-33/+49%"."""
    step, low, high = target.step_s, target.step_low_s, target.step_high_s
    if target.current or not step or low is None or high is None:
        error = target.relative_error
        return "—" if error is None else f"±{error * 100:.0f}%"
    return f"-{(1 - low / step) * 100:.0f}/+{(high / step - 1) * 100:.0f}%"


def report_renderable(report: Report, *, live: bool = False) -> Panel:
    """The whole report as one rich `Panel` (``live``: printed by a running callback)."""
    parts: list[Any] = [_headline(report, live)]
    breakdown = _breakdown_table(report)
    if breakdown is not None:
        parts += [Text(""), breakdown]
    layer_table = _layer_table(view.measured(report).layer_rows)
    if layer_table is not None:
        parts += [Text(""), layer_table]
    targets = targets_table(report)
    if targets is not None:
        parts += [Text(""), targets]
    recommendation = (report.recommendation or {}).get("text")
    if recommendation:
        parts += [Text(""), Text(f"Recommendation: {recommendation}", style="bold")]
    for limitation in report.limitations:
        parts.append(Text(f"• {limitation}", style="dim"))
    return Panel(Group(*parts), title="PreNeT", title_align="left", border_style="cyan")


def render_text(report: Report, width: int | None = None, *, live: bool = False) -> str:
    """The panel as plain text at ``width`` columns (default: `terminal.output_width`, the one width rule)."""
    buffer = io.StringIO()
    Console(file=buffer, width=width or output_width(), force_terminal=False, color_system=None).print(
        report_renderable(report, live=live))
    return buffer.getvalue()


def print_report(report: Report) -> None:
    """Print the live panel to stdout at the console's width, on a line of its own beside progress bars."""
    print_block(report_renderable(report, live=True))
