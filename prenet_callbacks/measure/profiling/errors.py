"""The profiler's one exception type."""
from __future__ import annotations


class ProfilerError(RuntimeError):
    """Something the module profiler cannot do; the message says what and why."""
