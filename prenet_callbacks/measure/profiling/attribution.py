"""Which module does the op running now belong to?

Forward: the innermost module whose forward is running (a per-thread stack fed by forward
pre/post hooks). Backward: the module that was innermost when the autograd node now executing
was *created*. Autograd gives every node a per-thread, increasing sequence number, so the hooks
log "from sequence number s on, nodes belong to module i" change points, and a backward op looks
up the current node's number. This needs no tensor hooks (which break with in-place ops after a
module) and no graph walks.

Checkpoint recomputation runs forward hooks inside backward: ops then go to the stack top, and
the nodes it creates are logged on the recomputing thread, for the nested (reentrant) backward.
"""
from __future__ import annotations

import threading
from bisect import bisect_right
from typing import Callable

import torch

ROOT = 0

_seq_nr: Callable[[], int] | None = getattr(torch.autograd, "_get_sequence_nr", None)
_current_node = getattr(torch._C, "_current_autograd_node", None)
_graph_task_id = torch._C._current_graph_task_id


def in_backward() -> bool:
    """True while autograd's engine runs a backward pass on this thread."""
    return _graph_task_id() != -1


class _ChangePoints:
    """Step function sequence number -> owner index, appended in increasing order."""

    __slots__ = ("seqs", "owners")

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.owners: list[int] = []

    def add(self, seq: int, owner: int) -> None:
        self.seqs.append(seq)
        self.owners.append(owner)

    def owner_of(self, seq: int) -> int:
        i = bisect_right(self.seqs, seq) - 1
        return self.owners[i] if i >= 0 else ROOT


class Attribution:
    """Module stack and node ownership; all methods are cheap enough to run per op or call."""

    # whether backward ops can be attributed per module on this torch version
    supported = _seq_nr is not None and _current_node is not None

    def __init__(self, param_owner: dict[int, int]) -> None:
        self._tls = threading.local()
        self._param_owner = param_owner      # id(parameter) -> owning layer index
        self._fwd_points: _ChangePoints | None = None
        self._outer_task: int | None = None

    def _local(self) -> tuple[list[int], _ChangePoints]:
        tls = self._tls
        try:
            return tls.stack, tls.points
        except AttributeError:
            tls.stack, tls.points = [], _ChangePoints()
            return tls.stack, tls.points

    def stack(self) -> list[int]:
        return self._local()[0]

    def enter(self, idx: int, in_backward: bool) -> None:
        stack, points = self._local()
        if not in_backward:
            self._fwd_points = points
            self._outer_task = None   # a new forward: the next backward is a new graph task
        stack.append(idx)
        if _seq_nr is not None:
            points.add(_seq_nr(), idx)

    def exit(self, idx: int) -> None:
        stack, points = self._local()
        if idx in stack:
            # pop through entries an exception left behind (e.g. early-stopped recomputation)
            while stack and stack.pop() != idx:
                pass
        if _seq_nr is not None:
            points.add(_seq_nr(), stack[-1] if stack else ROOT)

    def backward_owner(self) -> int:
        """Owner of the autograd node executing now (ROOT when unknown)."""
        if _current_node is None:
            return ROOT
        node = _current_node()
        if node is None:
            return ROOT
        if type(node).__name__ == "AccumulateGrad":
            var = getattr(node, "variable", None)
            return self._param_owner.get(id(var), ROOT)
        task = _graph_task_id()
        if self._outer_task is None:
            self._outer_task = task
        if task != self._outer_task:
            # nested backward (reentrant checkpoint) over nodes recomputed on this thread
            points = self._local()[1]
        else:
            points = self._fwd_points or self._local()[1]
        return points.owner_of(node._sequence_nr())

    def reset(self) -> None:
        self._tls = threading.local()
        self._fwd_points = None
        self._outer_task = None
