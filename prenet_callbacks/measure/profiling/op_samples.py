"""Canonical op rows from a GPU profile, for self-calibration of the predictor on this GPU.

Each row is one distinct op (class, name, dtype, math mode, FLOPs, bytes, dims) with its device
seconds per call, merged over the layers and phases that ran it. Only a CUPTI-timed profile gives
rows: host-timed ops (CPU, or launches on a GPU) are not kernel times.
"""
from __future__ import annotations

from typing import Any, Iterable

from prenet_callbacks.measure.profiling.records import LayerRecord

MAX_ROWS = 2000


def op_sample_rows(layers: Iterable[LayerRecord], max_rows: int = MAX_ROWS) -> list[dict[str, Any]]:
    """Rows ``{op_class, name, dtype, tf32, flops, bytes_read, bytes_written, dims, seconds, calls}``.

    ``seconds`` is device seconds per call, ``calls`` the calls per optimizer step; the costliest
    ops (by time per step) come first and at most `max_rows` are kept. Merged entries (a layer's
    tail of small ops) and compiled blocks have no single shape and give no row.
    """
    acc: dict[tuple, list[Any]] = {}
    for layer in layers:
        for e in layer.ops:
            if e.name.startswith("(merged") or e.count_per_step <= 0:
                continue
            s = e.spec
            key = (e.name, s.key)
            slot = acc.get(key)
            if slot is None:
                acc[key] = [s, e.name, e.count_per_step, e.seconds_per_step]
            else:
                slot[2] += e.count_per_step
                slot[3] += e.seconds_per_step
    timed = [slot for slot in acc.values() if slot[3] > 0]   # no kernel found: not a sample
    ranked = sorted(timed, key=lambda slot: slot[3], reverse=True)[:max_rows]
    return [{"op_class": s.op_class, "name": name, "dtype": s.dtype, "tf32": s.tf32,
             "flops": s.flops, "bytes_read": s.bytes_read, "bytes_written": s.bytes_written,
             "dims": dict(s.dims), "seconds": seconds / calls, "calls": calls}
            for s, name, calls, seconds in ranked]
