"""What every adapter needs around its `PredictionSession`: guarded hooks, exact-restore method
wrapping, limitations noted once, and where the report goes.

The rule (docs/DESIGN.md) is that the callback never breaks the run: an error in PreNeT's own code
becomes one warning, every hook and wrapper is removed, and the session steps aside. The session's
`guarded` does that for its own methods; `guarded_hook` applies the same guard to an adapter's
hook, and `wrap_method` makes every patch of a framework object undoable exactly. `PhaseHooks` keeps
the hooks that time a step's phases on the steps whose phases are timed, and off between them.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Callable, TypeVar

from prenet_callbacks.session.machine import PredictionSession, guarded

F = TypeVar("F", bound=Callable[..., Any])
Restore = Callable[[], None]
REPORT_FILENAME = "prenet_report.json"


def guarded_hook(method: F) -> F:
    """An adapter's hook body, run under its session's guard (``self.session``).

    Nothing runs once the session has stepped aside; any error in the body makes it step aside
    (one warning naming ``Class.hook``, every hook removed) and the hook returns None, so the
    framework's run goes on as if the callback were not there.
    """

    def body(session: PredictionSession, owner: Any, *args: Any, **kwargs: Any) -> Any:
        return method(owner, *args, **kwargs)

    body.__name__ = method.__qualname__  # the session's warning names the hook: "PreNeTCallback.on_fit_start"
    run_guarded = guarded(body)

    @functools.wraps(method)
    def hook(self: Any, *args: Any, **kwargs: Any) -> Any:
        return run_guarded(self.session, self, *args, **kwargs)

    return hook  # type: ignore[return-value]


def wrap_method(obj: Any, name: str, make_wrapper: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Restore:
    """Replace ``obj.name`` by ``make_wrapper(original)`` on the instance; return the undo action.

    Undo puts back exactly what the instance had (its own attribute, such as a patch by the user
    or another library, or none so that the class method shows again). When someone wrapped the
    method again on top of ours, undo leaves theirs in place: ours is then inert (its events check
    that the adapter is still active).
    """
    had_own = name in obj.__dict__
    previous = obj.__dict__.get(name)
    wrapper = make_wrapper(getattr(obj, name))
    # bypass nn.Module.__setattr__: a plain instance attribute is all this needs
    obj.__dict__[name] = wrapper

    def restore() -> None:
        if obj.__dict__.get(name) is not wrapper:
            return
        if had_own:
            obj.__dict__[name] = previous
        else:
            del obj.__dict__[name]

    return restore


class PhaseHooks:
    """Hooks that mark a step's phases (forward hooks on the model, an optimizer step pre-hook), registered
    only while the session times the phases (`prenet_callbacks.measure.phase_sampling`): between samples a module
    without hooks runs PyTorch's fast call path and nothing of PreNeT runs inside the step.

    Args:
        register: registers the hooks and returns their handles (each with ``remove()``).
    """

    def __init__(self, register: Callable[[], list[Any]]) -> None:
        self.register = register
        self.handles: list[Any] = []
        self.on = False

    def follow(self, wanted: bool) -> None:
        """Register the hooks when ``wanted`` and they are off, remove them when not and they are on."""
        if wanted == self.on:
            return
        if wanted:
            self.handles = self.register()
        else:
            self.remove()
        self.on = wanted

    def remove(self) -> None:
        """Remove every hook (idempotent; the session's cleanup calls it too)."""
        self.on = False
        while self.handles:
            self.handles.pop().remove()


def note_once(session: PredictionSession, limitation: str) -> None:
    """Add a limitation to the report unless it is there already (also across a resume)."""
    if limitation not in session.report.limitations:
        session.report.limitations.append(limitation)


def default_report_path(directory: str | os.PathLike[str] | None) -> Path:
    """``<directory>/prenet_report.json``; in the working directory when there is none."""
    return Path(directory or Path.cwd()) / REPORT_FILENAME
