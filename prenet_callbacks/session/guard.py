"""Failure containment: the callback never breaks a training run.

Every event method of `PredictionSession` is `guarded`: an exception inside it becomes one
`PreNeTWarning`, every hook is removed (the session's ``fail``) and the session goes quiet for the
rest of the run. A warning that a ``-W error`` filter turns into an exception is swallowed too.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Protocol, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class PreNeTWarning(UserWarning):
    """Something went wrong inside PreNeT; training goes on without it."""


class Guardable(Protocol):
    """What `guarded` needs from the object whose methods it wraps."""

    disabled: bool

    def fail(self, error: BaseException, where: str = "") -> None: ...


def guarded(method: F) -> F:
    """Run a session method; on any error warn once, clean up and disable the session."""

    @functools.wraps(method)
    def wrapper(self: Guardable, *args: Any, **kwargs: Any) -> Any:
        if self.disabled:
            return None
        own = getattr(self, "own_time", None)   # PreNeT's own time in the run (`own_time`)
        start = own.enter() if own is not None else None
        try:
            return method(self, *args, **kwargs)
        except Exception as error:  # noqa: BLE001 - by design: never let monitoring break training
            self.fail(error, where=method.__name__)
            return None
        finally:
            if own is not None:
                own.leave(start)

    return wrapper  # type: ignore[return-value]


def guarded_on_part(part: str, method: Callable[..., None], name: str | None = None) -> Callable[..., None]:
    """A guarded event method that the object's ``part`` handles: ``method`` (a function of the part's
    class) called on it with the same arguments; the event keeps the method's docstring."""
    def event(owner: Guardable, *args: Any, **kwargs: Any) -> None:
        getattr(getattr(owner, part), method.__name__)(*args, **kwargs)

    event.__name__ = event.__qualname__ = name or method.__name__
    event.__doc__ = method.__doc__
    return guarded(event)


class Containment:
    """The session's failure state and its undo actions (hooks removed, wrapped methods restored).

    Args:
        release: stops what must stop before the undo actions run (the module profiler).
    """

    def __init__(self, release: Callable[[], None]) -> None:
        self.release = release
        self.disabled = False
        self.failure: str | None = None
        self.cleanups: list[Callable[[], None]] = []

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
        self.release()
        while self.cleanups:
            cleanup = self.cleanups.pop()
            try:
                cleanup()
            except Exception:  # noqa: BLE001
                pass
