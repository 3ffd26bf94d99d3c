"""Failure containment: the callback never breaks a training run.

Every event method of `PredictionSession` is `guarded`, and an adapter that calls one of the session's parts
outside a guarded hook runs it through `Containment.call`: an exception inside becomes one `PreNeTWarning`,
every hook is removed (`Containment.fail`) and the session goes quiet for the rest of the run. A warning that a
``-W error`` filter turns into an exception is swallowed too. The time of each outermost guarded call is
PreNeT's own (`own_time.OwnTime`).
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Protocol, TypeVar

from prenet_callbacks.session.own_time import OwnTime
from prenet_callbacks.session.quiet_steps import QuietSteps

F = TypeVar("F", bound=Callable[..., Any])


class PreNeTWarning(UserWarning):
    """Something went wrong inside PreNeT; training goes on without it."""


class Guardable(Protocol):
    """What `guarded` needs from the object whose methods it wraps: the guard it runs them under."""

    guard: Containment


def guarded(method: F) -> F:
    """Run a session method under the session's guard (`Containment.call`): on any error warn once, clean up
    and disable the session."""

    @functools.wraps(method)
    def wrapper(self: Guardable, *args: Any, **kwargs: Any) -> Any:
        return self.guard.call(method, self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class Containment:
    """The session's failure state and its undo actions (hooks removed, wrapped methods restored).

    Args:
        release: stops what must stop before the undo actions run (the module profiler).
        own_time: counts the time of each outermost guarded call as PreNeT's own (None: not counted).
    """

    def __init__(self, release: Callable[[], None], own_time: OwnTime | None = None) -> None:
        self.release = release
        self.own_time = own_time
        self.disabled = False
        self.failure: str | None = None
        self.cleanups: list[Callable[[], None]] = []
        self.quiet: QuietSteps | None = None   # an integration's kept quiet steps: replayed before any event

    def call(self, event: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``event(*args, **kwargs)`` guarded: nothing once the session stepped aside; an error in it makes the
        session step aside (the warning names the event) and the call returns None."""
        if self.disabled:
            return None
        quiet = self.quiet
        if quiet is not None:
            if quiet.ends:
                quiet.replay()   # the steps before this event, in order, each at its own time
            quiet.left = 0       # an event ends a quiet stretch: the next step takes the full path
        own = self.own_time
        start = own.enter() if own is not None else None
        try:
            return event(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - by design: never let monitoring break training
            self.fail(error, where=getattr(event, "__name__", ""))
            return None
        finally:
            if own is not None:
                own.leave(start)

    def fail(self, error: BaseException, where: str = "") -> None:
        """Step aside: one warning, every hook removed, nothing more from this session."""
        if self.disabled:
            return
        self.disabled = True
        self.failure = f"{type(error).__name__}: {error}"
        self.run_cleanups()
        try:
            warnings.warn(
                f"PreNeT stepped aside after an internal error{f' in {where}' if where else ''} ({self.failure}). "
                "Training continues unchanged, without PreNeT's predictions.",
                PreNeTWarning,
                stacklevel=4,
            )
        except Exception:  # noqa: BLE001 - warnings turned into errors (-W error) must not stop training
            pass

    def run_cleanups(self) -> None:
        """Release, then undo every registered action, last first; an undo that fails does not stop the others."""
        if self.quiet is not None:   # no step keeps its time for a session that has stepped aside or closed
            self.quiet.enabled = False
            self.quiet.stop()
        self.release()
        while self.cleanups:
            cleanup = self.cleanups.pop()
            try:
                cleanup()
            except Exception:  # noqa: BLE001
                pass
