"""The JSON report of a run (schema ``prenet-report/2.1``), readable without the model.

``prenet report REPORT.json`` re-renders it, for other targets too. Reports written as
``prenet-report/1`` are upgraded on load (`report_upgrade`), so every reader sees one shape; the
fields are described in ``docs/report-schema.md`` and checked by the JSON Schema in
``prenet_callbacks/schemas/``. Unknown top-level keys are kept, so a newer writer's report still loads.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = "prenet-report/2.1"   # /2.1 adds optional keys to /2 (a target row's ``layout``): /2 files read as they are
READABLE_SCHEMAS = ("prenet-report/1", "prenet-report/2", SCHEMA)
# History is thinned beyond this many entries: the first predictions and the latest ones are
# what people compare; memory must stay bounded over very long runs.
MAX_HISTORY = 200
_KEEP_FIRST = 20
_FIELDS = ("schema", "created", "updated", "run", "current", "plan", "measured", "predictions", "targets",
           "recommendation", "projection", "actual", "limitations")


class ReportError(ValueError):
    """A report file that cannot be read or written: the message names the file and the problem."""


def now_iso() -> str:
    """The local time with its UTC offset, to the second (how reports stamp times)."""
    return _dt.datetime.now().astimezone().isoformat(timespec="seconds")


def new_run() -> dict[str, Any]:
    """The ``run`` block of a report nobody has started yet."""
    return {"framework": None, "start": "fresh", "start_step": 0, "fits": 0,
            "limits": {"max_steps": None, "max_epochs": None, "max_time_s": None, "early_stopping": False},
            "startup_s": None, "ended": None}


@dataclass
class Report:
    """A run's measurements and predictions. See ``docs/report-schema.md``."""

    current: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    measured: dict[str, Any] = field(default_factory=dict)
    predictions: list[dict[str, Any]] = field(default_factory=list)
    targets: list[dict[str, Any]] = field(default_factory=list)
    actual: dict[str, Any] | None = None
    limitations: list[str] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=new_run)
    recommendation: dict[str, Any] | None = None
    projection: dict[str, Any] = field(default_factory=dict)
    created: str = field(default_factory=now_iso)
    updated: str | None = None
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
    def fit_number(self) -> int:
        """How many fit calls (or attaches) have written into this report; the latest one's number."""
        return int(self.run.get("fits") or 0)

    @property
    def first_prediction(self) -> dict[str, Any] | None:
        """The latest fit's first whole-run prediction (after a resume, not the earlier fit's)."""
        fit = self.fit_number
        mine = [p for p in self.predictions if p.get("predicted_total_s") is not None]
        if fit:
            mine = [p for p in mine if p.get("fit", fit) == fit]
        return mine[0] if mine else None

    @property
    def latest_prediction(self) -> dict[str, Any] | None:
        return self.predictions[-1] if self.predictions else None

    @property
    def ended(self) -> dict[str, Any] | None:
        """How the run ended (``reason``, ``detail``, ``at``...), or None while it runs."""
        return self.run.get("ended")

    # -- read like the JSON -------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        """``report["run"]``, ``report["targets"]``...: the same values as the JSON file's top-level keys
        (live objects, not copies). Unknown keys raise `KeyError` naming the keys there are."""
        data = self.to_dict()
        if key not in data:
            raise KeyError(f"{key!r} is not a report key; the keys are {', '.join(data)}")
        return data[key]

    def __contains__(self, key: object) -> bool:
        return key in self.to_dict()

    def keys(self):  # noqa: ANN201 - a dict's keys view
        return self.to_dict().keys()

    def get(self, key: str, default: Any = None) -> Any:
        return self.to_dict().get(key, default)

    # -- serialisation ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = {
            "schema": self.schema,
            "created": self.created,
            "updated": self.updated or self.created,
            "run": self.run,
            "current": self.current,
            "plan": self.plan,
            "measured": self.measured,
            "predictions": self.predictions,
            "targets": self.targets,
            "recommendation": self.recommendation,
            "projection": self.projection,
            "actual": self.actual,
            "limitations": self.limitations,
        }
        data.update({k: v for k, v in self.extra.items() if k not in data})
        return data

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=_json_default)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically (temp file + rename), so a crash never leaves half a report.

        Stamps ``updated``. A location that cannot be written (a directory, inside a file,
        read-only, full) raises `ReportError` naming the file and the reason.
        """
        self.updated = now_iso()
        return write_atomic(path, self.to_json(), what="report")

    def save_if_changed(self, path: str | os.PathLike[str], previous: int | None = None) -> int:
        """Save as compact JSON unless the content is the one ``previous`` fingerprints (this method's last
        return): a run's writes skip the indentation (~4x slower to encode) and an unchanged report. Returns the
        content's fingerprint (``updated`` left out: it is stamped when the report is written); raises
        `ReportError` as `save` does."""
        data = self.to_dict()
        del data["updated"]
        body = json.dumps(data, separators=(",", ":"), allow_nan=False, default=_json_default)
        fingerprint = hash(body)   # in-process only; the text itself is not kept (~100 KB)
        if fingerprint != previous:
            self.updated = now_iso()
            write_atomic(path, f'{{"updated":{json.dumps(self.updated)},{body[1:]}', what="report")
        return fingerprint

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Report":
        """A `Report` from parsed JSON of any readable schema (``/1`` is upgraded)."""
        if not isinstance(data, dict):
            raise ReportError("a report is a JSON object")
        schema = data.get("schema")
        if not isinstance(schema, str) or not schema.startswith("prenet-report/"):
            raise ReportError(f"not a PreNeT report (schema {schema!r}, expected {SCHEMA!r})")
        if schema not in READABLE_SCHEMAS:
            raise ReportError(f"report schema {schema!r} is not supported by this version (reads "
                              f"{', '.join(READABLE_SCHEMAS)}); upgrade prenet-callbacks to read it")
        _check_shapes(data)
        if schema == "prenet-report/1":
            from prenet_callbacks.report_upgrade import upgrade_v1

            data = upgrade_v1(data)
        return cls(
            current=data.get("current") or {},
            plan=data.get("plan") or {},
            measured=data.get("measured") or {},
            predictions=list(data.get("predictions") or []),
            targets=list(data.get("targets") or []),
            actual=data.get("actual"),
            limitations=list(data.get("limitations") or []),
            run={**new_run(), **(data.get("run") or {})},
            recommendation=data.get("recommendation"),
            projection=data.get("projection") or {},
            created=data.get("created", ""),
            updated=data.get("updated"),
            schema=SCHEMA,
            extra={k: v for k, v in data.items() if k not in _FIELDS},
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Report":
        """Read a report; a missing, non-JSON, truncated or foreign file raises `ReportError` naming it."""
        path = Path(path)
        if path.is_dir():
            raise ReportError(f"report file {str(path)!r} is a directory (pass the report.json a run wrote)")
        if not path.is_file():
            raise ReportError(f"report file {str(path)!r} does not exist (pass the report.json a run wrote)")
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ReportError(f"report file {str(path)!r} is not valid JSON (truncated or not a report): "
                              f"{error}") from None
        try:
            return cls.from_dict(data)
        except ReportError as error:
            raise ReportError(f"report file {str(path)!r}: {error}") from None


def _check_shapes(data: dict[str, Any]) -> None:
    for key, kind in (("current", dict), ("plan", dict), ("measured", dict), ("predictions", list),
                      ("targets", list), ("limitations", list), ("actual", dict), ("run", dict),
                      ("projection", dict)):
        value = data.get(key)
        if value is not None and not isinstance(value, kind):
            raise ReportError(f"field {key!r} must be a JSON {'object' if kind is dict else 'array'}, "
                              f"got {type(value).__name__}")
    if any(not isinstance(p, dict) for p in data.get("predictions") or []):
        raise ReportError("field 'predictions' must hold JSON objects")


def write_atomic(path: str | os.PathLike[str], text: str, *, what: str = "file") -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename: never half a file.

    Raises `ReportError` naming the file and the reason when the location cannot be written.
    """
    path = Path(path)
    if path.is_dir():
        raise ReportError(f"cannot write {what} {str(path)!r}: it is a directory (pass a file path)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".prenet-", suffix=path.suffix or ".tmp", dir=path.parent)
    except OSError as error:
        raise ReportError(f"cannot write {what} {str(path)!r}: {error.strerror or error}") from error
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        # mkstemp makes the file 0600; the report belongs with the run's other outputs: the umask decides
        os.chmod(tmp, 0o666 & ~_current_umask())
        os.replace(tmp, path)
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise ReportError(f"cannot write {what} {str(path)!r}: {error.strerror or error}") from error
        raise
    return path


def _current_umask() -> int:
    mask = os.umask(0o022)   # the only way to read it is to set it: put it straight back
    os.umask(mask)
    return mask


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
