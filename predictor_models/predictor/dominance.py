"""A GPU at least as strong as a measured GPU of its generation is never predicted slower: the device envelope.

The class models read the device through learned features, so between the GPUs they were trained on they can rank
two GPUs of one generation against their figures (an H200 slower than an H100 on most bf16 GEMMs). Physics says
otherwise: a GPU with at least another's figures, of the same architecture generation, can run the other's kernels at
least as fast. The figures compared are every one the models read: the peak of the op's math mode (the vector FP32
rate for pointwise and norm ops, as the bound reads it), DRAM bandwidth, SMs, L2 and board power; a figure the
catalog lacks compares with nothing. Two sets, taken over the whole catalog and the devices asked for, whichever of
them a prediction names:

- the *down-set* of a device: itself and the GPUs the training data measures that it dominates in the op's mode. Its
  envelope time is the smallest over its down-set. On a half-precision or TF32 op unmeasured GPUs stay out of every
  down-set: the models extrapolate to them, and a measured GPU would take their errors. On an FP32 op (since
  2026-12-08, `OPEN_DOWN_MODES`) every GPU it dominates is in it, measured or not, so the order below holds between
  any two GPUs of a generation. The FP32 math mode is also every pointwise op's and norm's, whatever its dtype (the
  vector units' FP32 rate): there the open down-sets order the GPUs already and the up-sets below raise nothing.
  Dominance is a partial order, so for B measured (any B on an FP32 op)

      A dominates B  =>  down(A) contains down(B)  =>  env(A) = min over down(A) <= min over down(B) <= env(B);

- the *up-set* of a device: itself and every catalog GPU of its generation that dominates it, measured or not. On a
  half-precision op its time is the largest time over its up-set (each member at its envelope time, raised to its
  compute twins below), so A dominating B puts A in up(B), up(A) is contained in up(B), and time(A) <= time(B):
  the order holds between any two GPUs of a generation on half-precision ops, whichever devices a prediction names
  (`stronger_unmeasured` adds the catalog GPUs above the ones asked for; since 2026-12-07, before which only measured
  GPUs were in the up-sets and two unmeasured GPUs, an H200 and an H100 NVL, could be priced out of order). A
  measured device is never raised: every GPU above it holds it in its down-set, and its twin raise stops at it, so
  none has a larger time.
  fp32 ops keep the envelope time alone: their public per-op times carry each harness machine's host lag (NeuSight's
  events around one call), so raising a GPU to a stronger one's fp32 times would raise it to another machine's lag
  (measured: held-out P4 norms 7.1% -> 19.4% MAPE, `benchmarks/results/issue38_upset_trial/`).

- the *compute twins* of a device the data does not measure: the measured GPUs of its generation with its SM count and
  its peak in every math mode (the H200 and GH200 against the H100 SXM5; an A100 40GB or an A800 against the measured
  A100s). They run the same kernels on the same tensor and vector units at the same clocks, so more DRAM bandwidth buys
  only the memory-bound part of a kernel, at most in proportion: on a half-precision or TF32 op the device takes at
  least each twin's time scaled by their roofline bounds, ``max(FLOPs / peak, bytes / bandwidth)`` (equal on a
  compute-bound op), never above the time of a measured GPU it dominates (so the down-set order stands). The models read
  bandwidth, L2 and power through learned features and had priced the H200's and GH200's compute-bound TF32 GEMMs 2-24%
  faster than the H100's. fp32 (non-TF32) ops are left alone, for the harness lag of their training times, as above.
  The twin raise comes before the up-sets' maximum, so a device above a raised one is raised with it.

`tests/test_predictor_dominance.py` checks all three on random ops and catalog subsets. None breaks the other
guarantees: no time falls below its own device's roofline (a minimum over weaker devices, a maximum raises), and a
minimum or maximum of times that never fall as work grows never falls either (a twin's time scaled by the ratio of two
bounds does not either: both bounds grow together).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from .devices import MODES, before_tf32, device_columns

_TOLERANCE = 1e-9   # figures equal to this relative precision count as equal


def generation(device) -> str:
    """The architecture generation from the catalog's ``architecture`` text: "Ampere (GA102)" -> "Ampere",
    "Hopper (GH100) + Grace CPU" -> "Hopper", "TPU v5e (1 TensorCore)" -> "TPU v5e"."""
    text = str(getattr(device, "architecture", "") or "")
    return text.split(" (")[0].split(" + ")[0].strip().lower()


_OTHER_FIGURES = ("memory_bandwidth_gbs", "sm_count", "l2_cache_mb", "tdp_w")   # what the models read
# math modes whose down-sets hold every catalog GPU a device dominates, measured or not: FP32 (2026-12-08). There a
# measured GPU's training times carry its harness's host lag (NeuSight's A100 FP32 GEMMs: 58-68 us where the floor is
# 30-35 us), so an unmeasured GPU the models extrapolate to could be priced faster than a stronger measured one (an
# A100 2.9x slower than an RTX A4000 on a 16x256x256 FP32 GEMM); taking the least over every weaker GPU orders any two
# GPUs of a generation. On the development sets it moved no figure by more than 0.2 points but one (the worst
# NeuSight pair, 41.7% -> 43.7%).
OPEN_DOWN_MODES = (MODES.index("fp32"),)
_FP32, _TF32 = MODES.index("fp32"), MODES.index("tf32")


def _figures(devices: Sequence) -> np.ndarray:
    """Per device: its peak in every math mode (`MODES`) as the predictor reads it, then the catalog's DRAM
    bandwidth, SM count, L2 and board power (what the models read besides the peaks), NaN where the catalog has
    no figure."""
    cols = device_columns(devices)
    other = np.array([[float(getattr(d, k, None) or np.nan) for k in _OTHER_FIGURES] for d in devices],
                     dtype=np.float64).reshape(len(devices), len(_OTHER_FIGURES))
    return np.column_stack([cols.peaks, other])


def _compared(figures: np.ndarray, mode: int) -> np.ndarray:
    """The figures an op of math mode `mode` runs on: that mode's peak and every other figure."""
    return figures[..., [mode] + list(range(len(MODES), len(MODES) + len(_OTHER_FIGURES)))]


def dominates(a, b, mode: str = "fp32") -> bool:
    """Whether `a` has at least `b`'s figures for an op of math ``mode`` (`_compared`), of the same generation."""
    if generation(a) != generation(b) or not generation(a):
        return False
    fa, fb = _compared(_figures([a, b]), MODES.index(mode))
    return bool(np.all(fa >= fb * (1 - _TOLERANCE)))


def device_key(device) -> tuple:
    """What tells a device apart for the predictor: its name, generation and figures (cached per catalog entry)."""
    try:
        return _cached_key(device)
    except TypeError:       # an unhashable stand-in for a catalog entry: read it each time
        return _cached_key.__wrapped__(device)


@lru_cache(maxsize=1024)
def _cached_key(device) -> tuple:
    return (device.name, generation(device), tuple(_figures([device])[0].tolist()))


def envelope_sets(devices: Sequence, catalog: Sequence, modes: Sequence[int], measured: Sequence[str] = (),
                  unmeasured_above: bool = False, open_modes: Sequence[int] = ()
                  ) -> tuple[list, dict[int, tuple[list[np.ndarray], list[np.ndarray]]]]:
    """The devices to predict and, per mode (indices into `MODES`), the envelope's sets:

    - ``ups``: per device asked for, indices into ``downs`` of itself (first) and of the devices of its generation
      that dominate it in that mode: the ``measured`` catalog devices and, with ``unmeasured_above``, the other
      devices asked for (`Predictor.predict_matrix` asks for every catalog GPU above each of its devices,
      `stronger_unmeasured`, so that the up-sets span the catalog whichever devices a prediction names);
    - ``downs``: per device of those, indices into the returned device list of its down-set: itself first, then the
      devices of ``measured`` (the GPUs the training data holds) it dominates; in a mode of ``open_modes``, every
      catalog GPU it dominates, measured or not (`OPEN_DOWN_MODES`).

    On a half-precision op a device's time is the largest over its up-set of each member's smallest time over that
    member's down-set; on an fp32 op, its own smallest (`Predictor.predict_matrix`). The devices to predict are
    ``devices`` first, then the catalog devices the sets add.
    """
    devices = list(devices)
    asked = {d.name for d in devices}
    trusted = frozenset(measured)
    keys = tuple(device_key(d) for d in devices)
    modes = tuple(sorted(set(modes)))
    opened = tuple(m for m in modes if m in open_modes)
    extra = [d for d in catalog if d.name not in asked and d.name in trusted]
    # before Ampere a TF32 op is an FP32 one: there its mode's down-sets are as open as FP32's
    older = tuple(keys[i] for i, d in enumerate(devices) if before_tf32(d))
    older_opened = (_TF32,) if older and _TF32 in modes and _FP32 in open_modes else ()
    if opened or older_opened:   # in an open mode, the unmeasured catalog devices below a device asked for too
        others = [d for d in catalog if d.name not in asked and d.name not in trusted]
        other_keys = tuple(device_key(d) for d in others)
        found = set(_weaker(keys, other_keys, opened)) | set(_weaker(older, other_keys, older_opened))
        extra += [others[k] for k in sorted(found)]
    order, sets = _envelope_sets(keys, tuple(device_key(d) for d in extra), modes,
                                 tuple(d.name in trusted for d in devices), unmeasured_above,
                                 tuple(d.name in trusted for d in extra), opened,
                                 tuple(before_tf32(d) for d in devices + extra) if older_opened else ())
    pool = devices + extra
    as_arrays = lambda lists: [np.asarray(x, dtype=np.int64) for x in lists]  # noqa: E731
    return [pool[i] for i in order], {mode: (as_arrays(ups), as_arrays(downs)) for mode, (ups, downs) in sets.items()}


def _key_arrays(keys: Sequence[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """Generations and figures (`_figures` rows) of device keys (`device_key`)."""
    gens = np.array([k[1] for k in keys], dtype=object)
    figs = np.array([k[2] for k in keys], dtype=np.float64).reshape(len(keys), len(MODES) + len(_OTHER_FIGURES))
    return gens, figs


def _dominance(gens_a: np.ndarray, figs_a: np.ndarray, gens_b: np.ndarray, figs_b: np.ndarray, mode: int) -> np.ndarray:
    """``[i, j]``: device i of the first set dominates device j of the second in ``mode`` (same, named generation, at
    least every figure `_compared` reads; a figure missing on either side, NaN, compares False)."""
    same = (gens_a[:, None] == gens_b[None, :]) & (gens_a != "")[:, None]
    fa, fb = _compared(figs_a, mode), _compared(figs_b, mode)
    return same & np.all(fa[:, None, :] >= fb[None, :, :] * (1 - _TOLERANCE), axis=2)


@lru_cache(maxsize=64)
def _weaker(asked: tuple, pool: tuple, modes: tuple) -> tuple[int, ...]:
    """Indices into ``pool`` of the devices some device of ``asked`` dominates in one of ``modes``."""
    if not asked or not pool:
        return ()
    (gens_a, figs_a), (gens_p, figs_p) = _key_arrays(asked), _key_arrays(pool)
    hit = np.zeros(len(pool), dtype=bool)
    for mode in modes:
        hit |= _dominance(gens_a, figs_a, gens_p, figs_p, mode).any(axis=0)
    return tuple(np.flatnonzero(hit).tolist())


@lru_cache(maxsize=64)
def _envelope_sets(asked: tuple, extra: tuple, modes: tuple, asked_measured: tuple,
                   unmeasured_above: bool, extra_measured: tuple, open_modes: tuple = (),
                   older: tuple = ()) -> tuple[list[int], dict[int, tuple[list[list[int]], list[list[int]]]]]:
    keys = list(asked) + list(extra)
    measured = np.array(list(asked_measured) + list(extra_measured), dtype=bool)
    gens, figs = _key_arrays(keys)
    order = list(range(len(asked)))        # the devices asked for keep their places
    index = {i: i for i in order}

    def placed(b: int) -> int:
        if b not in index:
            index[b] = len(order)
            order.append(b)
        return index[b]

    def itself_then(x: int, related: np.ndarray) -> list[int]:
        return [x] + [y for y in np.flatnonzero(related).tolist() if y != x]

    sets: dict[int, tuple[list[list[int]], list[list[int]]]] = {}
    for mode in modes:
        below = _dominance(gens, figs, gens, figs, mode)     # below[a, b]: a dominates b
        env: dict[int, int] = {}           # device -> its place in ``downs``
        ups, downs = [], []
        for a in range(len(asked)):
            up = []
            above = below[:, a] if unmeasured_above else below[:, a] & measured
            for u in itself_then(a, above):                                 # a and the devices above it
                if u not in env:
                    env[u] = len(downs)
                    opened = mode in open_modes or (mode == _TF32 and bool(older) and older[u])
                    lower = below[u] if opened else below[u] & measured
                    downs.append([placed(b) for b in itself_then(u, lower)])   # u and those below
                up.append(env[u])
            ups.append(up)
        sets[mode] = (ups, downs)
    return order, sets


def stronger_unmeasured(devices: Sequence, catalog: Sequence, measured: Sequence[str] = ()) -> list:
    """The catalog GPUs the data does not measure, not among ``devices``, that dominate one of ``devices`` in some math
    mode (same generation, at least its figures, `_compared`): what a half-precision op's up-sets must price beside
    them so that no GPU is faster than a stronger one, measured or not, whichever devices a prediction names."""
    names = {d.name for d in devices}
    trusted = frozenset(measured)
    pool = [d for d in catalog if d.name not in names and d.name not in trusted]
    found = _stronger(tuple(device_key(d) for d in devices), tuple(device_key(d) for d in pool))
    return [pool[k] for k in found]


@lru_cache(maxsize=64)
def _stronger(asked: tuple, pool: tuple) -> tuple[int, ...]:
    if not asked or not pool:
        return ()
    (gens_a, figs_a), (gens_p, figs_p) = _key_arrays(asked), _key_arrays(pool)
    above = np.zeros((len(pool), len(asked)), dtype=bool)
    for mode in range(len(MODES)):
        above |= _dominance(gens_p, figs_p, gens_a, figs_a, mode)
    return tuple(np.flatnonzero(above.any(axis=1)).tolist())


def twin_sets(devices: Sequence, catalog: Sequence, measured: Sequence[str] = ()) -> dict[int, list]:
    """Per index into ``devices`` of a device the data does not measure: its compute twins, the ``measured`` catalog
    GPUs of its generation with its SM count and its peak in every math mode (equal to `_TOLERANCE`)."""
    trusted = frozenset(measured)
    pool = [d for d in catalog if d.name in trusted]
    found = _twin_sets(tuple(device_key(d) for d in devices), tuple(d.name in trusted for d in devices),
                       tuple(device_key(d) for d in pool))
    return {i: [pool[k] for k in ks] for i, ks in found.items()}


_SMS = len(MODES) + _OTHER_FIGURES.index("sm_count")   # where a device key's figures hold its SM count


@lru_cache(maxsize=64)
def _twin_sets(asked: tuple, asked_measured: tuple, pool: tuple) -> dict[int, tuple[int, ...]]:
    out = {}
    for i, (name, gen, figs) in enumerate(asked):
        mine = np.array(figs[:_SMS + 1])        # the peak in every mode, bandwidth, SMs
        if asked_measured[i] or not gen or np.isnan(mine[_SMS]):
            continue
        twins = tuple(k for k, (other, other_gen, other_figs) in enumerate(pool)
                      if other != name and other_gen == gen and other_figs[_SMS] == mine[_SMS]
                      and np.all(np.abs(mine[:len(MODES)] - np.array(other_figs[:len(MODES)]))
                                 <= _TOLERANCE * np.array(other_figs[:len(MODES)])))
        if twins:
            out[i] = twins
    return out
