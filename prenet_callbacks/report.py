"""The JSON report of a run (schema ``prenet-report/1``), readable without the model.

``prenet report REPORT.json`` re-renders it, for other targets too. Unknown keys are kept, so a
newer writer's report still loads.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = "prenet-report/1"
# History is thinned beyond this many entries: the first predictions and the latest ones are
# what people compare; memory must stay bounded over very long runs.
MAX_HISTORY = 200
_KEEP_FIRST = 20


class ReportError(ValueError):
    """A report file that cannot be read or written: the message names the file and the problem."""


@dataclass
class Report:
    """A run's measurements and predictions. See DESIGN.md, "The report"."""

    current: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    measured: dict[str, Any] = field(default_factory=dict)
    predictions: list[dict[str, Any]] = field(default_factory=list)
    targets: list[dict[str, Any]] = field(default_factory=list)
    actual: dict[str, Any] | None = None
    limitations: list[str] = field(default_factory=list)
    created: str = field(default_factory=lambda: _dt.datetime.now().astimezone().isoformat(timespec="seconds"))
    schema: str = SCHEMA
    extra: dict[str, Any] = field(default_factory=dict)

    # -- history ------------------------------------------------------------------------------
    def add_prediction(self, prediction: dict[str, Any]) -> None:
        """Append to the history, thinning the middle so it never exceeds `MAX_HISTORY`."""
        self.predictions.append(prediction)
        if len(self.predictions) > MAX_HISTORY:
            head = self.predictions[:_KEEP_FIRST]
            middle = self.predictions[_KEEP_FIRST:-1][::2]
            self.predictions = head + middle + self.predictions[-1:]

    @property
    def first_prediction(self) -> dict[str, Any] | None:
        return next((p for p in self.predictions if p.get("predicted_total_s") is not None), None)

    @property
    def latest_prediction(self) -> dict[str, Any] | None:
        return self.predictions[-1] if self.predictions else None

    # -- serialisation ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = {
            "schema": self.schema,
            "created": self.created,
            "current": self.current,
            "plan": self.plan,
            "measured": self.measured,
            "predictions": self.predictions,
            "targets": self.targets,
            "actual": self.actual,
            "limitations": self.limitations,
        }
        data.update(self.extra)
        return data

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=_json_default)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically (temp file + rename), so a crash never leaves half a report.

        A location that cannot be written (a directory, inside a file, read-only, full) raises
        `ReportError` naming the file and the reason.
        """
        path = Path(path)
        if path.is_dir():
            raise ReportError(f"cannot write report {str(path)!r}: it is a directory (pass a file path)")
        text = self.to_json()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".prenet-", suffix=".json", dir=path.parent)
        except OSError as error:
            raise ReportError(f"cannot write report {str(path)!r}: {error.strerror or error}") from error
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except BaseException as error:
            Path(tmp).unlink(missing_ok=True)
            if isinstance(error, OSError):
                raise ReportError(f"cannot write report {str(path)!r}: {error.strerror or error}") from error
            raise
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Report":
        if not isinstance(data, dict):
            raise ReportError("a report is a JSON object")
        schema = data.get("schema")
        if not isinstance(schema, str) or not schema.startswith("prenet-report/"):
            raise ReportError(f"not a PreNeT report (schema {schema!r}, expected {SCHEMA!r})")
        if schema != SCHEMA:
            raise ReportError(f"report schema {schema!r} is not supported by this version (reads {SCHEMA!r})")
        known = {"schema", "created", "current", "plan", "measured", "predictions", "targets", "actual", "limitations"}
        for key, kind in (("current", dict), ("plan", dict), ("measured", dict), ("predictions", list),
                          ("targets", list), ("limitations", list), ("actual", dict)):
            value = data.get(key)
            if value is not None and not isinstance(value, kind):
                raise ReportError(f"field {key!r} must be a JSON {'object' if kind is dict else 'array'}, "
                                  f"got {type(value).__name__}")
        if any(not isinstance(p, dict) for p in data.get("predictions") or []):
            raise ReportError("field 'predictions' must hold JSON objects")
        return cls(
            current=data.get("current") or {},
            plan=data.get("plan") or {},
            measured=data.get("measured") or {},
            predictions=list(data.get("predictions") or []),
            targets=list(data.get("targets") or []),
            actual=data.get("actual"),
            limitations=list(data.get("limitations") or []),
            created=data.get("created", ""),
            schema=schema,
            extra={k: v for k, v in data.items() if k not in known},
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Report":
        """Read a report; a missing, non-JSON or foreign file raises `ReportError` naming it."""
        path = Path(path)
        if path.is_dir():
            raise ReportError(f"report file {str(path)!r} is a directory (pass the report.json a run wrote)")
        if not path.is_file():
            raise ReportError(f"report file {str(path)!r} does not exist (pass the report.json a run wrote)")
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ReportError(f"report file {str(path)!r} is not valid JSON: {error}") from None
        try:
            return cls.from_dict(data)
        except ReportError as error:
            raise ReportError(f"report file {str(path)!r}: {error}") from None


def _json_default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "item"):  # numpy / torch scalars
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot serialise {type(value).__name__} in a report")
