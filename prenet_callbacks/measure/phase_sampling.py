"""After the first prediction, a batch's phases are timed on one optimizer step in `EVERY`, not on every one.

Once the profiling window is over, the phase marks of a batch (its start, where its backward begins) feed
two estimators: the data wait and the forward per batch (`RunMeasurements.data_per_batch`,
``forward_per_batch``), each the mean of its latest 64 samples, which the ETA reads for its data share and
for a validation run's estimate until one is measured. The backward and optimizer split is the window's
alone. Marking every batch costs the integration's hooks (a Tracker's forward pre-hook, forward hook and
optimizer pre-hook, a Lightning callback's four phase hooks), their clock reads and the session's
bookkeeping: ~50-100 us a batch after a real forward and backward (the CPU's caches are cold for PreNeT's
code then), about 1% of a 9-ms step. A mean of recent samples needs fresh samples, not one per batch: once
the first prediction is made and both estimators hold `MIN_SAMPLES`, one step in `EVERY` is marked, or fewer on
short steps: at most one per `PERIOD_S` of training (a marked step costs about 0.2 ms more than a quiet one, so
sampling stays within 0.1% of the run; on an 11-ms `Tracker` step one in 19, on Lightning's 28-ms one still one
in 8), and never fewer than one in `MAX_EVERY`. What the ETA rests on, the interval between two batch ends, is
still timed on every batch, as are validation runs, saves and epoch boundaries. (A CPU host's page-fault
count has its own budget: `heap_faults.HeapWatch.read_due`.)

The session keeps the decision in ``PredictionSession.phase_marks`` (for the step about to run); integrations
read it before calling the phase events, and a `Tracker` takes its model and optimizer hooks off between
marked steps (a module with no hooks runs PyTorch's fast call path).
"""
from __future__ import annotations

import math

# One optimizer step in this many is marked once sampling starts (the estimators keep 64 samples)...
EVERY = 8
# ... or in more, so that marked steps come at most once per this many seconds of training: a marked step costs
# about 0.2 ms more than a quiet one on the benchmarks' 11-12-ms encoder loop (PreNeT's own time 35.6 us a batch at
# one step in 8 against 23.0 at one in 17-19, as this rule sets it there; `benchmarks/phase_period_ab.py`,
# docs/overhead.md), 0.1% of 0.2 s ...
PERIOD_S = 0.2
# ... and at least one in this many steps, so the 64 samples span at most 4,096 steps.
MAX_EVERY = 64
# Samples each estimator holds before sampling starts (a GPU run times 16 warm forwards on the device).
MIN_SAMPLES = 16


class PhaseSampler:
    """Which optimizer steps have their phases marked: all of them, then one in `EVERY` (or fewer, on short steps).

    Args:
        every: the fewest steps between two marked ones once sampling starts (1 with ``period_s=None``: every
            step, always).
        period_s: the least training time between two marked steps, from the step time when sampling starts
            (capped at one step in `MAX_EVERY`); None: ``every`` alone.
    """

    def __init__(self, every: int = EVERY, period_s: float | None = PERIOD_S) -> None:
        if every < 1:
            raise ValueError(f"PhaseSampler(every={every}): must be at least 1")
        self.every = every
        self.period_s = period_s
        self.sampling = False   # one step in `every` from now on (until the next fit)

    def start_when(self, ready: bool, step_s: float | None = None) -> None:
        """Start sampling once ``ready`` (the first prediction made and the estimators fed); it never stops.
        ``step_s``: the optimizer step's time then, which sets how many steps `period_s` spans."""
        if self.sampling or not ready:
            return
        self.sampling = True
        if self.period_s is not None and step_s is not None and step_s > 0:
            self.every = max(self.every, min(MAX_EVERY, math.ceil(self.period_s / step_s)))

    def marks(self, step: int) -> bool:
        """Whether the optimizer step with index ``step`` (that many steps done before it) is marked."""
        return not self.sampling or step % self.every == 0


def estimators_fed(data_samples: int, forward_samples: int) -> bool:
    """Whether the data wait and forward estimators hold enough samples to go on with one step in `EVERY` (or fewer)."""
    return data_samples >= MIN_SAMPLES and forward_samples >= MIN_SAMPLES
